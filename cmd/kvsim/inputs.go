package main

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// lookedAt renders a failed open or stat of path as "ABS: cause": where it
// looked, absolute, whatever directory the user meant it relative to.
func lookedAt(path string, err error) string {
	abs, aerr := filepath.Abs(path)
	if aerr != nil {
		abs = path
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return abs + ": " + err.Error()
}
