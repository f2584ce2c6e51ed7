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
	} {
		if _, stderr, code := runKvsim(bad...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: status %d, %q", bad, code, stderr)
		}
	}
}
