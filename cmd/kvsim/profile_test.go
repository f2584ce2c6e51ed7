package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestProfiles: --cpuprofile and --memprofile write pprof files (gzipped
// protocol buffers) and leave the results as they would be without them.
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	tr := writeFile(t, dir, "t.jsonl", `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}`+"\n")
	scen := writeFile(t, dir, "s.toml", scenarioTOML("p", tr, "1GiB", "", "lru"))
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	_, stderr, code := runKvsim("run", "--quiet", "--out", filepath.Join(dir, "a"), "--cpuprofile", cpu, "--memprofile", mem, scen)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, p := range []string{cpu, mem} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: not a pprof file: %v", p, err)
		}
		if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
			t.Errorf("%s: %d bytes, %v", p, len(b), err)
		}
		f.Close()
	}
	if _, stderr, code := runKvsim("run", "--quiet", "--out", filepath.Join(dir, "b"), scen); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a", "p", "requests.csv"))
	b, _ := os.ReadFile(filepath.Join(dir, "b", "p", "requests.csv"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("requests.csv differs with profiling on (%d vs %d bytes)", len(a), len(b))
	}
}
