//go:build linux

package ioengine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

func bufAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// DIOAlign asks the kernel (statx STATX_DIOALIGN, Linux 6.1+) for the
// direct-I/O alignment of the open file fd: memAlign for buffer addresses,
// offsetAlign for offsets and lengths. It must be asked of the file, not
// its directory. The error wraps ErrUnsupported when the kernel or
// filesystem does not say, and ErrNoDirectIO when it says O_DIRECT is off.
func DIOAlign(fd int) (memAlign, offsetAlign uint32, err error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &st); err != nil {
		return 0, 0, fmt.Errorf("statx: %w", err)
	}
	if st.Mask&unix.STATX_DIOALIGN == 0 {
		return 0, 0, fmt.Errorf("statx does not report the direct-I/O alignment here: %w", ErrUnsupported)
	}
	if st.Dio_mem_align == 0 || st.Dio_offset_align == 0 {
		return 0, 0, fmt.Errorf("statx: this file does not support direct I/O: %w", ErrNoDirectIO)
	}
	return st.Dio_mem_align, st.Dio_offset_align, nil
}

// fallbackAlign is assumed when statx cannot say: 4 KiB satisfies every
// logical block size in use.
const fallbackAlign = 4096

// OpenDirect opens path with O_DIRECT|flags (O_CLOEXEC is added) and
// returns its alignment. A directory on tmpfs is refused up front (since
// Linux 6.6 tmpfs accepts the flag, but it is still page cache), and an
// EINVAL from open is turned into an error naming the filesystem.
func OpenDirect(path string, flags int, perm uint32) (*os.File, Align, error) {
	dir := filepath.Dir(path)
	if fs, err := FSType(dir); err == nil && (fs == "tmpfs" || fs == "ramfs") {
		return nil, Align{}, fmt.Errorf("open %s: %w", path, noDirect(dir, fs))
	}
	f, err := os.OpenFile(path, flags|unix.O_DIRECT|unix.O_CLOEXEC, os.FileMode(perm))
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			fs, _ := FSType(dir)
			return nil, Align{}, fmt.Errorf("open %s: %w", path, noDirect(dir, fs))
		}
		return nil, Align{}, err
	}
	a, err := fileAlign(f, path)
	if err != nil {
		f.Close()
		return nil, Align{}, err
	}
	return f, a, nil
}

func fileAlign(f *os.File, path string) (Align, error) {
	mem, off, err := DIOAlign(int(f.Fd()))
	switch {
	case err == nil:
		return Align{Mem: mem, Offset: off, Path: path}, nil
	case errors.Is(err, ErrUnsupported):
		return Align{Mem: fallbackAlign, Offset: fallbackAlign, Path: path}, nil
	case errors.Is(err, ErrNoDirectIO):
		fs, _ := FSType(filepath.Dir(path))
		return Align{}, fmt.Errorf("open %s: %w", path, noDirect(filepath.Dir(path), fs))
	}
	return Align{}, fmt.Errorf("%s: %w", path, err)
}

// ProbeDirectIO checks that dir can hold O_DIRECT files: it creates, probes
// and removes a scratch file there. fsType is the filesystem's name.
func ProbeDirectIO(dir string) (fsType string, a Align, err error) {
	fsType, err = FSType(dir)
	if err != nil {
		return "", Align{}, err
	}
	if fsType == "tmpfs" || fsType == "ramfs" {
		return fsType, Align{}, noDirect(dir, fsType)
	}
	name := filepath.Join(dir, ".kvsim-dio-"+strconv.FormatUint(rand.Uint64(), 36))
	f, a, err := OpenDirect(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fsType, Align{}, err
	}
	f.Close()
	os.Remove(name)
	a.Path = dir
	return fsType, a, nil
}

// FSType names the filesystem that holds path (statfs f_type), or gives
// its magic number in hex when it is not one of the common ones.
func FSType(path string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "", &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	if name, ok := fsNames[int64(st.Type)]; ok {
		return name, nil
	}
	return fmt.Sprintf("0x%x", uint64(st.Type)), nil
}

var fsNames = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4", // also ext2/ext3
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.RAMFS_MAGIC:           "ramfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.FUSE_SUPER_MAGIC:      "fuse",
	unix.V9FS_MAGIC:            "9p",
	unix.SMB2_SUPER_MAGIC:      "smb",
	unix.CIFS_SUPER_MAGIC:      "cifs",
	0x2fc12fc1:                 "zfs",
}
