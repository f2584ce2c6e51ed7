package bucket

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

func faultSync(fd int) error {
	for {
		if err := unix.Fdatasync(fd); err != unix.EINTR {
			return err
		}
	}
}

// bucketFS is the bucket store's file-system calls, through a FaultFS
// when one is set. Errors come as *os.PathError naming the path.
type bucketFS struct{ f *FaultFS }

func pathErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: path, Err: err}
}

func (b bucketFS) open(path string, flags int, mode uint32) (int, error) {
	if err := b.f.check(FSOpen, path); err != nil {
		return -1, pathErr("open", path, err)
	}
	for {
		fd, err := unix.Open(path, flags, mode)
		if err != unix.EINTR {
			return fd, pathErr("open", path, err)
		}
	}
}

// lock takes the store's lock on its open directory, without waiting.
func (b bucketFS) lock(fd int, path string) error {
	if err := b.f.check(FSLock, path); err != nil {
		return err
	}
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
}

func (b bucketFS) stat(path string, st *unix.Stat_t) error {
	if err := b.f.check(FSStat, path); err != nil {
		return pathErr("stat", path, err)
	}
	return pathErr("stat", path, unix.Stat(path, st))
}

func (b bucketFS) readFile(path string) ([]byte, error) {
	if err := b.f.check(FSRead, path); err != nil {
		return nil, pathErr("read", path, err)
	}
	return os.ReadFile(path)
}

func (b bucketFS) readDir(path string) ([]os.DirEntry, error) {
	if err := b.f.check(FSReadDir, path); err != nil {
		return nil, pathErr("readdir", path, err)
	}
	return os.ReadDir(path)
}

func (b bucketFS) rename(from, to string) error {
	if err := b.f.check(FSRename, from); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	if err := unix.Rename(from, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

func (b bucketFS) link(from, to string) error {
	if err := b.f.check(FSLink, from); err != nil {
		return &os.LinkError{Op: "link", Old: from, New: to, Err: err}
	}
	if err := unix.Link(from, to); err != nil {
		return &os.LinkError{Op: "link", Old: from, New: to, Err: err}
	}
	return nil
}

func (b bucketFS) unlink(path string) error {
	if err := b.f.check(FSUnlink, path); err != nil {
		return pathErr("unlink", path, err)
	}
	return pathErr("unlink", path, unix.Unlink(path))
}

func (b bucketFS) mkdir(path string, mode uint32) error {
	if err := b.f.check(FSMkdir, path); err != nil {
		return pathErr("mkdir", path, err)
	}
	return pathErr("mkdir", path, unix.Mkdir(path, mode))
}

// syncDir fsyncs the open directory fd, which is path.
func (b bucketFS) syncDir(fd int, path string) error {
	if err := b.f.check(FSSyncDir, path); err != nil {
		return pathErr("fsync", path, err)
	}
	for {
		err := unix.Fsync(fd)
		if err != unix.EINTR {
			return pathErr("fsync", path, err)
		}
	}
}

// syncPath opens the directory path, fsyncs it and closes it.
func (b bucketFS) syncPath(path string) error {
	fd, err := b.open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	err = b.syncDir(fd, path)
	unix.Close(fd)
	return err
}

// MkdirAll makes dir and any missing parents, as os.MkdirAll does, and
// fsyncs each new folder's parent: a folder a store is to live in then
// survives a power loss (a directory's fsync makes the entries in it
// durable, not its own entry in its parent). Open does this for its Dir.
func MkdirAll(dir string) error { return bucketFS{}.mkdirAll(dir) }

// mkdirAll makes dir and any missing parents, fsyncing each new
// directory's parent so that the new entry survives a power loss.
func (b bucketFS) mkdirAll(dir string) error {
	var st unix.Stat_t
	err := b.stat(dir, &st)
	if err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return pathErr("mkdir", dir, unix.ENOTDIR)
		}
		return nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := b.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := b.mkdir(dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return b.syncPath(parent)
}
