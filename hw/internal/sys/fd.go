//go:build linux

// Package sys holds the system calls of the hw packages that make file
// descriptors, behind a type that owns what it opens.
package sys

import (
	"golang.org/x/sys/unix"
)

// FD is a file descriptor its holder owns and must Close. The zero FD owns
// nothing, so a struct holding one is safe to close before it is set up.
type FD struct {
	n int // the descriptor + 1; 0: none
}

// Own takes ownership of fd (as returned by a system call).
func Own(fd int) FD { return FD{n: fd + 1} }

// Open opens path (retrying on EINTR) and owns the result.
func Open(path string, flags int, mode uint32) (FD, error) {
	for {
		fd, err := unix.Open(path, flags, mode)
		if err == nil {
			return Own(fd), nil
		}
		if err != unix.EINTR {
			return FD{}, err
		}
	}
}

// MemfdCreate makes an anonymous memory file and owns it.
func MemfdCreate(name string, flags int) (FD, error) {
	fd, err := unix.MemfdCreate(name, flags)
	if err != nil {
		return FD{}, err
	}
	return Own(fd), nil
}

// Int is the descriptor for a system call; -1 when f owns none.
func (f FD) Int() int { return f.n - 1 }

// Valid reports whether f owns a descriptor.
func (f FD) Valid() bool { return f.n > 0 }

// Close closes the descriptor once; closing again, or closing the zero
// FD, does nothing.
func (f *FD) Close() error {
	if f.n <= 0 {
		return nil
	}
	fd := f.n - 1
	f.n = 0
	return unix.Close(fd)
}
