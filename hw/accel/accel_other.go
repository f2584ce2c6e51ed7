//go:build !linux

package accel

import "fmt"

// Without mmap here, host buffers come from the Go heap: only the emulated
// device (synchronous copies) can run on such systems.
func accelHostAlloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("host alloc %d bytes: size must be > 0", n)
	}
	return make([]byte, n), nil
}

func accelHostFree(mem []byte) error { return nil }
func accelMlock(mem []byte) error    { return nil }
func accelMunlock(mem []byte) error  { return nil }
