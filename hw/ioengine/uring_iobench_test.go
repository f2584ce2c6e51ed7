//go:build linux

package ioengine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIOBench(t *testing.T) {
	probeLeaks(t)
	dir := probeDiskDir(t)
	file := filepath.Join(dir, "bench")
	for _, engine := range []string{"io_uring", "pread"} {
		if engine == "io_uring" {
			probeUring(t)
		}
		for _, write := range []bool{false, true} {
			os.Remove(file)
			o := IOBenchOptions{File: file, Size: 8<<20 + 4096, BlockSize: 1 << 20, QueueDepth: 4, Write: write, Engine: engine, Direct: true, Hugepages: true}
			r, err := IOBench(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", r)
			if r.Bytes != o.Size || r.Ops != 9 || r.MiBps <= 0 || r.IOPS <= 0 || !r.Direct || r.BufferPages == "" {
				t.Errorf("%s write=%v: %+v", engine, write, r)
			}
			wantQD, wantName := 4, "io_uring"
			if engine == "pread" {
				wantQD, wantName = 1, "pread/pwrite"
			}
			// Under a small memlock limit (8 MiB is common without root),
			// registration can fail; the ring then runs unregistered.
			wantReg := engine == "io_uring" && !strings.HasPrefix(r.Fallback, "io_uring_register(BUFFERS): cannot allocate memory")
			if r.Engine != wantName || r.QueueDepth != wantQD || r.Registered != wantReg {
				t.Errorf("%s: engine %s qd %d registered %v", engine, r.Engine, r.QueueDepth, r.Registered)
			}
			wantPrep := "wrote bytes 0..8392704 first"
			if write {
				wantPrep = "fallocate 8392704 bytes"
			}
			if !strings.HasPrefix(r.Prepared, wantPrep) {
				t.Errorf("prepared %q, want %q", r.Prepared, wantPrep)
			}
			if fi, err := os.Stat(file); err != nil || fi.Size() != o.Size {
				t.Errorf("file: %v, %v", fi, err)
			}
		}
	}
	// Reading it again needs no preparation; buffered with 4 KiB pages works too.
	r, err := IOBench(IOBenchOptions{File: file, Size: 8 << 20, QueueDepth: 2})
	if err != nil || r.Prepared != "" || r.Direct || r.BufferPages != "4K" && r.BufferPages == "" {
		t.Errorf("second read: %+v, %v", r, err)
	}
	if _, err := IOBench(IOBenchOptions{File: file, Size: 8 << 20, BlockSize: 1000, Direct: true}); !errors.Is(err, ErrMisaligned) ||
		!strings.Contains(err.Error(), "is not a multiple of the") {
		t.Errorf("misaligned block size: %v", err)
	}
	for _, o := range []IOBenchOptions{{}, {File: file, Size: -1}, {File: file, QueueDepth: MaxQueueDepth + 1}, {File: file, Engine: "spdk"}} {
		if _, err := IOBench(o); err == nil {
			t.Errorf("IOBench(%+v) succeeded", o)
		}
	}
}

func TestIOBenchTmpfs(t *testing.T) {
	if fs, _ := FSType("/dev/shm"); fs != "tmpfs" {
		probeLacks(t, "/dev/shm is not tmpfs")
	}
	_, err := IOBench(IOBenchOptions{File: "/dev/shm/kvsim-iobench-test", Size: 1 << 20, Direct: true})
	if !errors.Is(err, ErrNoDirectIO) {
		t.Errorf("O_DIRECT on tmpfs: %v", err)
	}
	os.Remove("/dev/shm/kvsim-iobench-test")
}
