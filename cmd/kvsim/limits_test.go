package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"kvsim/results"
)

// TestRunNothingSimulated: a run in which no request completed (an empty
// trace, every line skipped, every request too big for HBM) used to exit 0
// and print TTFT 0.0. It now warns with the cause, shows "-", writes null
// latencies, and exits 2: the input is what has to change.
func TestRunNothingSimulated(t *testing.T) {
	dir := t.TempDir()
	good := `{"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}` + "\n"
	for _, tc := range []struct {
		name, trace, hbm string
		extra            []string
		why              string
	}{
		{"empty trace", "", "40GiB", nil, "the trace has no requests"},
		{"blank lines", "\n \n", "40GiB", nil, "the trace has no requests"},
		{"all skipped", "nonsense\n{}\n", "40GiB", []string{"--skip-bad-lines"},
			"all 2 lines of the trace were malformed and skipped (the first: " + filepath.Join(dir, "all skipped.jsonl") + ":1: invalid JSON: unexpected 'o' at column 2)"},
		{"all rejected", good + good, "1MiB", nil,
			`all 2 requests were rejected: each needs more HBM for its prompt and output KV than tier "hbm" holds (1 MiB)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := writeFile(t, dir, tc.name+".jsonl", tc.trace)
			scen := writeFile(t, dir, "s.toml", scenarioTOML("s", tr, tc.hbm, "", "lru", "fifo"))
			out := filepath.Join(dir, "out-"+tc.name)
			stdout, stderr, code := runKvsim(append([]string{"run", "--out", out, scen}, tc.extra...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			want := "kvsim: warning: scenario s: no request completed: " + tc.why + "\n" +
				"kvsim: run: nothing was simulated in scenario s (see the warning above)\n"
			// The trace's summary line comes first (checked in trace_test.go).
			if first, rest, _ := strings.Cut(stderr, "\n"); strings.HasPrefix(first, "kvsim: scenario s: trace: ") {
				stderr = rest
			}
			if stderr != want {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
			}
			for _, row := range strings.Split(stdout, "\n")[2:4] { // the lru and fifo rows
				if f := strings.Fields(row); len(f) < 10 || f[5] != "-" || f[6] != "-" || f[7] != "-" || f[8] != "-" {
					t.Errorf("row %q: TTFT and queue not shown as -", row)
				}
			}
			b, err := os.ReadFile(filepath.Join(out, "s", "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var raw struct {
				Policies []map[string]json.RawMessage `json:"policies"`
			}
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			for _, p := range raw.Policies {
				if string(p["ttft_ms"]) != "null" || string(p["queue_ms"]) != "null" {
					t.Errorf("ttft_ms %s queue_ms %s, want null", p["ttft_ms"], p["queue_ms"])
				}
			}
			if _, err := os.Stat(filepath.Join(out, "s", "report.html")); err != nil {
				t.Errorf("no report: %v", err)
			}
		})
	}

	// Beside a scenario that simulated something, the run still exits 2
	// and names the one that did not; the other's results are intact.
	tr := writeFile(t, dir, "good.jsonl", good)
	a := writeFile(t, dir, "a.toml", scenarioTOML("a", tr, "40GiB", "", "lru"))
	b := writeFile(t, dir, "b.toml", scenarioTOML("b", tr, "1MiB", "", "lru"))
	_, stderr, code := runKvsim("run", "--quiet", "--out", filepath.Join(dir, "two"), a, b)
	if code != 2 || !strings.HasSuffix(stderr, "kvsim: run: nothing was simulated in scenario b (see the warning above)\n") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	s, err := results.ReadSummary(filepath.Join(dir, "two", "a", "summary.json"))
	if err != nil || s.Policies[0].TTFTms == nil || s.Policies[0].TTFTms.P50 <= 0 {
		t.Errorf("scenario a: %v %+v", err, s)
	}
}

// TestPrintTableNull: printTable shows a policy without latencies as "-"
// beside one with them, never 0.0; TPOT gets two decimals, and the SLO
// column appears only with an [slo].
func TestPrintTableNull(t *testing.T) {
	att := 0.5
	s := &results.Summary{Scenario: "x", Tiers: []results.Tier{{Name: "hbm"}}, Policies: []results.Policy{
		{Name: "lru", Hits: map[string]int64{"hbm": 3}, TTFTms: &results.Quantiles{P50: 1.25, P90: 2, P99: 3}, QueueMs: &results.Quantiles{P99: 0.5},
			TPOTms: &results.Quantiles{P50: 0.125, P99: 7.5}, Preemptions: 6, SLOAttainment: &att},
		{Name: "fifo", Hits: map[string]int64{}, Rejected: 4},
	}}
	var b bytes.Buffer
	printTable(&b, s)
	lines := strings.Split(b.String(), "\n")
	if f := strings.Fields(lines[1]); strings.Join(f[7:], " ") != "TTFT p50 ms p90 p99 TPOT p50 ms p99 queue p99 ms moved GiB preempt rejected" {
		t.Errorf("header %q", lines[1])
	}
	if f := strings.Fields(lines[2]); strings.Join(f[5:13], " ") != "1.2 2.0 3.0 0.12 7.50 0.5 0.0 6" {
		t.Errorf("lru row %q", lines[2])
	}
	if f := strings.Fields(lines[3]); strings.Join(f[5:11], " ") != "- - - - - -" || f[12] != "0" || f[13] != "4" {
		t.Errorf("fifo row %q", lines[3])
	}
	s.SLO = &results.SLO{TTFTms: 100}
	b.Reset()
	printTable(&b, s)
	lines = strings.Split(b.String(), "\n")
	if !strings.HasSuffix(lines[1], "SLO met") || !strings.HasSuffix(lines[2], "50.0%") || !strings.HasSuffix(lines[3], " -") {
		t.Errorf("SLO column:\n%s", b.String())
	}
}

// TestRunTimeArithmetic: hostile times give one-line errors naming the
// field, or correct results; never wrapped, negative times or a hang.
func TestRunTimeArithmetic(t *testing.T) {
	dir := t.TempDir()
	line := func(ts, out string) string {
		return `{"timestamp": ` + ts + `, "input_length": 1000, "output_length": ` + out + `, "hash_ids": [1, 2]}` + "\n"
	}
	// Epoch milliseconds slowed down 10x wrapped int64 (negative arrivals,
	// TTFT 0.0). Rebased to the first request, the second arrives 10 s later.
	epoch := writeFile(t, dir, "epoch.jsonl", line("1732900000000", "10")+line("1732900001000", "10"))
	scen := writeFile(t, dir, "epoch.toml", scenarioTOML("epoch", epoch, "40GiB", "", "lru"))
	_, stderr, code := runKvsim("run", "--quiet", "--out", filepath.Join(dir, "out"), "--set", "workload.speedup=0.1", scen)
	if code != 0 {
		t.Fatalf("epoch trace: exit %d: %s", code, stderr)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "epoch", "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(csv)), "\n")
	// Batched under the old rates: a step is 20 ms (one token at 50 tokens/s)
	// plus 5 ms for 1000 prompt tokens at 200,000 tokens/s.
	if len(rows) != 3 || !strings.HasPrefix(rows[1], "lru,0,0,0,0,0,25,25,") || !strings.HasPrefix(rows[2], "lru,1,10000,0,0,0,") {
		t.Errorf("requests.csv:\n%s", csv)
	}

	for _, tc := range []struct {
		name, trace string
		sets        []string
		want        string
	}{
		// Spun forever in the sampler before.
		{"timestamp near int64", line("0", "10") + line("9223372036000", "10"), nil,
			"TRACE:2: timestamp 9223372036000 ms is 292.3 years after the first request's (0 ms): past the simulated-time limit of 146.1 years"},
		{"speedup", line("1732900000000", "10") + line("1732900001000", "10"), []string{"workload.speedup=1e-300"},
			"TRACE:2: timestamp 1732900001000 ms is 1 s after the first request's (1732900000000 ms), 3.169e+292 years at workload.speedup 1e-300: past the simulated-time limit of 146.1 years"},
		// Admitted before, with a negative completion time.
		{"output_length 2^46", line("0", "70368744177664"), nil, "TRACE:1: output_length out of range (at most 2147483647 tokens)"},
		{"decode rate at load", line("0", "10"), []string{"gpu.decode_tokens_per_s=1e-300"},
			"SCEN (--set): gpu: decode_tokens_per_s: 1e-300 tokens/s takes forever per token, past the simulated-time limit of 146 years (2^62 ns)"},
		// Fine per token, too slow for this request: found at run time.
		{"decode rate at run time", line("0", "10"), []string{"gpu.decode_tokens_per_s=1e-9", "gpu.engine=simple"},
			"SCEN: gpu.decode_tokens_per_s: decoding 10 tokens at 1e-09 tokens/s takes 316.9 years, past the simulated-time limit of 146.1 years (request at TRACE:1)"},
		// Batched, the old rates are the step model's terms: the decode rate's
		// is the one-step term, and the fifth 31.7-year step passes the limit.
		{"decode rate at run time, batched", line("0", "10"), []string{"gpu.decode_tokens_per_s=1e-9"},
			"SCEN: gpu.decode_tokens_per_s: a step starting at 126.8 years (0 prefill tokens, 1 decodes) ends past the simulated-time limit of 146.1 years (request at TRACE:1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := writeFile(t, dir, "t.jsonl", tc.trace)
			scen := writeFile(t, dir, "s.toml", scenarioTOML("s", tr, "40GiB", "", "lru"))
			args := []string{"run", "--quiet", "--out", filepath.Join(dir, "o")}
			for _, s := range tc.sets {
				args = append(args, "--set", s)
			}
			_, stderr, code := runKvsim(append(args, scen)...)
			want := "kvsim: " + strings.NewReplacer("TRACE", tr, "SCEN", scen).Replace(tc.want)
			if code != 2 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
			}
		})
	}

	// A link fine for one block (2.1 years per 64 MiB at 1 B/s) but not for
	// this trace: HBM holds one block, so each request pushes the previous
	// one down, and the 69th demotion would end past the limit.
	var trace strings.Builder
	for i := range 80 {
		trace.WriteString(`{"timestamp": ` + strconv.Itoa(i) + `, "input_length": 512, "output_length": 0, "hash_ids": [` + strconv.Itoa(i) + "]}\n")
	}
	tr := writeFile(t, dir, "slow.jsonl", trace.String())
	scen = writeFile(t, dir, "slow.toml", strings.Replace(scenarioTOML("slow", tr, "64MiB", "1TiB", "lru"), `bandwidth = "25GB/s"`, "bandwidth = 1", 1))
	_, stderr, code = runKvsim("run", "--quiet", "--out", filepath.Join(dir, "o"), scen)
	want := "kvsim: " + scen + ": bandwidth of link hbm->dram: transfers queued on it end past the simulated-time limit of 146.1 years: 1 B/s (2.127 years per 67108864-byte block) is too slow for this trace\n"
	if code != 2 || stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}
