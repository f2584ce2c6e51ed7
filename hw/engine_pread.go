//go:build linux

package hw

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// preadEngine is the portable fallback: one synchronous syscall per op.
type preadEngine struct{}

// NewPreadEngine returns the pread/pwrite engine.
func NewPreadEngine() Engine { return preadEngine{} }

func (preadEngine) Name() string { return "pread/pwrite" }
func (preadEngine) Close() error { return nil }

func (preadEngine) Do(ops []Op) error {
	var first error
	for i := range ops {
		op := &ops[i]
		op.N, op.Err = 0, nil
		for op.N < len(op.Buf) {
			var n int
			var err error
			if op.Write {
				n, err = unix.Pwrite(op.FD, op.Buf[op.N:], op.Off+int64(op.N))
			} else {
				n, err = unix.Pread(op.FD, op.Buf[op.N:], op.Off+int64(op.N))
			}
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				op.Err = err
				break
			}
			if n == 0 {
				op.Err = fmt.Errorf("short %s at offset %d: %d of %d bytes", opName(op.Write), op.Off, op.N, len(op.Buf))
				break
			}
			op.N += n
		}
		if op.Err != nil && first == nil {
			first = op.Err
		}
	}
	return first
}

func opName(write bool) string {
	if write {
		return "write"
	}
	return "read"
}
