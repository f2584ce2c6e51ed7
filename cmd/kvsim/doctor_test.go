package main

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestDoctorJSON(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("doctor is Linux only")
	}
	stdout, stderr, code := runKvsim("doctor", "--json", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Checks []map[string]string `json:"checks"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	names := map[string]bool{}
	for _, c := range r.Checks {
		for _, k := range []string{"name", "status", "found", "fix"} {
			if _, ok := c[k]; !ok {
				t.Errorf("check %v lacks %q", c, k)
			}
		}
		names[c["name"]] = true
	}
	for _, n := range []string{"hugepages-2MB", "hugepages-1GB", "transparent-hugepages", "io_uring", "o_direct", "memlock", "gpu", "cuda-runtime", "rdma", "nvme"} {
		if !names[n] {
			t.Errorf("no %s check", n)
		}
	}
}

func TestDoctorText(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("doctor is Linux only")
	}
	stdout, stderr, code := runKvsim("doctor")
	if code != 0 || !strings.HasPrefix(stdout, "STATUS  CHECK") || !strings.Contains(stdout, "o_direct") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if fs, err := os.Stat("/dev/shm"); err == nil && fs.IsDir() {
		stdout, _, code = runKvsim("doctor", "--dir", "/dev/shm")
		if code != 0 {
			t.Errorf("tmpfs store directory: exit %d, want 0 (a finding, not an error)", code)
		}
		if strings.Contains(stdout, "tmpfs") && !strings.Contains(stdout, "fix: put the SSD tier's store directory on a disk filesystem") {
			t.Errorf("no fix for tmpfs:\n%s", stdout)
		}
	}
}

func TestDoctorBadInput(t *testing.T) {
	file := writeFile(t, t.TempDir(), "f", "x")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", "/no/such/dir"}, "kvsim: doctor: --dir: stat /no/such/dir: no such file or directory\n"},
		{[]string{"--dir", file}, "kvsim: doctor: --dir " + file + ": not a directory\n"},
		{[]string{"extra"}, "kvsim: doctor: unexpected argument \"extra\"\n"},
		{[]string{"--verbose"}, "kvsim: doctor: flag provided but not defined: -verbose\n"},
	} {
		_, stderr, code := runKvsim(append([]string{"doctor"}, c.args...)...)
		if code != 2 || stderr != c.want {
			t.Errorf("doctor %v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
