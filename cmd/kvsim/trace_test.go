package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"kvsim/experiment"
	"kvsim/mrc"
	"kvsim/results"
	"kvsim/trace"
	"kvsim/workload"
)

// statsFixture: 4 requests, 8 references to 5 blocks; the reuses are at
// stack distances 2, 2 and 4.
const statsFixture = `{"timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]}
{"timestamp": 500, "input_length": 1536, "output_length": 20, "hash_ids": [1, 2, 3]}
{"timestamp": 2500, "input_length": 512, "output_length": 30, "hash_ids": [4]}
{"timestamp": 3000, "input_length": 1024, "output_length": 40, "hash_ids": [1, 5]}
`

// The text and the JSON of kvsim trace stats on a fixture worked by hand.
func TestTraceStatsGolden(t *testing.T) {
	p := writeFile(t, t.TempDir(), "s.jsonl", statsFixture)
	stdout, stderr, code := runKvsim("trace", "stats", p)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	want := `s.jsonl (mooncake, 512-token blocks)
requests         4
span             3.0 s
arrival rate     1.33 requests/s
burstiness       inter-arrival CV 0.87, peak/mean over 1 s windows 2.00
input tokens     mean 1024, p50 1024, p90 1536, p99 1536, max 1536
output tokens    mean 25, p50 20, p90 40, p99 40, max 40
block accesses   8
distinct blocks  5
hit ceiling      37.5% (infinite cache; a block's first reference misses)
reuse distance   p50 2, p90 4, p99 4 distinct blocks (3 reuses)
LRU hit ratio by cache size (percent of distinct blocks):
  size  blocks    hit
    1%       1   0.0%
    5%       1   0.0%
   10%       1   0.0%
   25%       1   0.0%
   50%       2  25.0%
`
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	stdout, _, code = runKvsim("trace", "stats", "--json", p)
	var s experiment.TraceStats
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("status %d, %v:\n%s", code, err, stdout)
	}
	if s.Requests != 4 || s.BlockAccesses != 8 || s.DistinctBlocks != 5 || s.HitCeiling != 0.375 || s.Reuses != 3 ||
		*s.ReuseDistance != (experiment.Distances{P50: 2, P90: 4, P99: 4}) || s.SpanS != 3 || math.Abs(*s.InterarrivalCV-math.Sqrt(0.75)) > 1e-9 ||
		*s.PeakToMean1s != 2 || *s.InputTokens != (experiment.Lengths{Mean: 1024, P50: 1024, P90: 1536, P99: 1536, Max: 1536}) ||
		len(s.LRU) != 5 || s.LRU[4] != (experiment.LRUPoint{SizePercent: 50, SizeBlocks: 2, HitRatio: 0.25}) {
		t.Errorf("json:\n%s", stdout)
	}
	// The JSON keys the documentation lists.
	for _, k := range []string{`"file"`, `"format"`, `"block_tokens"`, `"requests"`, `"skipped_lines"`, `"span_s"`, `"rate_per_s"`,
		`"interarrival_cv"`, `"peak_to_mean_1s"`, `"input_tokens"`, `"output_tokens"`, `"requests_without_ids"`, `"block_accesses"`,
		`"distinct_blocks"`, `"hit_ceiling"`, `"reuses"`, `"reuse_distance_blocks"`, `"lru"`, `"size_percent"`, `"size_blocks"`, `"hit_ratio"`} {
		if !strings.Contains(stdout, k) {
			t.Errorf("json lacks %s", k)
		}
	}
}

// The shipped trace's figures, as traces/README.md and the README give
// them.
func TestTraceStatsShipped(t *testing.T) {
	stdout, stderr, code := runKvsim("trace", "stats", "--json", "../../traces/synthetic.jsonl")
	var s experiment.TraceStats
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("status %d, %v: %s", code, err, stderr)
	}
	if s.Requests != 2000 || s.BlockAccesses != 29450 || s.DistinctBlocks != 13699 || math.Abs(s.HitCeiling-0.535) > 0.0005 {
		t.Errorf("%+v", s)
	}
}

func TestTraceBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.jsonl", statsFixture)
	bad := writeFile(t, dir, "bad.jsonl", statsFixture+`{"timestamp": 4000, "input_length": 1024, "output_length": 1, "hash_ids": [1]}`+"\n")
	none := writeFile(t, dir, "none.jsonl", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trace"}, "trace: no subcommand given"},
		{[]string{"trace", "frobnicate"}, `trace: unknown subcommand "frobnicate"`},
		{[]string{"trace", "stats"}, "trace stats: want exactly one trace FILE, got 0"},
		{[]string{"trace", "stats", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl: no such file"},
		{[]string{"trace", "stats", bad}, "bad.jsonl:5: input_length 1024 needs 2 hash_ids, got 1"},
		{[]string{"trace", "stats", "--format", "parquet", good}, `trace stats: --format: unknown trace format "parquet"`},
		{[]string{"trace", "stats", "--block-tokens", "0", good}, "trace stats: --block-tokens: must be in 1.."},
		{[]string{"trace", "stats", "--bogus", good}, "trace stats: flag provided but not defined: -bogus"},
		{[]string{"trace", "fit"}, "trace fit: --trace: required"},
		{[]string{"trace", "fit", "--trace", none}, "none.jsonl has no hash ids to fit to"},
		{[]string{"trace", "fit", "--trace", bad}, "bad.jsonl:5:"},
		{[]string{"trace", "fit", "--trace", good, "--limit", "-1"}, "trace fit: --limit: must be >= 0"},
		{[]string{"trace", "fit", "--trace", good, "extra"}, `trace fit: unexpected argument "extra"`},
	} {
		_, stderr, code := runKvsim(tc.args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: status %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// injectFromTOML reads the [workload.inject] table trace fit prints.
func injectFromTOML(t *testing.T, text string) workload.Inject {
	t.Helper()
	var doc struct {
		Workload struct {
			Inject struct {
				SystemTokens    int     `toml:"system_tokens"`
				Tenants         int     `toml:"tenants"`
				TenantTokens    int     `toml:"tenant_tokens"`
				TenantZipf      float64 `toml:"tenant_zipf"`
				SessionContinue float64 `toml:"session_continue"`
				Sessions        int     `toml:"sessions"`
				SessionGap      int     `toml:"session_gap"`
			}
		}
	}
	md, err := toml.Decode(text, &doc)
	if err != nil {
		t.Fatalf("trace fit printed no TOML: %v\n%s", err, text)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Fatalf("trace fit printed keys %v this test does not know", u)
	}
	in := doc.Workload.Inject
	c := workload.DefaultInject()
	c.SystemTokens, c.Tenants, c.TenantTokens, c.SessionContinue, c.Sessions, c.SessionGap =
		in.SystemTokens, in.Tenants, in.TenantTokens, in.SessionContinue, in.Sessions, in.SessionGap
	if md.IsDefined("workload", "inject", "tenant_zipf") {
		c.TenantZipf = in.TenantZipf
	}
	return c
}

// The check: the parameters trace fit prints for the shipped
// synthetic trace, injected into its requests stripped of their hash ids,
// give an LRU hit ratio within 2 points of the trace's at 1%, 5%, 10% and
// 25% of its distinct blocks (under the fit's seed and another).
func TestTraceFitReproducesSynthetic(t *testing.T) {
	const path = "../../traces/synthetic.jsonl"
	stdout, stderr, code := runKvsim("trace", "fit", "--trace", path)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	c := injectFromTOML(t, stdout)
	if c.SystemTokens != 1024 { // ids 0 and 1 open every request
		t.Errorf("system_tokens %d, want 1024", c.SystemTokens)
	}
	orig, err := experiment.ReadTraceData(context.Background(), path, trace.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	distinct := orig.Profile.Distinct()
	pcts := []float64{1, 5, 10, 25}
	sizes := make([]int, len(pcts))
	for i, p := range pcts {
		sizes[i] = int(p / 100 * float64(distinct))
	}
	want := lruHitRatios(orig.IDs, orig.Starts, sizes)
	for _, seed := range []int64{1, 2} {
		// Stripped: only the token counts go in.
		ids, starts, err := workload.Injected(c, seed, trace.DefaultBlockTokens, orig.Shapes)
		if err != nil {
			t.Fatal(err)
		}
		got := lruHitRatios(ids, starts, sizes)
		for i := range sizes {
			if d := math.Abs(got[i] - want[i]); d > 0.02 {
				t.Errorf("seed %d, %g%% of distinct (%d blocks): LRU hit %.2f%%, trace %.2f%%: %.2f points apart, want <= 2",
					seed, pcts[i], sizes[i], 100*got[i], 100*want[i], 100*d)
			}
		}
		t.Logf("seed %d: LRU hit at %v%% of distinct: injected %.3f, trace %.3f", seed, pcts, got, want)
	}
}

// lruHitRatios is an LRU cache's hit ratio at each size over the requests
// ids[starts[r]:starts[r+1]], by mrc's one-pass stack.
func lruHitRatios(ids []int64, starts []int32, sizes []int) []float64 {
	reqs := make([][]int64, len(starts)-1)
	for r := range reqs {
		reqs[r] = ids[starts[r]:starts[r+1]]
	}
	st := mrc.NewStack(mrc.FromRequests(reqs))
	out := make([]float64, len(sizes))
	for i, n := range sizes {
		if c := st.Counts(n); c.Accesses > 0 {
			out[i] = float64(c.Hits) / float64(c.Accesses)
		}
	}
	return out
}

// kvsim run says what the trace is before simulating, and warns when no
// block repeats.
func TestRunTraceLine(t *testing.T) {
	dir := t.TempDir()
	tr := writeFile(t, dir, "once.jsonl", `{"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}
{"timestamp": 1000, "input_length": 600, "output_length": 10, "hash_ids": [3, 4]}
`)
	scen := writeFile(t, dir, "s.toml", scenarioTOML("s", tr, "40GiB", "", "lru"))
	_, stderr, code := runKvsim("run", "--out", filepath.Join(dir, "out"), scen)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	want := "kvsim: scenario s: trace: 2 requests over 1 s (2/s, inter-arrival CV -, peak/mean 1s 1.00), 4 block accesses, 4 distinct blocks, infinite-cache hit ceiling 0.0%\n" +
		"kvsim: warning: scenario s: no block of the trace is referenced twice: no cache can hit, every policy ties\n"
	if !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr:\n%s\nwant it to start with:\n%s", stderr, want)
	}
	// With reuse: the line, no warning; --quiet: neither.
	scen = writeFile(t, dir, "r.toml", scenarioTOML("r", shippedTrace(t), "40GiB", "", "lru"))
	_, stderr, _ = runKvsim("run", "--limit", "50", "--out", filepath.Join(dir, "out"), scen)
	if !strings.Contains(stderr, "kvsim: scenario r: trace: 50 requests over") || strings.Contains(stderr, "warning") {
		t.Errorf("stderr:\n%s", stderr)
	}
	_, stderr, _ = runKvsim("run", "--quiet", "--limit", "50", "--out", filepath.Join(dir, "out"), scen)
	if stderr != "" {
		t.Errorf("--quiet: stderr %q", stderr)
	}
}

// shippedTrace is traces/synthetic.jsonl, absolute: scenarios in
// temporary folders name it.
func shippedTrace(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../traces/synthetic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const injectTable = `
[workload.inject]
replace = true
system_tokens = 1024
session_continue = 0.8
sessions = 200
session_gap = 60
`

// A run with [workload.inject] replays injected ids, the same ones every
// time, and says so in summary.json.
func TestRunInject(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "i.toml", scenarioTOML("i", shippedTrace(t), "4GiB", "", "lru", "fifo")+injectTable)
	var csv [2][]byte
	for k := range csv {
		out := filepath.Join(dir, "out", string(rune('a'+k)))
		_, stderr, code := runKvsim("run", "--quiet", "--limit", "400", "--out", out, p)
		if code != 0 {
			t.Fatalf("status %d: %s", code, stderr)
		}
		s, err := results.ReadSummary(filepath.Join(out, "i", "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		want := results.Inject{Replace: true, SystemTokens: 1024, TenantZipf: 1, SessionContinue: 0.8, Sessions: 200, SessionGap: 60}
		if s.Trace.Inject == nil || *s.Trace.Inject != want || s.Trace.InjectedRequests != 400 {
			t.Errorf("summary trace %+v, inject %+v", s.Trace, s.Trace.Inject)
		}
		if s.Policies[0].HitRatio <= 0 || s.Trace.DistinctBlocks >= s.Trace.BlockAccesses {
			t.Errorf("no reuse in the injected trace: %+v", s.Trace)
		}
		if csv[k], err = os.ReadFile(filepath.Join(out, "i", "requests.csv")); err != nil {
			t.Fatal(err)
		}
	}
	if string(csv[0]) != string(csv[1]) {
		t.Error("two runs of one injected scenario differ")
	}
	// Without the table the trace's own ids: no inject in summary.json.
	s := simulate(t, scenarioTOML("n", shippedTrace(t), "4GiB", "", "lru"), "--limit", "400")
	if s.Trace.Inject != nil || s.Trace.InjectedRequests != 0 {
		t.Errorf("no [workload.inject], summary says %+v", s.Trace)
	}
}

// kvsim sweep varies an injection parameter: a band of hit ratios, each
// point's summary naming its value.
func TestSweepInject(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "i.toml", scenarioTOML("i", shippedTrace(t), "80GiB", "", "lru")+injectTable)
	out := filepath.Join(dir, "out")
	_, stderr, code := runKvsim("sweep", "--quiet", "--vary", "workload.inject.session_continue", "--values", "0,0.9", "--limit", "400", "--out", out, p)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	var hit [2]float64
	for i, v := range []string{"0", "0.9"} {
		s, err := results.ReadSummary(filepath.Join(out, "i-workload.inject.session_continue-"+v, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if s.Sweep == nil || s.Sweep.Value != v || s.Trace.Inject == nil || s.Trace.Inject.SessionContinue != []float64{0, 0.9}[i] {
			t.Errorf("%s: sweep %+v inject %+v", v, s.Sweep, s.Trace.Inject)
		}
		hit[i] = s.Policies[0].HitRatio
	}
	if !(hit[1] > hit[0]+0.1) {
		t.Errorf("hit ratio %.3f at session_continue 0, %.3f at 0.9: want sessions to add reuse", hit[0], hit[1])
	}
	// A value out of range: one line, exit 2, nothing simulated.
	_, stderr, code = runKvsim("sweep", "--vary", "workload.inject.sessions", "--values", "8,0", "--out", filepath.Join(dir, "bad"), p)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "workload.inject: sessions: must be >= 1") {
		t.Errorf("status %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); err == nil {
		t.Error("a sweep with a bad value wrote results")
	}
}

// trace stats --inject reads the table trace fit prints and shows the
// trace as injected; a bad table is one line, exit 2.
func TestTraceStatsInject(t *testing.T) {
	dir := t.TempDir()
	tr := writeFile(t, dir, "s.jsonl", statsFixture)
	table := writeFile(t, dir, "fit.toml", "# a comment\n[workload.inject]\nreplace = true\nsystem_tokens = 512\n")
	stdout, stderr, code := runKvsim("trace", "stats", "--json", "--inject", table, tr)
	var s experiment.TraceStats
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("status %d, %v: %s", code, err, stderr)
	}
	// Every request opens with the one-block system prompt; no sessions
	// continue (session_continue 0): the other 4 references are new.
	if s.InjectedRequests != 4 || s.BlockAccesses != 8 || s.DistinctBlocks != 5 {
		t.Errorf("injected stats %+v", s)
	}
	// Without replace the fixture's own ids stay.
	table = writeFile(t, dir, "keep.toml", "[workload.inject]\nsystem_tokens = 512\n")
	stdout, _, _ = runKvsim("trace", "stats", "--inject", table, tr)
	if strings.Contains(stdout, "injected") || !strings.Contains(stdout, "distinct blocks  5") {
		t.Errorf("without replace:\n%s", stdout)
	}
	for _, tc := range []struct{ body, want string }{
		{"[workload]\nx = 1\n", "has no [workload.inject] table"},
		{"[workload.inject]\nsesions = 2\n", `unknown key "sesions" in [workload.inject]`},
		{"[workload.inject]\nsessions = 0\n", "bad.toml:2: workload.inject: sessions: must be >= 1"},
		{"[workload.inject]\nsessions = \"x\"\n", "bad.toml"},
		{"[workload.inject\n", "to end table name"},
	} {
		bad := writeFile(t, dir, "bad.toml", tc.body)
		_, stderr, code := runKvsim("trace", "stats", "--inject", bad, tr)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: status %d, stderr %q, want %q", tc.body, code, stderr, tc.want)
		}
	}
	_, stderr, code = runKvsim("trace", "stats", "--inject", filepath.Join(dir, "none.toml"), tr)
	if code != 2 || !strings.Contains(stderr, "none.toml: no such file") {
		t.Errorf("missing table file: %d %q", code, stderr)
	}
}

// FuzzTraceStatsInject: any --inject file and trace give stats or one
// line and exit 2, never a panic.
func FuzzTraceStatsInject(f *testing.F) {
	f.Add("[workload.inject]\nreplace = true\nsystem_tokens = 512\nsession_continue = 0.5\nsessions = 2\n", statsFixture)
	f.Add("[workload.inject]\ntenants = 3\ntenant_tokens = 100\ntenant_zipf = 2.5\n", statsFixture)
	f.Add("[workload]\n", "")
	dir := f.TempDir()
	table, tr := filepath.Join(dir, "t.toml"), filepath.Join(dir, "t.jsonl")
	f.Fuzz(func(t *testing.T, toml, text string) {
		if err := os.WriteFile(table, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tr, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runKvsim("trace", "stats", "--inject", table, tr)
		if code != 0 && (code != 2 || strings.Count(stderr, "\n") != 1) {
			t.Fatalf("status %d, stderr %q", code, stderr)
		}
	})
}

// An interrupted fit stops (exit 130) instead of searching on.
func TestTraceFitInterrupted(t *testing.T) {
	p := writeFile(t, t.TempDir(), "s.jsonl", statsFixture)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb strings.Builder
	err := run(ctx, []string{"trace", "fit", "--trace", p}, &out, &errb)
	if code := exitCode(err, &errb); code != 130 || out.Len() != 0 {
		t.Errorf("status %d, stdout %q: want 130 and nothing printed", code, out.String())
	}
}
