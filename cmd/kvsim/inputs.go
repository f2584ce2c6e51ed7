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

// maxCalibrateCount bounds calibrate --count: the median of a link's
// moves settles within thousands, and 15 link pairs x 4 x count slot ids
// must stay within int32 (--count 1e8 held 17 GB within seconds).
const maxCalibrateCount = 1 << 16
