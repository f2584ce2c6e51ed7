//go:build linux

package ioengine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDIOAlign(t *testing.T) {
	probeLeaks(t)
	dir := probeDiskDir(t)
	path := filepath.Join(dir, "f")
	f, a, err := OpenDirect(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if a.Path != path || a.Mem == 0 || a.Offset == 0 || a.Offset&(a.Offset-1) != 0 {
		t.Fatalf("alignment %+v", a)
	}
	mem, off, err := DIOAlign(int(f.Fd()))
	if errors.Is(err, ErrUnsupported) {
		probeLacks(t, "statx has no STATX_DIOALIGN here: %v", err)
	}
	if err != nil || mem != a.Mem || off != a.Offset {
		t.Fatalf("DIOAlign = %d, %d, %v; OpenDirect said %+v", mem, off, err, a)
	}
	fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if fl&unix.O_DIRECT == 0 {
		t.Error("OpenDirect's file has no O_DIRECT")
	}
	t.Logf("%s: memory %d, offset %d", dir, mem, off)

	fs, pa, err := ProbeDirectIO(dir)
	if err != nil || fs == "" || pa.Offset != a.Offset || pa.Path != dir {
		t.Errorf("ProbeDirectIO = %q, %+v, %v", fs, pa, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("ProbeDirectIO left files behind: %v", ents)
	}
}

// TestDirectOnTmpfs: tmpfs accepts O_DIRECT opens since Linux 6.6, but it
// is page cache all the same; the error says so and what to do.
func TestDirectOnTmpfs(t *testing.T) {
	probeLeaks(t)
	if fs, err := FSType("/dev/shm"); err != nil || fs != "tmpfs" {
		probeLacks(t, "/dev/shm is not tmpfs (%q, %v)", fs, err)
	}
	dir, err := os.MkdirTemp("/dev/shm", "kvsim-dio-")
	if err != nil {
		probeLacks(t, "cannot write /dev/shm: %v", err)
	}
	defer os.RemoveAll(dir)
	want := "store directory " + dir + " is on tmpfs, which has no O_DIRECT; put it on a disk filesystem (ext4, xfs)"
	_, _, err = OpenDirect(filepath.Join(dir, "x"), os.O_RDWR|os.O_CREATE, 0o600)
	if !errors.Is(err, ErrNoDirectIO) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("OpenDirect on tmpfs: %v\nwant ...%s", err, want)
	}
	if fs, _, err := ProbeDirectIO(dir); fs != "tmpfs" || err == nil || err.Error() != want {
		t.Errorf("ProbeDirectIO on tmpfs: %q, %v", fs, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("OpenDirect created the file on tmpfs")
	}
}

func TestCheckAligned(t *testing.T) {
	a, err := NewArena(1)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mem := a.Bytes()
	al := Align{Mem: 512, Offset: 512, Path: "FILE"}
	for _, c := range []struct {
		buf  []byte
		off  int64
		want string
	}{
		{mem[:4096], 4096, ""},
		{mem[:4096], 4097, "offset 4097 is not a multiple of the 512-byte direct-I/O alignment of FILE"},
		{mem[:100], 0, "length 100 is not a multiple of the 512-byte direct-I/O alignment of FILE"},
		{mem[8 : 8+512], 0, "is not a multiple of the 512-byte direct-I/O memory alignment of FILE (use an Arena)"},
		{nil, 0, ""},
	} {
		err := CheckAligned(c.buf, c.off, al)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckAligned(%d bytes, %d) = %v, want %q", len(c.buf), c.off, err, c.want)
		}
	}
	if err := CheckAligned(mem[3:10], 7, Align{}); err != nil {
		t.Errorf("no alignment: %v", err)
	}
}
