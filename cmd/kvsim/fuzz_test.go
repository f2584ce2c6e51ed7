package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/scenario"
)

// FuzzScenarioRun: any scenario file and trace either fail with one line
// or, once loaded, run to the end with every property of the pipeline
// property test holding (conservation, residency, times in order, a
// bounded number of events). A validated scenario must be runnable.
func FuzzScenarioRun(f *testing.F) {
	for seed := uint64(0); seed < 12; seed++ {
		c := genCase(seed)
		f.Add(c.toml, c.traceText(nil))
	}
	dir := f.TempDir()
	path := filepath.Join(dir, "s.toml")
	f.Fuzz(func(t *testing.T, src, tr string) {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte(tr), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := scenario.Load(path)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, path) {
				t.Fatalf("bad message %q", msg)
			}
			return
		}
		for i, p := range sc.Policies {
			if _, err := runPolicy(sc, i, true); err != nil {
				var fail *failure
				if errors.As(err, &fail) {
					t.Fatalf("policy %s: %v", p.Name, err)
				}
				if msg := err.Error(); strings.ContainsAny(msg, "\n\r") {
					t.Fatalf("policy %s: multi-line error %q", p.Name, msg)
				}
			}
		}
	})
}
