package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"kvsim/hw"
	"kvsim/hw/ioengine"
)

// iobenchDir is a directory where O_DIRECT works, or "" to run buffered.
func iobenchDir(t *testing.T) (string, bool) {
	dir := t.TempDir()
	_, _, err := ioengine.ProbeDirectIO(dir)
	return dir, err == nil
}

func TestIobench(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("iobench is Linux only")
	}
	dir, direct := iobenchDir(t)
	file := filepath.Join(dir, "bench.dat")
	d := "--direct=" + map[bool]string{true: "true", false: "false"}[direct]
	for _, c := range [][]string{
		{"--rw", "write", "--engine", "auto"},
		{"--rw", "read", "--engine", "pread"},
		{"--rw", "read", "--engine", "auto", "--hugepages=false"},
	} {
		args := append([]string{"iobench", "--file", file, "--size", "4MiB", "--bs", "256KiB", "--qd", "4", "--json", d}, c...)
		stdout, stderr, code := runKvsim(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var r ioengine.IOBenchResult
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("%v:\n%s", err, stdout)
		}
		if r.Bytes != 4<<20 || r.Ops != 16 || r.MiBps <= 0 || r.RW != c[1] || r.Direct != direct {
			t.Errorf("%v: %+v", c, r)
		}
		if c[3] == "pread" && r.Engine != "pread/pwrite" {
			t.Errorf("engine %s", r.Engine)
		}
	}
	stdout, stderr, code := runKvsim("iobench", "--file", file, "--size", "4MiB", d)
	if code != 0 || !strings.Contains(stdout, "MiB/s") || !strings.Contains(stdout, "engine ") {
		t.Errorf("text output: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestIobenchBadInput(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "iobench: --file is required"},
		{[]string{"--file", f, "--size", "0"}, "iobench: --size: must be > 0"},
		{[]string{"--file", f, "--size", "1 parsec"}, "iobench: --size: bad size"},
		{[]string{"--file", f, "--bs", "2GiB"}, "iobench: --bs: must be between 1 B and 1 GiB"},
		{[]string{"--file", f, "--qd", "0"}, "iobench: --qd: must be between 1 and 4096"},
		{[]string{"--file", f, "--rw", "randread"}, `iobench: --rw "randread": must be read or write`},
		{[]string{"--file", f, "--engine", "spdk"}, `iobench: --engine "spdk": must be auto, io_uring or pread`},
		{[]string{"--file", f, "x"}, `iobench: unexpected argument "x"`},
	} {
		_, stderr, code := runKvsim(append([]string{"iobench"}, c.args...)...)
		if code != 2 || !strings.HasPrefix(stderr, "kvsim: "+c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("iobench %v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	if dir, direct := iobenchDir(t); direct {
		_, stderr, code := runKvsim("iobench", "--file", filepath.Join(dir, "g"), "--size", "1MiB", "--bs", "1000")
		if code != 2 || !strings.Contains(stderr, "is not a multiple of the") {
			t.Errorf("misaligned --bs: exit %d, %s", code, stderr)
		}
	}
	if fs, _ := ioengine.FSType("/dev/shm"); fs == "tmpfs" {
		_, stderr, code := runKvsim("iobench", "--file", "/dev/shm/kvsim-iobench-cli", "--size", "1MiB")
		if code != 2 || !strings.Contains(stderr, "is on tmpfs, which has no O_DIRECT") {
			t.Errorf("tmpfs: exit %d, %s", code, stderr)
		}
	}
}

// TestIobenchKeepsUserFiles: iobench never changes a file it did not
// make: a write benchmark, or a read one longer than the file, on a user's
// file is refused (exit 2, naming the file and --overwrite) and the file is
// left as it was; reading it whole, an empty file, a file iobench wrote
// and --overwrite are fine. A run that fails removes the file it created,
// and buffers or a file beyond the machine are bad input.
func TestIobenchKeepsUserFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("iobench is Linux only")
	}
	dir, direct := iobenchDir(t)
	d := "--direct=" + map[bool]string{true: "true", false: "false"}[direct]
	const mine = "a user's notes, not a benchmark file\n"
	user := writeFile(t, dir, "notes.txt", mine)
	bench := func(file string, extra ...string) (string, int) {
		t.Helper()
		_, stderr, code := runKvsim(append([]string{"iobench", "--file", file, "--size", "1MiB", "--bs", "256KiB", "--qd", "2", d}, extra...)...)
		return stderr, code
	}
	for _, rw := range []string{"write", "read"} {
		stderr, code := bench(user, "--rw", rw)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, user) || !strings.Contains(stderr, "--overwrite") {
			t.Errorf("--rw %s on a user's file: exit %d, %q", rw, code, stderr)
		}
		if b, _ := os.ReadFile(user); string(b) != mine {
			t.Fatalf("--rw %s changed the user's file: %.40q", rw, b)
		}
	}
	// Read whole, it is only read.
	big := writeFile(t, dir, "big.txt", strings.Repeat("user data\n", 1<<17)) // 1.25 MiB
	if stderr, code := bench(big, "--rw", "read"); code != 0 {
		t.Errorf("reading a user's file: exit %d, %s", code, stderr)
	}
	if b, _ := os.ReadFile(big); string(b) != strings.Repeat("user data\n", 1<<17) {
		t.Error("reading a user's file changed it")
	}
	// A file iobench wrote is its own to write again (this pins the check
	// to the fill of hw/ioengine's buffers); an empty one has nothing to lose.
	own := filepath.Join(dir, "bench.dat")
	empty := writeFile(t, dir, "empty.dat", "")
	for _, f := range []string{own, own, empty} {
		if stderr, code := bench(f, "--rw", "write"); code != 0 {
			t.Errorf("%s: exit %d, %s", f, code, stderr)
		}
	}
	if stderr, code := bench(user, "--rw", "write", "--overwrite"); code != 0 {
		t.Errorf("--overwrite: exit %d, %s", code, stderr)
	}

	// Buffers larger than the machine's memory: refused before any I/O.
	huge := filepath.Join(dir, "huge.dat")
	if mem := hw.MemInfo("MemTotal"); mem > 0 && mem < 4<<40 {
		stderr, code := bench(huge, "--qd", "4096", "--bs", "1GiB", "--size", "4TiB")
		if code != 2 || !strings.Contains(stderr, "--qd 4096 x --bs 1GiB = 4 TiB of I/O buffers") {
			t.Errorf("4 TiB of buffers: exit %d, %s", code, stderr)
		}
	}
	// A file larger than ext4 allows (16 TiB): fallocate fails, bad input
	// naming --size, and the file it made is gone.
	if fs, _ := ioengine.FSType(dir); fs == "ext4" {
		stderr, code := bench(huge, "--rw", "write", "--size", "100TiB")
		if code != 2 || !strings.HasPrefix(stderr, "kvsim: iobench: --size 100TiB: fallocate "+huge) {
			t.Errorf("100 TiB on ext4: exit %d, %s", code, stderr)
		}
	}
	if _, err := os.Stat(huge); err == nil {
		t.Error("a failed run left the file it created")
	}
}
