//go:build !linux

package ioengine

import (
	"fmt"
	"os"
	"unsafe"
)

func bufAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// DIOAlign is Linux only.
func DIOAlign(fd int) (memAlign, offsetAlign uint32, err error) {
	return 0, 0, fmt.Errorf("statx: %w", ErrUnsupported)
}

// OpenDirect is Linux only.
func OpenDirect(path string, flags int, perm uint32) (*os.File, Align, error) {
	return nil, Align{}, fmt.Errorf("open %s with O_DIRECT: %w", path, ErrUnsupported)
}

// ProbeDirectIO is Linux only.
func ProbeDirectIO(dir string) (fsType string, a Align, err error) {
	return "", Align{}, fmt.Errorf("O_DIRECT: %w", ErrUnsupported)
}

// FSType is Linux only.
func FSType(path string) (string, error) { return "", fmt.Errorf("statfs: %w", ErrUnsupported) }
