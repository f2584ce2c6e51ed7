package ioengine

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned by features this system lacks.
var ErrUnsupported = errors.New("not supported on this system")

// DefaultQueueDepth is the ring depth used when none is given; Mooncake's
// bucket backend also keeps 32 I/Os in flight.
const DefaultQueueDepth = 32

// MaxQueueDepth bounds NewEngine's queue depth (the kernel allows 32768
// entries, but beyond a few hundred nothing gets faster).
const MaxQueueDepth = 4096

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
//
// Both engines retry short transfers for the remainder; a read that meets
// end of file fails with an error wrapping io.ErrUnexpectedEOF and Op.N
// says how many bytes did arrive.
type Engine interface {
	// Name says which path runs: "io_uring" or "pread/pwrite".
	Name() string
	// Do submits every op (up to the engine's queue depth at a time) and
	// returns once all completed; per-op results are in Op.N / Op.Err, and
	// the first error is also returned.
	Do(ops []Op) error
	Close() error
}

// Streamer is implemented by both engines: it keeps the queue full, asking
// next for op i as soon as a slot frees, instead of waiting for a whole
// batch as Do does. done sees each op once it completed (N and Err set),
// in completion order. Every one of the n ops runs; the error of the
// lowest-numbered failed op is returned. Use it through Stream.
type Streamer interface {
	Stream(n int, next func(i int) Op, done func(i int, op *Op)) error
}

// Stream runs n ops on e, through its own Stream method when it has one
// (both of this package's engines do), else in batches of DefaultQueueDepth
// through Do, so that wrappers around an Engine still work; next may then
// run up to DefaultQueueDepth ops ahead of done.
func Stream(e Engine, n int, next func(i int) Op, done func(i int, op *Op)) error {
	if s, ok := e.(Streamer); ok {
		return s.Stream(n, next, done)
	}
	var first error
	batch := make([]Op, 0, DefaultQueueDepth)
	for lo := 0; lo < n; lo += DefaultQueueDepth {
		hi := min(lo+DefaultQueueDepth, n)
		batch = batch[:0]
		for i := lo; i < hi; i++ {
			batch = append(batch, next(i))
		}
		if err := e.Do(batch); err != nil && first == nil {
			first = err
		}
		for i := range batch {
			done(lo+i, &batch[i])
		}
	}
	return first
}

// NewEngine returns the I/O engine for mode:
//
//	"io_uring" io_uring or an error saying why not;
//	"pread"    pread/pwrite;
//	"auto"     io_uring, else pread/pwrite with fallbackReason saying why
//	           (e.g. "io_uring_setup: operation not permitted").
//
// queueDepth <= 0 means DefaultQueueDepth. The arenas' memory is registered
// with the ring (IORING_REGISTER_BUFFERS) so that ops whose Buf lies inside
// one use READ_FIXED/WRITE_FIXED; the arenas must outlive the engine. If
// registration fails (memlock limit) the ring still runs, unregistered,
// and fallbackReason says so.
func NewEngine(mode string, queueDepth int, arenas ...*Arena) (e Engine, fallbackReason string, err error) {
	if queueDepth <= 0 {
		queueDepth = DefaultQueueDepth
	}
	if queueDepth > MaxQueueDepth {
		return nil, "", fmt.Errorf("queue depth %d: must be at most %d", queueDepth, MaxQueueDepth)
	}
	switch mode {
	case "pread", "pread/pwrite":
		return NewPreadEngine(), "", nil
	case "io_uring", "auto":
		u, reason, err := newUring(queueDepth, arenas)
		if err == nil {
			return u, reason, nil
		}
		if mode == "io_uring" {
			return nil, "", err
		}
		return NewPreadEngine(), err.Error(), nil
	}
	return nil, "", fmt.Errorf("engine %q: must be auto, io_uring or pread", mode)
}

// ProbeUring sets up an io_uring of queueDepth entries registering arenas,
// and closes it again; reason says why registering them failed, if it did.
func ProbeUring(queueDepth int, arenas ...*Arena) (reason string, err error) {
	u, reason, err := newUring(queueDepth, arenas)
	if err == nil {
		u.Close()
	}
	return reason, err
}
