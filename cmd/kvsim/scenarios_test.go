package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"kvsim/scenario"
)

// TestShippedScenarios: every scenario in the repository loads, and those
// whose trace ships with it run.
func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.toml")
	if err != nil || len(files) < 5 {
		t.Fatalf("scenarios: %v %v", files, err)
	}
	for _, f := range files {
		sc, err := scenario.Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if _, err := os.Stat(sc.Workload.Trace); sc.Workload.Gen == nil && err != nil {
			continue // e.g. the Mooncake trace users download themselves
		}
		_, stderr, code := runKvsim("run", "--quiet", "--limit", "300", "--out", t.TempDir(), f)
		if code != 0 {
			t.Errorf("%s: status %d: %s", f, code, stderr)
		}
	}
}

// TestSharedBandwidth: marking the SSD shared makes its reads and writes
// queue for one pipe. Its bytes are the sum of its links' in both
// directions, and on this workload mean and p90 TTFT only grow against
// separate pipes (contention changes timing, so decisions may differ: this
// is a check of the shipped scenario, not a law).
func TestSharedBandwidth(t *testing.T) {
	body, err := os.ReadFile("../../scenarios/ssd_contention.toml")
	if err != nil {
		t.Fatal(err)
	}
	trace, _ := filepath.Abs("../../traces/synthetic.jsonl")
	shared := strings.Replace(string(body), `"../traces/synthetic.jsonl"`, strconv.Quote(trace), 1)
	if !strings.Contains(shared, "\nshared_bandwidth = true\n") {
		t.Fatal("ssd_contention.toml no longer marks its SSD shared")
	}
	separate := strings.Replace(shared, "\nshared_bandwidth = true\n", "\n", 1)
	a := simulate(t, shared, "--limit", "800")
	b := simulate(t, separate, "--limit", "800")
	for i, p := range a.Policies {
		d, ok := p.SharedTiers["ssd"]
		if !ok || len(p.SharedTiers) != 1 || b.Policies[i].SharedTiers != nil {
			t.Fatalf("%s: shared_tiers %v / %v", p.Name, p.SharedTiers, b.Policies[i].SharedTiers)
		}
		if sum := p.Links["dram->ssd"].Bytes + p.Links["ssd->dram"].Bytes; d.Bytes != sum || d.Bytes == 0 {
			t.Errorf("%s: ssd pipe moved %d bytes, its links %d", p.Name, d.Bytes, sum)
		}
		if d.Utilization <= 0 || d.Utilization > 1 {
			t.Errorf("%s: ssd utilisation %g", p.Name, d.Utilization)
		}
		if !(p.TTFTms.OrNaN().Mean >= b.Policies[i].TTFTms.OrNaN().Mean) { // NaN (no request completed) fails too
			t.Errorf("%s: mean TTFT %.1f ms shared < %.1f ms separate", p.Name, p.TTFTms.OrNaN().Mean, b.Policies[i].TTFTms.OrNaN().Mean)
		}
	}
	// --set gives what editing the file gives.
	c := simulate(t, shared, "--limit", "800", "--set", "tier.ssd.shared_bandwidth=false")
	if len(c.Overrides) != 1 || !strings.Contains(c.Description, "overrides: tier.ssd.shared_bandwidth=false") {
		t.Errorf("overrides %q not recorded; description:\n%s", c.Overrides, c.Description)
	}
	c.Overrides = nil
	if stripRun(t, c) != stripRun(t, b) {
		t.Error("--set tier.ssd.shared_bandwidth=false differs from deleting the line")
	}
	if !(a.Policies[0].TTFTms.OrNaN().P90 > b.Policies[0].TTFTms.OrNaN().P90) {
		t.Errorf("write-back: shared p90 %.1f ms not above separate %.1f ms", a.Policies[0].TTFTms.OrNaN().P90, b.Policies[0].TTFTms.OrNaN().P90)
	}
}

// TestSpeedupSet: workload.speedup replays the same requests in less time.
func TestSpeedupSet(t *testing.T) {
	trace, _ := filepath.Abs("../../traces/synthetic.jsonl")
	body, err := os.ReadFile("../../scenarios/quickstart.toml")
	if err != nil {
		t.Fatal(err)
	}
	scen := strings.Replace(string(body), `"../traces/synthetic.jsonl"`, strconv.Quote(trace), 1)
	a := simulate(t, scen, "--limit", "500")
	b := simulate(t, scen, "--limit", "500", "--set", "workload.speedup=4")
	if a.Trace.Speedup != 1 || b.Trace.Speedup != 4 || a.Trace.Requests != b.Trace.Requests || a.Trace.BlockAccesses != b.Trace.BlockAccesses {
		t.Fatalf("trace: %+v vs %+v", a.Trace, b.Trace)
	}
	if r := a.Trace.DurationS / b.Trace.DurationS; r < 3.999 || r > 4.001 {
		t.Errorf("duration %g s at 1x, %g s at 4x", a.Trace.DurationS, b.Trace.DurationS)
	}
}
