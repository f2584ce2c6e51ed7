package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/results"
	"kvsim/validate"
)

// validateScenario is the shipped calibration scenario.
const validateScenario = "../../scenarios/validate-rtxpro6000-llama-3.1-8b.toml"

// validCSV is a small run in the plain CSV format.
const validCSV = validate.CSVHeader + `
0.000,1200,40,0.120,1.400
0.150,300,1,0.050,0.050
0.400,2400,120,0.300,4.100
`

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	recs := writeFile(t, dir, "run.csv", validCSV)
	js, page := filepath.Join(dir, "v.json"), filepath.Join(dir, "v.html")
	args := []string{"validate", "--scenario", validateScenario, "--json", js, "--html", page, recs}
	stdout, stderr, code := runKvsim(args...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"TTFT", "TPOT", "E2E", "MAPE", "KS", "wrote " + js} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	first, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var r validate.Result
	if err := json.Unmarshal(first, &r); err != nil || r.Kind != validate.Kind || len(r.PerRequest) != 3 || r.TPOT.Requests != 2 {
		t.Fatalf("JSON: %v, kind %q, %d requests, TPOT over %d", err, r.Kind, len(r.PerRequest), r.TPOT.Requests)
	}
	if !results.IsPage(page) || !validate.IsResult(js) {
		t.Fatal("the outputs do not carry kvsim's marks")
	}
	// A second run replaces its own files with the same bytes.
	if _, stderr, code := runKvsim(args...); code != 0 {
		t.Fatalf("again: exit %d: %s", code, stderr)
	}
	if again, _ := os.ReadFile(js); !bytes.Equal(again, first) {
		t.Error("the same inputs gave a different JSON")
	}
	// A threshold turns a large error into exit 1, in one line, after
	// the outputs are written.
	os.Remove(js)
	_, stderr, code = runKvsim("validate", "--quiet", "--max-mean-error", "1", "--json", js, "--scenario", validateScenario, recs)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--max-mean-error 1%") {
		t.Errorf("--max-mean-error 1: exit %d, %q; want 1 and one line", code, stderr)
	}
	if !validate.IsResult(js) {
		t.Error("--json not written before the threshold failed")
	}
	if _, stderr, code := runKvsim("validate", "--quiet", "--max-mean-error", "1000", "--max-mape", "1000", "--scenario", validateScenario, recs); code != 0 {
		t.Errorf("generous thresholds: exit %d, %s", code, stderr)
	}
	// An engine setting the run recorded and the scenario does not share
	// is a warning, not a silent fix.
	bench := filepath.Join(dir, "bench")
	os.Mkdir(bench, 0o755)
	writeFile(t, bench, "requests.jsonl", `{"input_toks": 100, "output_toks": 3, "queued_ts": 5.0, "first_token_ts": 5.1, "last_token_ts": 5.2}`+"\n")
	writeFile(t, bench, "meta.json", `{"engine_kwargs": {"tensor_parallel_size": 2, "max_num_seqs": 128, "max_num_batched_tokens": 8192}}`)
	_, stderr, code = runKvsim("validate", "--quiet", "--scenario", validateScenario, bench)
	if code != 0 || !strings.Contains(stderr, "kvsim: warning: the run recorded max_num_batched_tokens = 8192") || !strings.Contains(stderr, "tp = 2") || strings.Contains(stderr, "max_num_seqs =") {
		t.Errorf("mismatched engine: exit %d, stderr %q", code, stderr)
	}
}

// Bad input is one line naming the file, line and field (or the flag),
// and exit 2, before anything is written.
func TestValidateBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.csv", validCSV)
	bench := filepath.Join(dir, "bench")
	os.Mkdir(bench, 0o755)
	writeFile(t, bench, "requests.jsonl", `{"input_toks": 100, "output_toks": 3, "queued_ts": 5.0, "first_token_ts": 5.1, "last_token_ts": 5.2}`+"\n"+
		`{"input_toks": 100, "output_toks": 3, "queued_ts": 5.0, "last_token_ts": 5.2}`+"\n")
	benchMeta := filepath.Join(dir, "bench2")
	os.Mkdir(benchMeta, 0o755)
	writeFile(t, benchMeta, "requests.jsonl", `{"input_toks": 100, "output_toks": 3, "queued_ts": 5.0, "first_token_ts": 5.1, "last_token_ts": 5.2}`+"\n")
	writeFile(t, benchMeta, "meta.json", "{\n  \"engine_kwargs\": {\n    \"max_num_seqs\": \"many\"\n  }\n}\n")
	vllmLen := writeFile(t, dir, "len.json", "{\n  \"input_lens\": [1, 2],\n  \"output_lens\": [3, 4],\n  \"ttfts\": [0.1],\n  \"latencies\": [1, 2],\n  \"start_times\": [0, 1]\n}\n")
	vllmBad := writeFile(t, dir, "bad.json", "{\n  \"input_lens\": [1, 2],\n  \"output_lens\": [3, 4],\n  \"ttfts\": [0.1,\n    \"x\"],\n  \"latencies\": [1, 2],\n  \"start_times\": [0, 1]\n}\n")
	vllmArr := writeFile(t, dir, "arr.json", "{\n  \"input_lens\": [1],\n  \"output_lens\": [3],\n  \"ttfts\": [0.1],\n  \"itls\": [[0.1, 0.2]]\n}\n")
	csvBad := writeFile(t, dir, "bad.csv", validate.CSVHeader+"\n0,10,2,0.1,0.2\n0,10,2,0.1,oops\n")
	csvHead := writeFile(t, dir, "head.csv", "arrival_s,input_tokens,output_tokens,ttft_s\n0,1,1,0,0\n")
	csvOrder := writeFile(t, dir, "order.csv", validate.CSVHeader+"\n0,10,2,0.3,0.2\n")
	notOurs := writeFile(t, dir, "notes.json", `{"mine": true}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bench missing field", []string{bench}, filepath.Join(bench, "requests.jsonl") + ":2: first_token_ts: missing"},
		{"meta", []string{benchMeta}, filepath.Join(benchMeta, "meta.json") + ":3: engine_kwargs.max_num_seqs: \"many\""},
		{"vllm length", []string{vllmLen}, vllmLen + ":4: ttfts: 1 entries, but input_lens has 2"},
		{"vllm entry", []string{vllmBad}, vllmBad + ":5: ttfts[1]: \"x\": not a time in seconds"},
		{"vllm no arrivals", []string{vllmArr}, vllmArr + ": start_times: missing, and no request_rate"},
		{"csv field", []string{csvBad}, csvBad + ":3: e2e_s: \"oops\": not a time in seconds"},
		{"csv header", []string{csvHead}, csvHead + ":1: e2e_s: missing from the header"},
		{"csv order", []string{csvOrder}, csvOrder + ":2: e2e_s: the last token"},
		{"no file", []string{filepath.Join(dir, "none.csv")}, filepath.Join(dir, "none.csv") + ": "},
		{"format", []string{"--format", "xml", good}, `--format "xml": one of bench, vllm, csv`},
		{"policy", []string{"--policy", "nope", good}, `--policy "nope"`},
		{"set", []string{"--set", "gpu.memory_efficiency=2", good}, "memory_efficiency"},
		{"json not ours", []string{"--json", notOurs, good}, "validate: --json " + notOurs + ": exists and was not written by kvsim"},
		{"json is input", []string{"--json", good, good}, "validate: --json " + good + ": is the records"},
		{"html is json", []string{"--json", filepath.Join(dir, "o"), "--html", filepath.Join(dir, "o"), good}, "is --html"},
		{"threshold", []string{"--max-mean-error", "-1", good}, "--max-mean-error: want a percentage >= 0"},
		{"two", []string{good, good}, "one set of records at a time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"validate", "--scenario", validateScenario}, tc.args...)
			stdout, stderr, code := runKvsim(args...)
			if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want 2 and one line with %q", code, stderr, stdout, tc.want)
			}
		})
	}
	if _, stderr, code := runKvsim("validate", good); code != 2 || !strings.Contains(stderr, "--scenario: required") {
		t.Errorf("no scenario: exit %d, %q", code, stderr)
	}
	if b, _ := os.ReadFile(notOurs); string(b) != `{"mine": true}` {
		t.Error("a file kvsim did not write was changed")
	}
}

// Interrupted, validate stops with exit 130 and writes nothing.
func TestValidateInterrupted(t *testing.T) {
	dir := t.TempDir()
	recs := writeFile(t, dir, "run.csv", validCSV)
	js := filepath.Join(dir, "v.json")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := exitCode(run(ctx, []string{"validate", "--scenario", validateScenario, "--json", js, recs}, &out, &errb), &errb)
	if code != 130 || errb.String() != "kvsim: interrupted\n" {
		t.Errorf("exit %d, %q; want 130", code, errb.String())
	}
	if _, err := os.Stat(js); err == nil {
		t.Error("an interrupted validate wrote --json")
	}
}
