package ioengine

import (
	"errors"
	"fmt"
)

// ErrNoDirectIO marks a file or directory where O_DIRECT cannot work.
var ErrNoDirectIO = errors.New("no O_DIRECT")

// ErrMisaligned marks an op that O_DIRECT would reject with EINVAL.
var ErrMisaligned = errors.New("misaligned for direct I/O")

// Align is a file's direct-I/O alignment: Mem for buffer addresses, Offset
// for file offsets and lengths. Zero values mean no constraint (the file is
// not open with O_DIRECT). Path names the file in error messages.
type Align struct {
	Mem, Offset uint32
	Path        string
}

// misaligned reads as the reason the kernel would only answer EINVAL to;
// it matches ErrMisaligned.
type misaligned struct{ msg string }

func (e *misaligned) Error() string        { return e.msg }
func (e *misaligned) Is(target error) bool { return target == ErrMisaligned }

// CheckAligned says which of buf's address, off and len(buf) breaks the
// alignment, instead of the bare EINVAL the kernel would give.
func CheckAligned(buf []byte, off int64, a Align) error {
	name := a.Path
	if name == "" {
		name = "the file"
	}
	if a.Offset > 1 {
		if off%int64(a.Offset) != 0 {
			return &misaligned{fmt.Sprintf("offset %d is not a multiple of the %d-byte direct-I/O alignment of %s", off, a.Offset, name)}
		}
		if len(buf)%int(a.Offset) != 0 {
			return &misaligned{fmt.Sprintf("length %d is not a multiple of the %d-byte direct-I/O alignment of %s", len(buf), a.Offset, name)}
		}
	}
	if a.Mem > 1 && len(buf) > 0 {
		if addr := bufAddr(buf); addr%uintptr(a.Mem) != 0 {
			return &misaligned{fmt.Sprintf("buffer address %#x is not a multiple of the %d-byte direct-I/O memory alignment of %s (use an Arena)", addr, a.Mem, name)}
		}
	}
	return nil
}

// noDirect explains why dir cannot hold O_DIRECT files and what to do.
func noDirect(dir, fsType string) error {
	why := "which refuses O_DIRECT"
	if fsType == "tmpfs" || fsType == "ramfs" {
		why = "which has no O_DIRECT"
	}
	return &noDirectIO{fmt.Sprintf("store directory %s is on %s, %s; put it on a disk filesystem (ext4, xfs)", dir, fsType, why)}
}

// noDirectIO matches ErrNoDirectIO.
type noDirectIO struct{ msg string }

func (e *noDirectIO) Error() string        { return e.msg }
func (e *noDirectIO) Is(target error) bool { return target == ErrNoDirectIO }
