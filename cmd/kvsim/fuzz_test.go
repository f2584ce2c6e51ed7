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
	c := genCase(3)
	for _, edit := range [][2]string{
		{"[gpu]\n", "[gpu]\nattention_ns_per_token2 = 1e300\n"},
		{"[workload]\n", "[workload]\nspeedup = 1e-300\n"},
		{"[[tier]]\nkind = \"hbm\"\n", "[[tier]]\nkind = \"hbm\"\nlatency = \"100000h\"\n"},
	} {
		f.Add(strings.Replace(c.toml, edit[0], edit[1], 1), c.traceText(nil))
	}
	f.Add(c.toml+"\n[workload.inject]\nreplace = true\nsystem_tokens = 700\nsession_continue = 0.5\nsessions = 3\n", c.traceText(nil))
	f.Add(c.toml, `{"timestamp": 9223372036854, "input_length": 1, "output_length": 70368744177664, "hash_ids": [1]}`+"\n")
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
