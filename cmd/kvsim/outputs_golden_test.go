package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kvsim/internal/golden"
	"kvsim/internal/testenv"
	"kvsim/results"
	"kvsim/scenario"
)

// goldenOutputs are the files a run writes, each pinned by a hash.
var goldenOutputs = []string{"summary.json", "requests.csv", "report.html"}

// sharedTraceScenarios are the shipped scenarios whose own trace does not
// ship (users download it): they run on the shared conversation trace,
// given as a --set relative to the scenario (outputs hold the path as
// given, so it is the same relative path on every checkout).
var sharedTraceScenarios = []string{"mooncake_conversation", "cluster_conversation", "cluster_pool_conversation"}

// runBlock is summary.json's top-level run block: wall-clock figures and
// the worker count, which measure the machine, not the simulation.
var (
	runBlock  = regexp.MustCompile(`(?m)^  "run": \{\n(?:    "[a-z_]+": [^\n]*\n)*  \}`)
	runValues = regexp.MustCompile(`(?m)^(    "[a-z_]+": )[^,\n]*`)
)

// normalizeOutput zeroes what legitimately differs between two runs of the
// same inputs: only the values of summary.json's run block (report.html
// shows none of them).
func normalizeOutput(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	if name != "summary.json" {
		return b
	}
	locs := runBlock.FindAllIndex(b, -1)
	if len(locs) != 1 {
		t.Fatalf("summary.json: want one top-level run block, found %d", len(locs))
	}
	lo, hi := locs[0][0], locs[0][1]
	blk := runValues.ReplaceAll(b[lo:hi], []byte("${1}0"))
	return slices.Concat(b[:lo], blk, b[hi:])
}

// TestOutputsGolden: every shipped scenario's summary.json, requests.csv
// and report.html are byte-identical to those recorded in
// testdata/outputs (as SHA-256, beside the table the run prints, for
// debugging), so a refactoring that changes any output fails here. A
// scenario without a golden, or a golden without a scenario, fails too.
// Rewrite with: go test ./cmd/kvsim -run TestOutputsGolden -update
func TestOutputsGolden(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("scenarios: %v %v", files, err)
	}
	dir := filepath.Join("testdata", "outputs")
	names := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".toml")
		names[name] = true
		t.Run(name, func(t *testing.T) { outputsGolden(t, f, name, filepath.Join(dir, name+".golden")) })
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "*.golden"))
	for _, g := range stale {
		if names[strings.TrimSuffix(filepath.Base(g), ".golden")] {
			continue
		}
		if golden.Updating() {
			if err := os.Remove(g); err != nil {
				t.Error(err)
			}
			continue
		}
		t.Errorf("%s: no scenario %s.toml; delete it or run -update", g, strings.TrimSuffix(filepath.Base(g), ".golden"))
	}
}

func outputsGolden(t *testing.T, file, name, goldenPath string) {
	// The same relative paths every time: summary.json and report.html
	// hold the scenario's and trace's paths as given.
	// Outputs do not depend on --parallel: use the machine's cores.
	args := []string{"run", "--parallel", strconv.Itoa(max(2, runtime.GOMAXPROCS(0)))}
	if slices.Contains(sharedTraceScenarios, name) {
		// The shared copy only: outputs hold the path as given, so the
		// goldens pin this one.
		abs := testenv.Shared(t, "traces", "conversation_trace.jsonl")
		if testing.Short() {
			t.Skipf("%s: the full conversation trace is slow under -short", name)
		}
		// A --set path is relative to the working directory.
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		tr, err := filepath.Rel(dir, abs)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--set", "workload.trace="+filepath.ToSlash(tr))
	} else {
		sc, err := scenario.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(sc.Workload.Trace); sc.Workload.Gen == nil && err != nil {
			t.Fatalf("%s: trace %s does not ship; name it in sharedTraceScenarios", file, sc.Workload.Trace)
		}
	}
	out := t.TempDir()
	args = append(args, "--out", out, file)
	stdout, stderr, code := runKvsim(args...)
	if code != 0 {
		t.Fatalf("kvsim %s: status %d: %s", strings.Join(args, " "), code, stderr)
	}
	var got bytes.Buffer
	fmt.Fprintf(&got, "# kvsim %s (in cmd/kvsim)\n", strings.Join(slices.Concat([]string{"run", "--parallel", "N"}, args[3:len(args)-3], []string{"--out", "OUT", file}), " "))
	fmt.Fprintf(&got, "# SHA-256 of each output, the values of summary.json's run block (wall clock, workers) zeroed first.\n")
	fmt.Fprintf(&got, "# Rewrite: go test ./cmd/kvsim -run TestOutputsGolden -update\n")
	sums := map[string]string{}
	for _, o := range goldenOutputs {
		b, err := os.ReadFile(filepath.Join(out, name, o))
		if err != nil {
			t.Fatal(err)
		}
		if o == "summary.json" {
			if s, err := results.ReadSummary(filepath.Join(out, name, o)); err != nil {
				t.Error(err)
			} else if err := checkLedger(s); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		h := sha256.Sum256(normalizeOutput(t, o, b))
		sums[o] = hex.EncodeToString(h[:])
		fmt.Fprintf(&got, "sha256 %s %s\n", o, sums[o])
	}
	got.WriteString("\n")
	for l := range strings.Lines(stdout) {
		if !strings.HasPrefix(l, "wrote ") { // names the temporary folder
			got.WriteString(l)
		}
	}
	if golden.Updating() {
		if err := os.MkdirAll(filepath.Dir(goldenPath), 0o755); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(goldenPath); err != nil {
		t.Fatalf("%s: %v (a new scenario needs its golden: go test ./cmd/kvsim -run TestOutputsGolden -update)", name, err)
	} else if !bytes.Equal(want, got.Bytes()) {
		// Name the outputs that moved before golden's line diff.
		wantSums := map[string]string{}
		for l := range strings.Lines(string(want)) {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "sha256" {
				wantSums[f[1]] = f[2]
			}
		}
		for _, o := range goldenOutputs {
			if sums[o] != wantSums[o] {
				t.Errorf("%s: %s changed: sha256 %s, golden %s", name, o, sums[o], wantSums[o])
			}
		}
	}
	golden.Check(t, goldenPath, got.Bytes())
}
