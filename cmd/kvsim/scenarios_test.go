package main

import (
	"os"
	"path/filepath"
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
