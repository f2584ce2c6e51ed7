package main

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
