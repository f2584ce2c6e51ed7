package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"kvsim/hw/doctor"
	"kvsim/hw/ioengine"
	"kvsim/scenario"
)

// TestCalibrate: kvsim calibrate measures this machine and writes a
// profile that scenarios and replay take; the replay then predicts every
// link it used. Timings are machine facts, so only their sanity is checked.
func TestCalibrate(t *testing.T) {
	dir := replayDir(t)
	prof := filepath.Join(dir, "hw.toml")
	stdout, stderr, code := runKvsim("calibrate", "--dir", dir, "--out", prof, "--count", "16", "--block-bytes", "16384")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, want := range []string{"calibrated ", "dram->ssd", "ssd->dram", "read O_DIRECT 1024 KiB", "ssd reads and writes at once: ", "wrote " + prof} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	p, err := scenario.LoadProfile(prof)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, l := range p.Links {
		kinds[l.From+"-"+l.To] = true
		if l.Bandwidth <= 0 || l.ReverseBandwidth <= 0 || l.Latency < 0 {
			t.Errorf("link %+v", l)
		}
	}
	for _, k := range []string{"hbm-pinned", "hbm-dram", "dram-ssd", "pinned-ssd", "dram-nvmeof"} {
		if !kinds[k] {
			t.Errorf("profile lacks %s (has %v)", k, kinds)
		}
	}
	// A scenario naming the profile takes its figures for default links.
	sc, err := scenario.Parse([]byte(`profile = "`+prof+`"
[model]
layers = 32
kv_heads = 8
head_dim = 128
[[tier]]
kind = "hbm"
[[tier]]
kind = "dram"
[[tier]]
kind = "ssd"
[workload]
trace = "t.jsonl"
[[policy]]
eviction = "lru"
`), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Links {
		if l.From == "dram" && l.To == "ssd" && (sc.Links[1].Bandwidth != l.Bandwidth || sc.Links[1].Latency != l.Latency) {
			t.Errorf("dram->ssd link %+v, profile says %+v", sc.Links[1], l)
		}
	}
	// Replay with it: every link used has a prediction to compare with.
	if _, stderr, code := runKvsim("replay", "--real", "--mirror", "--dir", dir, "--limit", "200", "--block-bytes", "16384", "--profile", prof,
		"--scenario", "../../scenarios/hbm_dram_ssd.toml", "../../traces/synthetic.jsonl"); code != 0 {
		t.Fatalf("replay --profile: status %d: %s", code, stderr)
	}
	r := readReplay(t, filepath.Join(dir, "replay.json"))
	if len(r.Links) == 0 {
		t.Fatal("replay moved nothing")
	}
	for name, l := range r.Links {
		if l.Count > 0 && (l.PredictedP50us <= 0 || l.P50us <= 0) {
			t.Errorf("%s: measured p50 %g us, predicted %g us", name, l.P50us, l.PredictedP50us)
		}
	}
	// --json prints the measurements.
	stdout, stderr, code = runKvsim("calibrate", "--dir", dir, "--out", prof, "--count", "8", "--block-bytes", "8192", "--json")
	var cal struct {
		BlockBytes int                        `json:"block_bytes"`
		Links      map[string]json.RawMessage `json:"links"`
		Mixed      *doctor.MixedIO            `json:"ssd_read_write_at_once"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &cal) != nil || cal.BlockBytes != 8192 || len(cal.Links) != 9 {
		t.Errorf("--json: status %d, %d links, stderr %s", code, len(cal.Links), stderr)
	}
	if m := cal.Mixed; m == nil || m.TotalMiBps <= 0 || m.ReadMiBps <= 0 || m.WriteMiBps <= 0 || m.ReadAloneMiBps <= 0 ||
		m.Shared != (m.TotalMiBps < doctor.SharedBelow*max(m.ReadAloneMiBps, m.WriteAloneMiBps)) || m.Verdict == "" {
		t.Errorf("mixed I/O: %+v", m)
	}
	for _, bad := range [][]string{
		{"calibrate", "--dir", dir, "--block-bytes", "5000"},
		{"calibrate", "--dir", dir, "--count", "2"},
		{"calibrate", "--dir", dir, "--engine", "spdk"},
	} {
		if _, stderr, code := runKvsim(bad...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: status %d, %q", bad, code, stderr)
		}
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if shm, err := os.MkdirTemp("/dev/shm", "kvsim-cal-"); err == nil {
			defer os.RemoveAll(shm)
			if _, stderr, code := runKvsim("calibrate", "--dir", shm, "--count", "8"); code != 2 || !strings.Contains(stderr, "tmpfs") {
				t.Errorf("calibrate on tmpfs: status %d, %q", code, stderr)
			}
		}
	}
}

// TestCalibrateScratchNotOurs: calibrate writes and removes iobench.dat
// and mixed-*.dat in --dir; a user's file of one of those names is refused
// before any measuring (exit 2, naming it) and left as it was; a file
// iobench wrote (a killed calibrate's leftover) or an empty one is not.
func TestCalibrateScratchNotOurs(t *testing.T) {
	for _, n := range calibrateScratch {
		dir := t.TempDir()
		p := writeFile(t, dir, n, "a user's data\n")
		_, stderr, code := runKvsim("calibrate", "--dir", dir, "--count", "8")
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, p+" exists and was not written by kvsim") {
			t.Errorf("%s: status %d, %q", n, code, stderr)
		}
		if b, _ := os.ReadFile(p); string(b) != "a user's data\n" {
			t.Errorf("%s changed: %q", n, b)
		}
		if _, err := os.Stat(filepath.Join(dir, "profile.toml")); err == nil {
			t.Errorf("%s: a profile was written", n)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	dir := t.TempDir()
	if _, err := ioengine.IOBench(ioengine.IOBenchOptions{File: filepath.Join(dir, "iobench.dat"), Size: 1 << 20, BlockSize: 64 << 10,
		QueueDepth: 4, Write: true, Engine: "pread"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "mixed-read.dat", "")
	if err := checkCalibrateScratch(dir); err != nil {
		t.Errorf("kvsim's own leftovers refused: %v", err)
	}
}
