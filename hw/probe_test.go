//go:build linux

package hw

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// probeNeed skips a test whose prerequisite (root, io_uring) this machine
// lacks; with KVSIM_REQUIRE_ALL=1, as in CI, it fails instead.
func probeNeed(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("KVSIM_REQUIRE_ALL") == "1" {
		t.Fatalf("KVSIM_REQUIRE_ALL=1 but "+format, args...)
	}
	t.Skipf("skipping: "+format+" (set KVSIM_REQUIRE_ALL=1 to fail instead)", args...)
}

// probeLacks skips for hardware a machine may simply not have (1 GB pages,
// contiguous memory for them): never a failure.
func probeLacks(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Skipf("skipping, this machine lacks it: "+format, args...)
}

func probeRoot(t testing.TB) {
	t.Helper()
	probeNeed(t, os.Geteuid() == 0, "needs root (uid %d)", os.Geteuid())
}

// probeState counts open fds and the mappings this package makes that
// /proc/self/maps can name (memfds, io_uring rings, hugetlb).
type probeState struct {
	fds, maps int
	names     map[string]int // what the fds point at, to name a leak
}

func probeSnap(t testing.TB) probeState {
	t.Helper()
	s := probeState{names: map[string]int{}}
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

// probeLeaks checks, when the test ends, that it left no fd or named
// mapping behind. Register it first so that it runs after other cleanups.
// Only a rise that lasts counts: the race detector's runtime opens files of
// its own for an instant, and finalizers close earlier tests' files at any
// time, so a snapshot can be off by one either way for a moment.
func probeLeaks(t *testing.T) {
	t.Helper()
	before := probeSnap(t)
	t.Cleanup(func() {
		var after probeState
		for range 40 {
			after = probeSnap(t)
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

// probeUnmapped fails if any mapping still overlaps [addr, addr+n).
func probeUnmapped(t testing.TB, addr uintptr, n int) {
	t.Helper()
	probeUnmappedExcept(t, addr, n)
}

// probeUnmappedExcept is probeUnmapped ignoring the parts of [addr,
// addr+n) that lie inside the live buffers keep (a freed range may be
// reused at once by the next mapping).
func probeUnmappedExcept(t testing.TB, addr uintptr, n int, keep ...[]byte) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	lo0, hi0 := uint64(addr), uint64(addr)+uint64(n)
	for l := range strings.SplitSeq(string(b), "\n") {
		lo, rest, ok := strings.Cut(l, "-")
		if !ok {
			continue
		}
		hi, _, _ := strings.Cut(rest, " ")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		z, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		// The overlap of this mapping with the probed range, less the
		// live buffers (each one contiguous range).
		a, z = max(a, lo0), min(z, hi0)
		for _, k := range keep {
			if cap(k) == 0 {
				continue
			}
			ka := uint64(bufAddr(k))
			kz := ka + uint64(cap(k))
			if ka <= a && z <= kz {
				a = z // wholly inside a live buffer
			}
		}
		if a < z {
			t.Errorf("range %#x+%d still mapped after release: %s", addr, n, l)
		}
	}
}

// probeDiskDir is a temporary directory on a filesystem with O_DIRECT; the
// package directory is tried when TMPDIR is tmpfs.
func probeDiskDir(t testing.TB) string {
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
		if _, _, err := ProbeDirectIO(dir); err == nil {
			return dir
		}
	}
	probeLacks(t, "no directory with O_DIRECT (TMPDIR and the package directory are not on a disk filesystem)")
	return ""
}

// probeUring skips (or fails under KVSIM_REQUIRE_ALL) when io_uring is off.
func probeUring(t testing.TB) {
	t.Helper()
	u, _, err := newUring(1, nil)
	probeNeed(t, err == nil, "io_uring unavailable: %v", err)
	u.Close()
}
