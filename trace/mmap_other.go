//go:build !unix

package trace

import "os"

// mapFile reads f whole where there is no mmap.
func mapFile(f *os.File, size int) (data []byte, release func(), err error) {
	return readFile(f, size)
}
