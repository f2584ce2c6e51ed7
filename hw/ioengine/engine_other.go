//go:build !linux

package ioengine

import "fmt"

// Arena is mmap'd memory for I/O buffers; Linux only.
type Arena struct {
	mem  []byte
	Huge bool
}

// NewArena is Linux only.
func NewArena(size int) (*Arena, error) { return nil, fmt.Errorf("arena: %w", ErrUnsupported) }

// NewArenaPages is Linux only.
func NewArenaPages(size int, huge bool) (*Arena, error) { return NewArena(size) }

func (a *Arena) Bytes() []byte           { return a.mem }
func (a *Arena) Slice(off, n int) []byte { return a.mem[off : off+n : off+n] }
func (a *Arena) Backend() string         { return "" }
func (a *Arena) Close() error            { return nil }

type stubEngine struct{}

// NewPreadEngine returns an engine whose every op fails with ErrUnsupported.
func NewPreadEngine() Engine { return stubEngine{} }

func (stubEngine) Name() string { return "pread/pwrite" }
func (stubEngine) Close() error { return nil }
func (stubEngine) Do(ops []Op) error {
	for i := range ops {
		ops[i].N, ops[i].Err = 0, ErrUnsupported
	}
	if len(ops) == 0 {
		return nil
	}
	return ErrUnsupported
}

// maxRW mirrors the Linux limit so shared code compiles.
const maxRW = 1 << 30
