//go:build linux

package hw

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Arena is anonymous mmap'd memory for I/O buffers: page-aligned, invisible
// to the garbage collector, so its addresses may be handed to the kernel.
type Arena struct {
	mem  []byte
	Huge bool // backed by 2 MiB pages (hugetlb or THP)
}

// NewArena maps size bytes (rounded up to 2 MiB). It tries hugetlb pages,
// then a THP-advised mapping, then plain 4 KiB pages.
func NewArena(size int) (*Arena, error) {
	const huge = 2 << 20
	size = (size + huge - 1) &^ (huge - 1)
	if size == 0 {
		size = huge
	}
	prot := unix.PROT_READ | unix.PROT_WRITE
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	if m, err := unix.Mmap(-1, 0, size, prot, flags|unix.MAP_HUGETLB); err == nil {
		return &Arena{mem: m, Huge: true}, nil
	}
	m, err := unix.Mmap(-1, 0, size, prot, flags)
	if err != nil {
		return nil, fmt.Errorf("arena: mmap %d bytes: %w", size, err)
	}
	thp := unix.Madvise(m, unix.MADV_HUGEPAGE) == nil
	return &Arena{mem: m, Huge: thp}, nil
}

// Bytes is the whole arena.
func (a *Arena) Bytes() []byte { return a.mem }

// Slice returns n bytes at off.
func (a *Arena) Slice(off, n int) []byte { return a.mem[off : off+n : off+n] }

// Close unmaps the arena; slices from it must not be used afterwards.
func (a *Arena) Close() error {
	if a.mem == nil {
		return nil
	}
	err := unix.Munmap(a.mem)
	a.mem = nil
	return err
}
