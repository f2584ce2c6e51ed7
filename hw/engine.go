package hw

import "errors"

// ErrUnsupported is returned by features this system lacks.
var ErrUnsupported = errors.New("not supported on this system")

// Op is one positioned read or write. Buf must come from an Arena (or other
// memory the garbage collector does not move) and, for O_DIRECT files, be
// aligned as the file requires.
type Op struct {
	Write bool
	FD    int
	Off   int64
	Buf   []byte
	N     int   // bytes transferred, set by Do
	Err   error // set by Do
}

// Engine runs batches of file I/O: io_uring where the kernel allows it,
// pread/pwrite otherwise.
type Engine interface {
	// Name says which path runs: "io_uring" or "pread/pwrite".
	Name() string
	// Do submits every op (up to the engine's queue depth at a time) and
	// returns once all completed; per-op results are in Op.N / Op.Err, and
	// the first error is also returned.
	Do(ops []Op) error
	Close() error
}
