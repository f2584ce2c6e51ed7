// Package atomicfile is kvsim's one way to write a file whole: through a
// temporary file beside it, renamed into place. It also owns the
// temporary files' names, so that a folder's stale temporaries (left by a
// killed writer) are told by the same definition that made them.
package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A Temp is a kind of temporary file: os.CreateTemp's pattern
// Prefix+"*"+Suffix, where CreateTemp puts decimal digits.
type Temp struct{ Prefix, Suffix string }

// For is the temporary of a file named name, written whole before its
// rename: ".NAME.DIGITS".
func For(name string) Temp { return Temp{"." + name + ".", ""} }

// Create makes a new temporary of this kind in dir.
func (t Temp) Create(dir string) (*os.File, error) {
	return os.CreateTemp(dir, t.Prefix+"*"+t.Suffix)
}

// Match says whether name (a base name) is one Create could have made.
func (t Temp) Match(name string) bool {
	rest, ok := strings.CutPrefix(name, t.Prefix)
	if !ok {
		return false
	}
	digits, ok := strings.CutSuffix(rest, t.Suffix)
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// RemoveStale removes, from dir, the regular files any of kinds matches.
// Only a caller that knows no other writer is at work there (it holds the
// folder's lock) may call it.
func RemoveStale(dir string, kinds ...Temp) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		for _, k := range kinds {
			if k.Match(e.Name()) {
				os.Remove(filepath.Join(dir, e.Name()))
				break
			}
		}
	}
}

// Create makes the temporary that will become path (For its base name).
// Its error names path, not the temporary pattern.
func Create(path string) (*os.File, error) {
	f, err := For(filepath.Base(path)).Create(filepath.Dir(path))
	if err != nil {
		return nil, Named("create", path, err)
	}
	return f, nil
}

// finish makes f readable by all (CreateTemp makes 0600; kvsim's files
// are for sharing), durable, and closes it; on failure f is removed.
func finish(f *os.File) error {
	err := f.Chmod(0o644)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Stage writes what write writes to a temporary beside path, whole and
// fsync'ed, and returns its name for a later Rename; on failure nothing
// is left. Errors are write's own or name the temporary's file system
// operation (Named makes them name path).
func Stage(path string, write func(io.Writer) error) (string, error) {
	f, err := Create(path)
	if err != nil {
		return "", err
	}
	if err := write(f); err != nil {
		Discard(f)
		return "", err
	}
	if err := finish(f); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// Commit puts f, a temporary made by Create, in place at path; on
// failure f is removed. Errors name path.
func Commit(f *os.File, path string) error {
	if err := finish(f); err != nil {
		return at(path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return at(path, err)
	}
	return nil
}

// Discard closes and removes an unfinished temporary.
func Discard(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}

// Write replaces path with data whole: a failure never leaves a
// half-written file, nor any temporary. Errors name path.
func Write(path string, data []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		Discard(f)
		return at(path, err)
	}
	return Commit(f, path)
}

// Named makes a file error name path, the file the user knows, not a
// temporary one: a *fs.PathError of op with the error's cause.
func Named(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: Cause(err)}
}

// at is Named keeping the failed operation (a rename's is "rename"); an
// error of no file is left as it is.
func at(path string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	case errors.As(err, &le):
		return &fs.PathError{Op: "rename", Path: path, Err: le.Err}
	}
	return err
}

// Cause strips a file error of its operation and path, for a message
// that names the file itself (or another: the file the user knows).
func Cause(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}
