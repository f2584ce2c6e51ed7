//go:build linux

package ioengine

import (
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// preadEngine is the portable fallback: one synchronous syscall per op,
// so its queue depth is 1 whatever NewEngine was given.
type preadEngine struct{}

// NewPreadEngine returns the pread/pwrite engine.
func NewPreadEngine() Engine { return preadEngine{} }

func (preadEngine) Name() string { return "pread/pwrite" }
func (preadEngine) Close() error { return nil }

func (preadEngine) Do(ops []Op) error {
	first := -1
	for i := range ops {
		if runOp(&ops[i]) != nil && first < 0 {
			first = i
		}
	}
	if first < 0 {
		return nil
	}
	return ops[first].Err
}

func (preadEngine) Stream(n int, next func(i int) Op, done func(i int, op *Op)) error {
	var first error
	for i := 0; i < n; i++ {
		op := next(i)
		if runOp(&op) != nil && first == nil {
			first = op.Err
		}
		done(i, &op)
	}
	return first
}

// maxRW is the most one read or write moves; the kernel caps a single
// transfer just under 2 GiB, and io_uring's length is 32 bits.
const maxRW = 1 << 30

func runOp(op *Op) error {
	op.N, op.Err = 0, nil
	for op.N < len(op.Buf) {
		b := op.Buf[op.N:min(len(op.Buf), op.N+maxRW)]
		var n int
		var err error
		if op.Write {
			n, err = unix.Pwrite(op.FD, b, op.Off+int64(op.N))
		} else {
			n, err = unix.Pread(op.FD, b, op.Off+int64(op.N))
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			op.Err = opError(op, err)
			break
		}
		op.N += n
		if n == 0 || (op.N < len(op.Buf) && atDirectEOF(op)) {
			op.Err = shortError(op)
			break
		}
	}
	return op.Err
}

// atDirectEOF reports whether a short read on an O_DIRECT file means end of
// file: retrying the remainder would start at an unaligned offset and fail
// with EINVAL instead of returning 0.
func atDirectEOF(op *Op) bool {
	if op.Write {
		return false
	}
	fl, err := unix.FcntlInt(uintptr(op.FD), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_DIRECT != 0
}

func opError(op *Op, err error) error {
	return fmt.Errorf("%s of %d bytes at offset %d: %w", opName(op.Write), len(op.Buf), op.Off, err)
}

func shortError(op *Op) error {
	if op.Write {
		return fmt.Errorf("short write at offset %d: %d of %d bytes: %w", op.Off, op.N, len(op.Buf), io.ErrShortWrite)
	}
	return fmt.Errorf("short read at offset %d: %d of %d bytes: %w", op.Off, op.N, len(op.Buf), io.ErrUnexpectedEOF)
}

func opName(write bool) string {
	if write {
		return "write"
	}
	return "read"
}
