package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/results"
	"kvsim/scenario"
)

func scenarioBytes(s string) (int64, error) { return scenario.ParseBytes(s) }

// TestSweep: one run per capacity, each a full results folder with the
// tier at that capacity and the cost growing with it, an index over all,
// and one-line errors for a bad tier, capacity or argument list.
func TestSweep(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := runKvsim("sweep", "--tier", "dram", "--capacities", "16GiB,64GiB,256GiB", "--limit", "400", "--out", out, "../../scenarios/hbm_dram.toml")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "sweep of tier \"dram\"") || strings.Count(stdout, "lru-write-through") != 3 {
		t.Errorf("table:\n%s", stdout)
	}
	var prevCost float64
	for _, c := range []string{"16GiB", "64GiB", "256GiB"} {
		s, err := results.ReadSummary(filepath.Join(out, "hbm_dram-dram-"+c, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := scenarioBytes(c)
		if s.CostUSD <= prevCost || s.Tiers[1].CapacityBytes != want {
			t.Errorf("%s: cost %v after %v", c, s.CostUSD, prevCost)
		}
		prevCost = s.CostUSD
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Error(err)
	}
	for _, bad := range [][]string{
		{"sweep", "--tier", "ssd", "--capacities", "1GiB", "../../scenarios/hbm_dram.toml"},
		{"sweep", "--tier", "dram", "--capacities", "1XB", "../../scenarios/hbm_dram.toml"},
		{"sweep", "--tier", "dram", "../../scenarios/hbm_dram.toml"},
		{"sweep", "--tier", "dram", "--capacities", "1GiB"},
		{"sweep", "../../scenarios/hbm_dram.toml"},
		{"sweep", "--vary", "workload.speedup", "../../scenarios/hbm_dram.toml"},
		{"sweep", "--vary", "workload.speedup", "--values", "1,0", "../../scenarios/hbm_dram.toml"},
		{"sweep", "--vary", "tier.nope.capacity", "--values", "1GiB", "../../scenarios/hbm_dram.toml"},
		{"sweep", "--vary", "seed", "--values", "1", "--tier", "dram", "--capacities", "1GiB", "../../scenarios/hbm_dram.toml"},
	} {
		if _, stderr, code := runKvsim(bad...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: status %d, %q", bad, code, stderr)
		}
	}
}

// TestSweepVary: --vary takes any key --set takes; each value is a point
// with its own results folder.
func TestSweepVary(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := runKvsim("sweep", "--vary", "workload.speedup", "--values", "0.5, 2", "--limit", "300", "--out", out, "../../scenarios/hbm_dram.toml")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "sweep of workload.speedup in hbm_dram") || !strings.Contains(stdout, "workload.speedup  hierarchy $") {
		t.Errorf("table:\n%s", stdout)
	}
	var dur []float64
	for _, v := range []string{"0.5", "2"} {
		s, err := results.ReadSummary(filepath.Join(out, "hbm_dram-workload.speedup-"+v, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Overrides) != 1 || s.Overrides[0] != "workload.speedup="+v {
			t.Errorf("%s: overrides %q", v, s.Overrides)
		}
		if s.Sweep == nil || s.Sweep.Key != "workload.speedup" || s.Sweep.Value != v {
			t.Errorf("%s: sweep %+v", v, s.Sweep)
		}
		dur = append(dur, s.Trace.DurationS)
	}
	if r := dur[0] / dur[1]; r < 3.999 || r > 4.001 {
		t.Errorf("durations %v: want a ratio of 4", dur)
	}
	if b, err := os.ReadFile(filepath.Join(out, "index.html")); err != nil || !strings.Contains(string(b), "TTFT p99 across the sweep of workload.speedup") {
		t.Errorf("index.html lacks the sweep charts (%v)", err)
	}
}

// TestSweepInputsBeforeWork: a point's missing trace (--vary
// workload.trace) or a missing --assets is bad input found before any
// point is simulated or any folder made; it used to fail after the first
// point (exit 1 for --assets, leaving results without a report), with
// empty result folders left behind.
func TestSweepInputsBeforeWork(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vary", "workload.trace", "--values", "../../traces/synthetic.jsonl," + missing},
			`workload: trace: ` + missing + `: no such file or directory (a trace path given by --set is relative to the working directory) (--vary value "` + missing + `")`},
		{[]string{"--vary", "seed", "--values", "1,2", "--assets", filepath.Join(dir, "none")},
			"sweep: --assets: stat " + filepath.Join(dir, "none", "echarts.min.js")},
	} {
		out := filepath.Join(dir, "out")
		args := append(append([]string{"sweep", "--quiet", "--limit", "20", "--out", out}, tc.args...), quickstart)
		_, stderr, code := runKvsim(args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: %s was made", tc.args, out)
		}
	}
}
