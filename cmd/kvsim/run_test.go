package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"kvsim/internal/testenv"
	"kvsim/results"
)

// needSharedTrace is the conversation trace beside the repository (skips,
// or fails under KVSIM_REQUIRE_ALL, when it is absent).
func needSharedTrace(t testing.TB) string {
	t.Helper()
	return testenv.ConversationTrace(t)
}

// scenarioTOML is an HBM(+DRAM) system for the 128 KiB/token model.
func scenarioTOML(name, tracePath, hbm, dram string, policies ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name = %q\n[model]\nlayers = 32\nkv_heads = 8\nhead_dim = 128\ndtype = \"bf16\"\n", name)
	b.WriteString("[gpu]\nprefill_tokens_per_s = 200000\n")
	fmt.Fprintf(&b, "[[tier]]\nname = \"hbm\"\nkind = \"hbm\"\ncapacity = %q\n", hbm)
	if dram != "" {
		fmt.Fprintf(&b, "[[tier]]\nname = \"dram\"\nkind = \"dram\"\ncapacity = %q\n", dram)
		b.WriteString("[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nbandwidth = \"25GB/s\"\n")
	}
	fmt.Fprintf(&b, "[workload]\ntrace = %q\n", tracePath)
	for _, p := range policies {
		fmt.Fprintf(&b, "[[policy]]\neviction = %q\n", p)
	}
	return b.String()
}

func writeFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runKvsim runs the CLI in-process and returns stdout, stderr and the exit status.
func runKvsim(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func simulate(t *testing.T, scen string, extra ...string) *results.Summary {
	t.Helper()
	dir := t.TempDir()
	p := writeFile(t, dir, "s.toml", scen)
	out := filepath.Join(dir, "out")
	_, stderr, code := runKvsim(append([]string{"run", "--quiet", "--out", out, p}, extra...)...)
	if code != 0 {
		t.Fatalf("kvsim run: status %d: %s", code, stderr)
	}
	var name struct{ Name string }
	_ = name
	ents, _ := os.ReadDir(out)
	if len(ents) != 1 {
		t.Fatalf("want one scenario dir, got %v", ents)
	}
	s, err := results.ReadSummary(filepath.Join(out, ents[0].Name(), "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range s.Policies {
		var hits int64
		for _, h := range pol.Hits {
			hits += h
		}
		if hits+pol.Misses != pol.BlockAccesses {
			t.Errorf("%s: hits %d + misses %d != accesses %d", pol.Name, hits, pol.Misses, pol.BlockAccesses)
		}
		for tier, peak := range pol.PeakUsedBytes {
			for _, ti := range s.Tiers {
				if ti.Name == tier && peak > ti.CapacityBytes {
					t.Errorf("%s: tier %s peaked at %d > capacity %d", pol.Name, tier, peak, ti.CapacityBytes)
				}
			}
		}
	}
	return s
}

// TestConversationFigures checks the trace counts the background document
// gives, and that an HBM holding everything reaches 1 - distinct/accesses.
func TestConversationFigures(t *testing.T) {
	tr := needSharedTrace(t)
	s := simulate(t, scenarioTOML("hbm-only", tr, "60GiB", "", "lru"))
	if s.Trace.Requests != 12031 || s.Trace.BlockAccesses != 288500 || s.Trace.DistinctBlocks != 182790 {
		t.Errorf("trace figures %+v", s.Trace)
	}
	s = simulate(t, scenarioTOML("infinite", tr, "100TiB", "", "lru", "fifo"))
	want := 1 - 182790.0/288500.0
	for _, p := range s.Policies {
		if p.BlockHitRatio != want || p.HitRatio != want {
			t.Errorf("%s: block hit ratio %v, hit ratio %v, want %v", p.Name, p.BlockHitRatio, p.HitRatio, want)
		}
		if p.Requests != 12031 || p.Rejected != 0 {
			t.Errorf("%s: %d requests, %d rejected", p.Name, p.Requests, p.Rejected)
		}
	}
}

// rewriteTrace copies the first n lines of the shared trace, mapping each
// line through f.
func rewriteTrace(t *testing.T, src string, n int, f func(i int, rec map[string]any)) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for i := 0; i < n && sc.Scan(); i++ {
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var rec map[string]any
		if err := d.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		f(i, rec)
		b, _ := json.Marshal(rec)
		out.Write(append(b, '\n'))
	}
	return writeFile(t, t.TempDir(), "trace.jsonl", out.String())
}

// TestLRUMonotoneInCapacity: with requests far apart in time, order and
// overlap no longer depend on capacity, and LRU's inclusion property means
// a bigger tier never hits less.
func TestLRUMonotoneInCapacity(t *testing.T) {
	tr := rewriteTrace(t, needSharedTrace(t), 3000, func(i int, rec map[string]any) {
		rec["timestamp"] = json.Number(fmt.Sprint(i * 3_600_000)) // an hour apart
	})
	prev := -1.0
	for _, hbm := range []string{"16GiB", "32GiB", "64GiB", "128GiB", "512GiB", "2TiB"} {
		s := simulate(t, scenarioTOML("mono", tr, hbm, "", "lru"))
		p := s.Policies[0]
		if p.Rejected != 0 {
			t.Fatalf("%s: %d rejected", hbm, p.Rejected)
		}
		if p.HitRatio < prev {
			t.Errorf("HBM %s: hit ratio %v < %v at the smaller size", hbm, p.HitRatio, prev)
		}
		prev = p.HitRatio
	}
	prev = -1.0
	for _, dram := range []string{"16GiB", "64GiB", "256GiB", "1TiB"} {
		s := simulate(t, scenarioTOML("mono", tr, "16GiB", dram, "lru"))
		p := s.Policies[0]
		if p.HitRatio < prev {
			t.Errorf("DRAM %s: hit ratio %v < %v at the smaller size", dram, p.HitRatio, prev)
		}
		prev = p.HitRatio
	}
}

// stripRun drops the wall-clock part, the run_id and the trace path from
// a summary.
func stripRun(t *testing.T, s *results.Summary) string {
	t.Helper()
	c := *s
	c.Run = results.Run{}
	c.RunID = "" // a hash of the inputs: another trace file, another ID
	c.Trace.Path = ""
	c.Description = ""
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRelabelAndDeterminism: the same inputs give the same summary, and so
// does any bijective renaming of hash ids.
func TestRelabelAndDeterminism(t *testing.T) {
	tr := needSharedTrace(t)
	small := rewriteTrace(t, tr, 4000, func(int, map[string]any) {})
	relabeled := rewriteTrace(t, tr, 4000, func(_ int, rec map[string]any) {
		ids := rec["hash_ids"].([]any)
		for j, v := range ids {
			n, _ := v.(json.Number).Int64()
			ids[j] = json.Number(fmt.Sprint(n*7919 + 1_000_003)) // injective on ints
		}
	})
	a := simulate(t, scenarioTOML("r", small, "20GiB", "100GiB", "lru", "fifo"))
	b := simulate(t, scenarioTOML("r", small, "20GiB", "100GiB", "lru", "fifo"))
	c := simulate(t, scenarioTOML("r", relabeled, "20GiB", "100GiB", "lru", "fifo"))
	if stripRun(t, a) != stripRun(t, b) {
		t.Error("two runs of the same scenario differ")
	}
	if stripRun(t, a) != stripRun(t, c) {
		t.Error("relabelling hash ids changed the results")
	}
	if a.Policies[0].Hits["dram"] == 0 {
		t.Error("the relabel check should exercise DRAM hits")
	}
}

var oneLine = regexp.MustCompile(`^kvsim: [^\n]+\n$`)

// TestBadInput: every kind of bad input is one line on stderr, status 2.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.jsonl", `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}`+"\n")
	badLine := writeFile(t, dir, "bad.jsonl", `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}`+"\n{\"timestamp\": 1,\n")
	badLen := writeFile(t, dir, "len.jsonl", `{"timestamp": 0, "input_length": 6000, "output_length": 5, "hash_ids": [1, 2]}`+"\n")
	base := scenarioTOML("x", good, "1GiB", "4GiB", "lru")
	pooled := strings.Replace(base, "capacity = \"4GiB\"\n", "capacity = \"4GiB\"\nscope = \"cluster\"\n", 1) + "[cluster]\ninstances = 2\n"
	cases := []struct {
		name, toml string
		args       []string
		want       string // substring of the message
	}{
		{"missing scenario", "", []string{"run", filepath.Join(dir, "nope.toml")}, "nope.toml"},
		{"bad toml", "name = \n", nil, "s.toml:1"},
		{"unknown key", strings.Replace(base, "layers = 32", "layers = 32\nlayerz = 3", 1), nil, `"layerz"`},
		{"negative capacity", strings.Replace(base, `"4GiB"`, `"-4GiB"`, 1), nil, "capacity"},
		{"zero bandwidth", strings.Replace(base, `"25GB/s"`, `"0GB/s"`, 1), nil, "bandwidth"},
		{"unknown tier", strings.Replace(base, `to = "dram"`, `to = "ssd"`, 1), nil, `"ssd"`},
		{"missing trace", strings.Replace(base, good, filepath.Join(dir, "none.jsonl"), 1), nil, "none.jsonl"},
		{"malformed line", strings.Replace(base, good, badLine, 1), nil, "bad.jsonl:2:"},
		{"length mismatch", strings.Replace(base, good, badLen, 1), nil, "len.jsonl:1:"},
		{"unknown policy", strings.Replace(base, `eviction = "lru"`, `eviction = "lruu"`, 1), nil, "lruu"},
		{"bad flag", base, []string{"--limit", "x"}, "limit"},
		{"no scenario", "", []string{"run"}, "no scenario"},
		{"set unknown tier", base, []string{"--set", "tier.nope.capacity=1GB"}, `--set tier.nope.capacity: no [[tier]] "nope"`},
		{"set bad value", base, []string{"--set", "tier.dram.capacity=-2GB"}, `s.toml (--set): tier "dram": capacity`},
		{"profile path", base, []string{"--cpuprofile", filepath.Join(dir, "no", "cpu.prof")}, "--cpuprofile"},
		// [cluster]'s pool, NICs and disaggregation
		{"pool without cluster", base, []string{"--set", "tier.dram.scope=cluster"}, `s.toml (--set): tier "dram": scope: "cluster" needs a [cluster] table`},
		{"pooled hbm", pooled, []string{"--set", "tier.hbm.scope=cluster"}, `s.toml (--set): tier "hbm": scope: the hbm tier cannot be "cluster"`},
		{"bad scope", pooled, []string{"--set", "tier.dram.scope=global"}, `tier "dram": scope: unknown scope "global"`},
		{"pool not last", strings.Replace(pooled, "[workload]", "[[tier]]\nname = \"ssd\"\nkind = \"ssd\"\n[[link]]\nfrom = \"dram\"\nto = \"ssd\"\n[workload]", 1), nil,
			`s.toml:17: tier "dram": scope: "cluster" only for the last tier (tier "ssd" follows)`},
		{"instances and prefill", pooled, []string{"--set", "cluster.prefill_instances=1"}, "cluster: prefill_instances: not alone with instances"},
		{"prefill alone", strings.Replace(pooled, "instances = 2", "prefill_instances = 2", 1), nil, "cluster: prefill_instances: needs decode_instances too"},
		{"no instances", strings.Replace(pooled, "instances = 2", "router = \"round_robin\"", 1), nil, "cluster: instances: required"},
		{"zero nic lanes", pooled, []string{"--set", "cluster.nic_lanes=0"}, "cluster: nic_lanes: must be >= 1"},
		{"bad nic bandwidth", pooled, []string{"--set", "cluster.nic_bandwidth=fast"}, "cluster: nic_bandwidth:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.toml != "" {
				p := writeFile(t, t.TempDir(), "s.toml", tc.toml)
				args = append([]string{"run", "--quiet", "--out", t.TempDir(), p}, tc.args...)
			}
			_, stderr, code := runKvsim(args...)
			last := stderr[strings.LastIndex(stderr[:max(len(stderr)-1, 0)], "\n")+1:]
			if code != 2 || !oneLine.MatchString(last) || !strings.Contains(last, tc.want) {
				t.Errorf("status %d, stderr %q; want status 2 and one line containing %q", code, stderr, tc.want)
			}
		})
	}
	// --skip-bad-lines counts the bad line instead.
	p := writeFile(t, t.TempDir(), "s.toml", strings.Replace(base, good, badLine, 1))
	out := t.TempDir()
	stdout, stderr, code := runKvsim("run", "--skip-bad-lines", "--out", out, p)
	if code != 0 || !strings.Contains(stdout, "1 bad lines skipped") {
		t.Errorf("skip-bad-lines: status %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestSyntheticSeed: a generated workload gives identical results for the
// same seed and other results for another seed.
func TestSyntheticSeed(t *testing.T) {
	toml := func(seed int) string {
		return fmt.Sprintf("name = \"s\"\nseed = %d\n[model]\nlayers = 32\nkv_heads = 8\nhead_dim = 128\n"+
			"[gpu]\nprefill_tokens_per_s = 100000\n[[tier]]\nkind = \"hbm\"\ncapacity = \"16GiB\"\n[[tier]]\nkind = \"pinned\"\ncapacity = \"64GiB\"\n"+
			"[workload]\nformat = \"synthetic\"\nrequests = 400\n[[policy]]\neviction = \"lru\"\n", seed)
	}
	a, b, c := simulate(t, toml(3)), simulate(t, toml(3)), simulate(t, toml(4))
	if stripRun(t, a) != stripRun(t, b) {
		t.Error("same seed, different results")
	}
	if a.Trace.BlockAccesses == c.Trace.BlockAccesses && a.Policies[0].Hits["hbm"] == c.Policies[0].Hits["hbm"] {
		t.Error("another seed should give another workload")
	}
	if a.Trace.Requests != 400 {
		t.Errorf("requests %d", a.Trace.Requests)
	}
}
