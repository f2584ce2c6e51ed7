//go:build linux

// Package hwtest holds the test helpers the hw packages share: skip-or-fail
// on a missing prerequisite, fd and mapping leak checks, a directory with
// O_DIRECT.
package hwtest

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"kvsim/internal/testenv"
)

// Need skips a test whose prerequisite (root, io_uring) this machine
// lacks; under KVSIM_REQUIRE_ALL, as in CI, it fails instead (the one rule
// of internal/testenv).
func Need(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		testenv.Missing(t, format, args...)
	}
}

// Lacks skips for hardware a machine may simply not have (1 GB pages,
// contiguous memory for them): never a failure.
func Lacks(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Skipf("skipping, this machine lacks it: "+format, args...)
}

func Root(t testing.TB) {
	t.Helper()
	Need(t, os.Geteuid() == 0, "needs root (uid %d)", os.Geteuid())
}

// State counts open fds and the mappings this package makes that
// /proc/self/maps can name (memfds, io_uring rings, hugetlb).
type State struct {
	fds, maps int
	names     map[string]int // what the fds point at, to name a leak
}

func Snap(t testing.TB) State {
	t.Helper()
	s := State{names: map[string]int{}}
	f, err := os.Open("/proc/self/maps") // opening a file also starts the poller, whose fds then stay
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "memfd:") || strings.Contains(l, "io_uring") || strings.Contains(l, "anon_hugepage") {
			s.maps++
		}
	}
	f.Close()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	s.fds = len(ents)
	for _, e := range ents {
		n, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		s.names[n]++
	}
	return s
}

// Leaks checks, when the test ends, that it left no fd or named
// mapping behind. Register it first so that it runs after other cleanups.
// Only a rise that lasts counts: the race detector's runtime opens files of
// its own for an instant, and finalizers close earlier tests' files at any
// time, so a snapshot can be off by one either way for a moment.
func Leaks(t *testing.T) {
	t.Helper()
	before := Snap(t)
	t.Cleanup(func() {
		var after State
		for range 40 {
			after = Snap(t)
			if after.fds <= before.fds && after.maps <= before.maps {
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
		var added []string
		for n, k := range after.names {
			if k > before.names[n] {
				added = append(added, n)
			}
		}
		t.Errorf("leak: %d fds and %d memfd/io_uring/hugetlb mappings before, %d and %d after; new fds: %q", before.fds, before.maps, after.fds, after.maps, added)
	})
}

// Released closes what maps [addr, addr+n) and fails if a mapping it
// had is still there. Only the mappings seen before the close count: the
// kernel may give a freed range at once to another mapping (the Go
// runtime's, or the next buffer's), which is no leak. A mapping counts as
// still there when a line of /proc/self/maps overlapping the range is
// identical to one seen before (same bounds, permissions, offset, device
// and inode: a memfd's inode is its own).
func Released(t testing.TB, addr uintptr, n int, close func() error) {
	t.Helper()
	before := Mapped(t, addr, n)
	if err := close(); err != nil {
		t.Error(err)
	}
	Gone(t, addr, n, before)
}

// Gone fails if a mapping of [addr, addr+n) that Mapped saw before a
// release is still there (see Released).
func Gone(t testing.TB, addr uintptr, n int, before []string) {
	t.Helper()
	for _, l := range Mapped(t, addr, n) {
		if slices.Contains(before, l) {
			t.Errorf("range %#x+%d still mapped after release: %s", addr, n, l)
		}
	}
}

// Mapped lists the lines of /proc/self/maps that overlap [addr, addr+n).
func Mapped(t testing.TB, addr uintptr, n int) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	lo0, hi0 := uint64(addr), uint64(addr)+uint64(n)
	var out []string
	for l := range strings.SplitSeq(string(b), "\n") {
		lo, rest, ok := strings.Cut(l, "-")
		if !ok {
			continue
		}
		hi, _, _ := strings.Cut(rest, " ")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		z, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && a < hi0 && lo0 < z {
			out = append(out, l)
		}
	}
	return out
}

// DiskDir is a temporary directory on a filesystem where direct reports
// O_DIRECT works; the package directory is tried when TMPDIR is tmpfs.
func DiskDir(t testing.TB, direct func(dir string) bool) string {
	t.Helper()
	for _, base := range []string{"", "."} {
		var dir string
		if base == "" {
			dir = t.TempDir()
		} else {
			d, err := os.MkdirTemp(base, ".probe-")
			if err != nil {
				continue
			}
			t.Cleanup(func() { os.RemoveAll(d) })
			dir, _ = filepath.Abs(d)
		}
		if direct(dir) {
			return dir
		}
	}
	Lacks(t, "no directory with O_DIRECT (TMPDIR and the package directory are not on a disk filesystem)")
	return ""
}

// Must fails the test on a non-nil error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Addr is the address of b's first byte.
func Addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
