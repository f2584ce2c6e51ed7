//go:build linux

package accel

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"kvsim/hw/hostmem"
)

// accelHostAlloc maps n bytes of anonymous pageable memory, populated so
// first-touch faults stay out of timed copies. It is outside the Go heap,
// so asynchronous copies may read it after the call returns.
func accelHostAlloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("host alloc %d bytes: size must be > 0", n)
	}
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", hostmem.FormatBytes(int64(n)), err)
	}
	return mem, nil
}

func accelHostFree(mem []byte) error { return unix.Munmap(mem) }

// accelMlock page-locks mem; a failure names the memlock limit, the usual
// cause.
func accelMlock(mem []byte) error {
	if err := unix.Mlock(mem); err != nil {
		lim, unlimited := hostmem.MemlockLimit()
		if !unlimited && (errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EAGAIN)) {
			return fmt.Errorf("mlock %s: %w (RLIMIT_MEMLOCK is %s; raise it with ulimit -l)", hostmem.FormatBytes(int64(len(mem))), err, hostmem.FormatBytes(lim))
		}
		return fmt.Errorf("mlock %s: %w", hostmem.FormatBytes(int64(len(mem))), err)
	}
	return nil
}

func accelMunlock(mem []byte) error { return unix.Munlock(mem) }
