//go:build linux

package sys

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"kvsim/hw/internal/hwtest"
)

// TestFDClosesOnce: Close closes what the FD owns exactly once, and the
// zero FD owns nothing (closing it must not close descriptor 0).
func TestFDClosesOnce(t *testing.T) {
	hwtest.Leaks(t)
	var zero FD
	if zero.Valid() || zero.Int() != -1 || zero.Close() != nil {
		t.Fatalf("zero FD: valid %v, int %d", zero.Valid(), zero.Int())
	}
	f, err := Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd := f.Int()
	if !f.Valid() || fd < 0 {
		t.Fatalf("open: valid %v, fd %d", f.Valid(), fd)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("fd %d still open after Close: %v", fd, err)
	}
	// A second Close must not close whatever reuses the number.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := f.Close(); err != nil || f.Valid() {
		t.Errorf("second Close: %v, valid %v", err, f.Valid())
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Errorf("second Close closed a reused descriptor: %v", err)
	}
	m, err := MemfdCreate("kvsim-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
