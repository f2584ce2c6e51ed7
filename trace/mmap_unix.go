//go:build unix

package trace

import (
	"os"
	"syscall"
)

// mapFile maps f's first size bytes read-only; release unmaps them.
func mapFile(f *os.File, size int) (data []byte, release func(), err error) {
	if size == 0 {
		return nil, func() {}, nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readFile(f, size)
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
