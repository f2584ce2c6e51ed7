package scenario

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/param"
	"kvsim/policy"
	"kvsim/tierkind"
)

// A policy with parameters; the built-in ones take none yet.
func init() {
	policy.Register(policy.Spec{
		Name:   "scenario_test_params",
		Brief:  "test only",
		Params: []param.Key{{Name: "alpha"}, {Name: "window"}},
		New:    func(policy.Config) (policy.Policy, error) { return policy.NewLRU(), nil },
	})
}

const path = "scenarios/x.toml"

// Default sections; doc puts the case's own text first (so its line numbers
// are easy to read) and appends each default whose header it lacks.
var defaults = []struct{ header, text string }{
	{"[model]", "[model]\nlayers = 32\nkv_heads = 8\nhead_dim = 128\n"},
	{"[[tier]]", "[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n"},
	{"[workload]", "[workload]\ntrace = \"trace.jsonl\"\n"},
	{"[[policy]]", "[[policy]]\neviction = \"lru\"\n"},
}

func doc(first string, omit ...string) string {
	var b strings.Builder
	b.WriteString(first)
	for _, d := range defaults {
		key := strings.Trim(d.header, "[]")
		if strings.Contains(first, d.header) || strings.HasPrefix(first, key+" =") || strings.Contains(first, "\n"+key+" =") || contains(omit, d.header) {
			continue
		}
		b.WriteString(d.text)
	}
	return b.String()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestMinimalDefaults(t *testing.T) {
	s, err := Parse([]byte(doc("")), path)
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Path:  path,
		Name:  "x",
		Seed:  1,
		Model: Model{Layers: 32, KVHeads: 8, HeadDim: 128, DType: "bf16", BlockTokens: 512},
		GPU: GPU{Engine: "batched", MaxBatchedTokens: 8192, MaxSeqs: 256, PageTokens: 16, StepModel: "linear", TP: 1, ComputeEff: 0.5, MemoryEff: 0.8,
			StepOverhead: 1e6, C0: 1e9 / 50, CPrefill: 1e9 / 20000, LegacyStep: true,
			PrefillTokensPerSec: 20000, DecodeTokensPerSec: 50, Load: "layerwise", HBMFree: "landed"},
		Tiers: []Tier{
			{Name: "hbm", Kind: "hbm", Capacity: 64424509440, Bandwidth: 2e12, Latency: 100, CostPerGB: 20, Scope: "node"},
			{Name: "dram", Kind: "dram", Capacity: 512 << 30, Bandwidth: 50e9, Latency: 100, CostPerGB: 5, Scope: "node"},
		},
		Links:    []Link{{From: 0, To: 1, Bandwidth: 1e9, ReverseBandwidth: 1e9, Latency: 100, ReverseLatency: 100, Lanes: 1}},
		Workload: Workload{Trace: filepath.Join("scenarios", "trace.jsonl"), TraceLine: 10, Format: "mooncake", Speedup: 1},
		Policies: []Policy{{Name: "lru", Eviction: "lru", Evictions: []string{"lru", "lru"}, Params: map[string]float64{}}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	if got := s.Model.BytesPerToken(); got != 128<<10 {
		t.Errorf("BytesPerToken = %d", got)
	}
	if got := s.Model.BytesPerBlock(); got != 64<<20 {
		t.Errorf("BytesPerBlock = %d", got)
	}
}

const fullTOML = `name = "full"
seed = 42

[model]
layers = 80
kv_heads = 8
head_dim = 128
dtype = "fp8"
block_tokens = 16

[gpu]
prefill_tokens_per_s = 1.5e4
attention_ns_per_token2 = 0.002
decode_tokens_per_s = 30
load = "serial"

[[tier]]
name = "gpu"
kind = "hbm"
capacity = "80GB"
bandwidth = "3.35TB/s"
latency = "100ns"
cost_per_gb = 25

[[tier]]
name = "host"
kind = "pinned"

[[tier]]
name = "local"
kind = "ssd"
capacity = 1000000
bandwidth = 5000000
latency = "0.5ms"
shared_bandwidth = true

[[tier]]
name = "far"
kind = "remote_dram"

[[link]]
from = "gpu"
to = "host"
bandwidth = "50GB/s"
reverse_bandwidth = "40GB/s"
lanes = 2

[[link]]
from = "local"    # reverse order of the tiers is fine
to = "host"

[[link]]
from = "host"
to = "far"
latency = "5us"

[workload]
trace = "/data/t.jsonl"
format = "mooncake"
limit = 1000
skip_bad_lines = true
speedup = 2.5

[[policy]]
eviction = "lru"
admission = "after:2"
prefetch_timeout = "2ms"

[[policy]]
name = "tuned"
eviction = "scenario_test_params"
alpha = 0.5
window = 100
`

func TestFull(t *testing.T) {
	s, err := Parse([]byte(fullTOML), "/abs/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Path:  "/abs/full.toml",
		Name:  "full",
		Seed:  42,
		Model: Model{Layers: 80, KVHeads: 8, HeadDim: 128, DType: "fp8", BlockTokens: 16},
		GPU: GPU{Engine: "batched", MaxBatchedTokens: 8192, MaxSeqs: 256, PageTokens: 16, StepModel: "linear", TP: 1, ComputeEff: 0.5, MemoryEff: 0.8,
			StepOverhead: 1e6, C0: 1e9 / 30., CPrefill: 1e9 / 15000., LegacyStep: true,
			PrefillTokensPerSec: 15000, AttentionNsPerToken2: 0.002, DecodeTokensPerSec: 30, Load: "serial", HBMFree: "landed"},
		Tiers: []Tier{
			{Name: "gpu", Kind: "hbm", Capacity: 80e9, Bandwidth: 3.35e12, Latency: 100, CostPerGB: 25, Scope: "node"},
			{Name: "host", Kind: "pinned", Capacity: 64 << 30, Bandwidth: 25e9, Latency: 100, CostPerGB: 5, Scope: "node"},
			{Name: "local", Kind: "ssd", Capacity: 1e6, Bandwidth: 5e6, Latency: 500_000, CostPerGB: 0.3, Shared: true, Scope: "node"},
			{Name: "far", Kind: "remote_dram", Capacity: 1 << 40, Bandwidth: 50e9, Latency: 3000, CostPerGB: 5, Scope: "node"},
		},
		Links: []Link{
			{From: 0, To: 1, Bandwidth: 50e9, ReverseBandwidth: 40e9, Latency: 100, ReverseLatency: 100, Lanes: 2},
			{From: 2, To: 1, Bandwidth: 5e6, ReverseBandwidth: 5e6, Latency: 500_000, ReverseLatency: 500_000, Lanes: 1},
			{From: 1, To: 3, Bandwidth: 25e9, ReverseBandwidth: 25e9, Latency: 5000, ReverseLatency: 5000, Lanes: 1},
		},
		Workload: Workload{Trace: "/data/t.jsonl", TraceLine: 58, Format: "mooncake", Limit: 1000, SkipBadLines: true, Speedup: 2.5},
		Policies: []Policy{
			{Name: "lru", Eviction: "lru", Evictions: []string{"lru", "lru", "lru", "lru"}, Params: map[string]float64{}, Admission: "after:2", PrefetchTimeout: 2e6,
				Strategy: core.Strategy{AdmitAfter: 2, PrefetchTimeout: 2e6}},
			{Name: "tuned", Eviction: "scenario_test_params", Evictions: []string{"scenario_test_params", "scenario_test_params", "scenario_test_params", "scenario_test_params"},
				Params: map[string]float64{"alpha": 0.5, "window": 100}},
		},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	d := s.Describe()
	for _, part := range []string{
		`scenario "full"`, "80 layers", "160 KiB/token", "2.5 MiB per 16-token block",
		"gpu ", "3.35 TB/s", "500us  $0.3/GB  (bandwidth shared by all its links)", "gpu <-> host: 50 GB/s (back 40 GB/s), 100ns, 2 lanes",
		"/data/t.jsonl (mooncake, first 1000 requests, skipping bad lines, arrivals at 2.5x speed)",
		"lru (admission=after:2 prefetch_timeout=2ms), tuned (scenario_test_params alpha=0.5 window=100)",
	} {
		if !strings.Contains(d, part) {
			t.Errorf("Describe lacks %q:\n%s", part, d)
		}
	}
}

func TestDefaultLinks(t *testing.T) {
	src := doc("[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"pinned\"\n[[tier]]\nkind = \"dram\"\n" +
		"[[tier]]\nkind = \"ssd\"\n[[tier]]\nkind = \"nvmeof\"\n[[tier]]\nkind = \"remote_dram\"\n")
	s, err := Parse([]byte(src), path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Link{
		{From: 0, To: 1, Bandwidth: 25e9, ReverseBandwidth: 25e9, Latency: 100, ReverseLatency: 100, Lanes: 1},
		{From: 1, To: 2, Bandwidth: 25e9, ReverseBandwidth: 25e9, Latency: 100, ReverseLatency: 100, Lanes: 1},
		{From: 2, To: 3, Bandwidth: 7e9, ReverseBandwidth: 7e9, Latency: 10000, ReverseLatency: 10000, Lanes: 1},
		{From: 3, To: 4, Bandwidth: 6e9, ReverseBandwidth: 6e9, Latency: 20000, ReverseLatency: 20000, Lanes: 1},
		{From: 4, To: 5, Bandwidth: 6e9, ReverseBandwidth: 6e9, Latency: 20000, ReverseLatency: 20000, Lanes: 1},
	}
	if !reflect.DeepEqual(s.Links, want) {
		t.Errorf("links %+v\nwant  %+v", s.Links, want)
	}
	// An explicit hbm-dram link without bandwidth still gets the pageable rate.
	s, err = Parse([]byte(doc("[[link]]\nfrom = \"dram\"\nto = \"hbm\"\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	if l := s.Links[0]; l.Bandwidth != PageableBandwidth || l.From != 1 || l.To != 0 {
		t.Errorf("explicit link %+v", l)
	}
}

// TestKindDefaults: a kind's defaults are its spec's (the docs' tables are
// rendered from the specs by TestDocTables).
func TestKindDefaults(t *testing.T) {
	for _, k := range Kinds() {
		got, ok := KindDefaults(k)
		s, _ := tierkind.Lookup(k)
		want := Tier{Kind: k, Capacity: s.Capacity, Bandwidth: s.Bandwidth, Latency: s.Latency, CostPerGB: s.CostPerGB}
		if !ok || got != want {
			t.Errorf("KindDefaults(%q) = %+v, %v; want %+v", k, got, ok, want)
		}
	}
	if _, ok := KindDefaults("tape"); ok {
		t.Error("KindDefaults(tape) ok")
	}
}

func TestDTypes(t *testing.T) {
	want := map[string]int{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
	for _, d := range DTypes() {
		if got := (Model{DType: d}).DTypeBytes(); got != want[d] {
			t.Errorf("%s: %d bytes", d, got)
		}
	}
	if (Model{DType: "fp13"}).DTypeBytes() != 0 {
		t.Error("fp13 has a size")
	}
}

func TestGoodVariants(t *testing.T) {
	cases := []struct {
		name, src, path string
		check           func(*Scenario) bool
	}{
		{"name from path without dir", doc(""), "conv.toml", func(s *Scenario) bool {
			return s.Name == "conv" && s.Workload.Trace == "trace.jsonl"
		}},
		{"empty path", doc(""), "", func(s *Scenario) bool { return s.Name == "scenario" && s.Workload.Trace == "trace.jsonl" }},
		{"relative trace with dirs", doc("[workload]\ntrace = \"../traces/a.jsonl\"\n"), "a/b/s.toml", func(s *Scenario) bool {
			return s.Workload.Trace == filepath.Join("a", "traces", "a.jsonl")
		}},
		{"inline tables", doc("model = {layers = 2, kv_heads = 1, head_dim = 64, dtype = \"fp32\"}\n" +
			"tier = [{kind = \"hbm\", capacity = \"1GiB\"}]\n"), path, func(s *Scenario) bool {
			return s.Model.BytesPerToken() == 2*2*64*4 && len(s.Tiers) == 1 && s.Tiers[0].Capacity == 1<<30 && len(s.Links) == 0
		}},
		{"single hbm tier", doc("[[tier]]\nkind = \"hbm\"\n"), path, func(s *Scenario) bool { return len(s.Tiers) == 1 && len(s.Links) == 0 }},
		{"latency zero integer", doc("[[tier]]\nkind = \"hbm\"\nlatency = 0\n"), path, func(s *Scenario) bool { return s.Tiers[0].Latency == 0 }},
		{"seed zero", doc("seed = 0\n"), path, func(s *Scenario) bool { return s.Seed == 0 }},
		{"numeric bandwidth", doc("[[tier]]\nkind = \"hbm\"\nbandwidth = 1.5e9\n"), path, func(s *Scenario) bool { return s.Tiers[0].Bandwidth == 1.5e9 }},
		{"star links", doc("[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"pinned\"\n[[tier]]\nkind = \"ssd\"\n" +
			"[[link]]\nfrom = \"hbm\"\nto = \"pinned\"\n[[link]]\nfrom = \"hbm\"\nto = \"ssd\"\n"), path, func(s *Scenario) bool {
			return len(s.Links) == 2 && s.Links[1].Bandwidth == 7e9
		}},
		{"two policies same eviction", doc("[[policy]]\neviction = \"lru\"\n[[policy]]\nname = \"lru2\"\neviction = \"lru\"\n"), path, func(s *Scenario) bool {
			return len(s.Policies) == 2 && s.Policies[1].Name == "lru2"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.src), c.path)
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(s) {
				t.Errorf("unexpected %+v", s)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	const tiers2 = "[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n" // lines 1-4
	known := strings.Join(policy.Names(), ", ")
	cases := []struct{ name, src, want string }{
		// syntax
		{"toml syntax", doc("[model\n"), `scenarios/x.toml:1: toml: expected '.' or ']' to end table name, but got '\n' instead`},
		{"toml value", doc("seed = \n"), `scenarios/x.toml:1: toml: expected value but found '\n' instead`},
		{"toml duplicate key", doc("[model]\nlayers = 1\nlayers = 2\n"), `scenarios/x.toml:3: toml: Key 'model.layers' has already been defined.`},

		// unknown keys and tables
		{"unknown tier key", doc(tiers2 + "capacty = \"1GiB\"\n"), `scenarios/x.toml:5: unknown key "capacty" in [[tier]]`},
		{"unknown model key", doc("[model]\nlayers = 32\nkv_heads = 8\nhead_dim = 128\nhedas = 3\n"), `scenarios/x.toml:5: unknown key "hedas" in [model]`},
		{"unknown gpu key", doc("[gpu]\nprefill = 1\n"), `scenarios/x.toml:2: unknown key "prefill" in [gpu]`},
		{"unknown link key", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nbw = 1\n"), `scenarios/x.toml:8: unknown key "bw" in [[link]]`},
		{"unknown workload key", doc("[workload]\ntrace = \"t\"\nlimt = 3\n"), `scenarios/x.toml:3: unknown key "limt" in [workload]`},
		{"unknown top key", doc("nme = \"x\"\n"), `scenarios/x.toml:1: unknown key "nme" in the top level`},
		{"unknown table", doc("[modle]\nlayers = 1\n"), `scenarios/x.toml:1: unknown table [modle]`},
		{"unknown array table", doc("[[tiers]]\nkind = \"hbm\"\n"), `scenarios/x.toml:1: unknown table [[tiers]]`},
		{"earliest unknown first", doc("[gpu]\nzz = 1\naa = 2\n" + tiers2 + "bogus = 1\n"), `scenarios/x.toml:2: unknown key "zz" in [gpu]`},
		{"unknown key beats later errors", doc("[model]\nlayers = 0\nkv_heads = 8\nhead_dim = 128\n" + tiers2 + "capacty = 1\n"), `scenarios/x.toml:9: unknown key "capacty" in [[tier]]`},
		{"unknown key in second instance", doc(tiers2 + "[[tier]]\nkind = \"ssd\"\nname = \"s\"\n[[tier]]\nkind = \"nvmeof\"\nnmae = \"n\"\n"), `scenarios/x.toml:10: unknown key "nmae" in [[tier]]`},

		// top level
		{"seed type", doc("seed = \"x\"\n"), `scenarios/x.toml:1: seed: must be an integer, got string "x"`},
		{"empty name", doc("name = \"\"\n"), `scenarios/x.toml:1: name: must not be empty`},
		{"model not a table", doc("model = 5\n"), `scenarios/x.toml:1: model: must be a table ([model]), got integer 5`},
		{"tier not an array", doc("[tier]\nkind = \"hbm\"\n", "[[tier]]"), `scenarios/x.toml:1: tier: must be an array of tables ([[tier]]), got table`},
		{"tier array of numbers", doc("tier = [1, 2]\n"), `scenarios/x.toml:1: tier: must be an array of tables ([[tier]]), got array`},

		// model
		{"missing model", doc("", "[model]"), `scenarios/x.toml: missing [model] table`},
		{"layers required", doc("[model]\nkv_heads = 8\nhead_dim = 128\n"), `scenarios/x.toml:1: model: layers: required (or a preset)`},
		{"layers zero", doc("[model]\nlayers = 0\nkv_heads = 8\nhead_dim = 128\n"), `scenarios/x.toml:2: model: layers: must be > 0`},
		{"kv_heads negative", doc("[model]\nlayers = 1\nkv_heads = -8\nhead_dim = 128\n"), `scenarios/x.toml:3: model: kv_heads: must be > 0`},
		{"head_dim type", doc("[model]\nlayers = 1\nkv_heads = 8\nhead_dim = \"128\"\n"), `scenarios/x.toml:4: model: head_dim: must be an integer, got string "128"`},
		{"head_dim float", doc("[model]\nlayers = 1\nkv_heads = 8\nhead_dim = 128.0\n"), `scenarios/x.toml:4: model: head_dim: must be an integer, got float 128`},
		{"layers huge", doc("[model]\nlayers = 100000000\nkv_heads = 8\nhead_dim = 128\n"), `scenarios/x.toml:2: model: layers: must be <= 16777216`},
		{"dtype", doc("[model]\nlayers = 1\nkv_heads = 8\nhead_dim = 128\ndtype = \"fp13\"\n"), `scenarios/x.toml:5: model: dtype: unknown dtype "fp13" (known: fp32, bf16, fp16, fp8, int8)`},
		{"block_tokens", doc("[model]\nlayers = 1\nkv_heads = 8\nhead_dim = 128\nblock_tokens = 0\n"), `scenarios/x.toml:5: model: block_tokens: must be > 0`},
		{"overflow", doc("[model]\nlayers = 16777216\nkv_heads = 16777216\nhead_dim = 16777216\n"), `scenarios/x.toml:1: model: KV bytes per block overflow int64`},

		// gpu
		{"prefill zero", doc("[gpu]\nprefill_tokens_per_s = 0\n"), `scenarios/x.toml:2: gpu: prefill_tokens_per_s: must be > 0`},
		{"prefill type", doc("[gpu]\nprefill_tokens_per_s = \"fast\"\n"), `scenarios/x.toml:2: gpu: prefill_tokens_per_s: must be a number, got string "fast"`},
		{"prefill nan", doc("[gpu]\nprefill_tokens_per_s = nan\n"), `scenarios/x.toml:2: gpu: prefill_tokens_per_s: must be a finite number, got NaN`},
		{"attention negative", doc("[gpu]\nattention_ns_per_token2 = -1\n"), `scenarios/x.toml:2: gpu: attention_ns_per_token2: must be >= 0`},
		{"decode negative", doc("[gpu]\ndecode_tokens_per_s = -5.5\n"), `scenarios/x.toml:2: gpu: decode_tokens_per_s: must be > 0`},
		{"load", doc("[gpu]\nload = \"async\"\n"), `scenarios/x.toml:2: gpu: load: must be "layerwise" or "serial", got "async"`},
		{"hbm_free", doc("[gpu]\nhbm_free = \"never\"\n"), `scenarios/x.toml:2: gpu: hbm_free: must be "landed" or "evict", got "never"`},
		// Rates so slow that one token leaves simulated time (they gave negative times).
		{"decode past the time limit", doc("[gpu]\ndecode_tokens_per_s = 1e-300\n"), `scenarios/x.toml:2: gpu: decode_tokens_per_s: 1e-300 tokens/s takes forever per token, past the simulated-time limit of 146 years (2^62 ns)`},
		{"prefill past the time limit", doc("[gpu]\nprefill_tokens_per_s = 1e-10\n"), `scenarios/x.toml:2: gpu: prefill_tokens_per_s: 1e-10 tokens/s takes 317 years per token, past the simulated-time limit of 146 years (2^62 ns)`},
		{"attention past the time limit", doc("[gpu]\nattention_ns_per_token2 = 1e19\n"), `scenarios/x.toml:2: gpu: attention_ns_per_token2: 1e+19 ns for one pair of tokens is past the simulated-time limit of 146 years (2^62 ns)`},

		// tiers
		{"no tiers", doc("", "[[tier]]"), `scenarios/x.toml: missing [[tier]]: at least one tier (the hbm tier) is required`},
		{"empty tier array", doc("tier = []\n"), `scenarios/x.toml:1: missing [[tier]]: at least one tier (the hbm tier) is required`},
		{"first not hbm", doc("[[tier]]\nkind = \"dram\"\n[[tier]]\nkind = \"hbm\"\n"), `scenarios/x.toml:2: tier "dram": kind: the first tier must be "hbm", got "dram"`},
		{"two hbm", doc("[[tier]]\nkind = \"hbm\"\n[[tier]]\nname = \"hbm2\"\nkind = \"hbm\"\n"), `scenarios/x.toml:5: tier "hbm2": kind: only one "hbm" tier is allowed (the first)`},
		{"kind required", doc(tiers2 + "[[tier]]\nname = \"x\"\n"), `scenarios/x.toml:5: tier "x": kind: required (one of ` + strings.Join(Kinds(), ", ") + ")"},
		{"kind required unnamed", doc(tiers2 + "[[tier]]\ncapacity = 1\n"), `scenarios/x.toml:5: tier 3: kind: required (one of ` + strings.Join(Kinds(), ", ") + ")"},
		{"kind unknown", doc(tiers2 + "[[tier]]\nkind = \"tape\"\n"), `scenarios/x.toml:6: tier 3: kind: unknown kind "tape" (known: ` + strings.Join(Kinds(), ", ") + ")"},
		{"duplicate default name", doc(tiers2 + "[[tier]]\nkind = \"dram\"\n"), `scenarios/x.toml:5: tier "dram": name: duplicate tier name (tier 2 has it too)`},
		{"duplicate name", doc(tiers2 + "[[tier]]\nname = \"hbm\"\nkind = \"ssd\"\n"), `scenarios/x.toml:6: tier "hbm": name: duplicate tier name (tier 1 has it too)`},
		{"empty tier name", doc(tiers2 + "[[tier]]\nname = \" \"\nkind = \"ssd\"\n"), `scenarios/x.toml:6: tier 3: name: must not be empty`},
		{"capacity negative", doc(tiers2 + "capacity = \"-1GiB\"\n"), `scenarios/x.toml:5: tier "dram": capacity: must be > 0`},
		{"capacity zero int", doc(tiers2 + "capacity = 0\n"), `scenarios/x.toml:5: tier "dram": capacity: must be > 0`},
		{"capacity unit", doc(tiers2 + "capacity = \"1 gigabyte\"\n"), `scenarios/x.toml:5: tier "dram": capacity: bad size "1 gigabyte": unknown unit "gigabyte" (use B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)`},
		{"bandwidth past the time limit", doc(tiers2 + "bandwidth = 1e-300\n"), `scenarios/x.toml:5: tier "dram": bandwidth: 1e-300 B/s moves one 64 MiB block in forever, past the simulated-time limit of 146 years (2^62 ns)`},
		{"bandwidth just past the time limit", doc(tiers2 + "bandwidth = 0.0001\n"), `scenarios/x.toml:5: tier "dram": bandwidth: 0.0001 B/s moves one 64 MiB block in 2.13e+04 years, past the simulated-time limit of 146 years (2^62 ns)`},
		{"latency past the time limit", doc(tiers2 + "latency = \"5000000000s\"\n"), `scenarios/x.toml:5: tier "dram": latency: 5000000000s is past the simulated-time limit of 146 years (2^62 ns)`},
		{"link bandwidth past the time limit", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nbandwidth = 0.001\n"), `scenarios/x.toml:8: link 1: bandwidth: 0.001 B/s moves one 64 MiB block in 2.13e+03 years, past the simulated-time limit of 146 years (2^62 ns)`},
		{"link reverse bandwidth past the time limit", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nreverse_bandwidth = 0.001\n"), `scenarios/x.toml:8: link 1: reverse_bandwidth: 0.001 B/s moves one 64 MiB block in 2.13e+03 years, past the simulated-time limit of 146 years (2^62 ns)`},
		{"link latency past the time limit", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nlatency = \"9000000000s\"\n"), `scenarios/x.toml:8: link 1: latency: 9000000000s is past the simulated-time limit of 146 years (2^62 ns)`},
		{"link reverse latency past the time limit", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nreverse_latency = \"9000000000s\"\n"), `scenarios/x.toml:8: link 1: reverse_latency: 9000000000s is past the simulated-time limit of 146 years (2^62 ns)`},
		{"capacity type", doc(tiers2 + "capacity = true\n"), `scenarios/x.toml:5: tier "dram": capacity: must be a size like "60GiB" or a byte count, got boolean true`},
		{"bandwidth zero", doc(tiers2 + "bandwidth = \"0GB/s\"\n"), `scenarios/x.toml:5: tier "dram": bandwidth: must be > 0`},
		{"bandwidth unit", doc(tiers2 + "bandwidth = \"25GB\"\n"), `scenarios/x.toml:5: tier "dram": bandwidth: bad bandwidth "25GB": unknown unit "GB" (use GB/s, GiB/s, MB/s, MiB/s, Gbit/s, Gbps, ...)`},
		{"latency negative", doc(tiers2 + "latency = \"-1us\"\n"), `scenarios/x.toml:5: tier "dram": latency: must be >= 0`},
		{"latency bare int", doc(tiers2 + "latency = 10\n"), `scenarios/x.toml:5: tier "dram": latency: must be a duration like "10us", got integer 10`},
		{"latency no unit", doc(tiers2 + "latency = \"10\"\n"), `scenarios/x.toml:5: tier "dram": latency: bad duration "10": missing unit (ns, us, ms, s)`},
		{"cost negative", doc(tiers2 + "cost_per_gb = -1\n"), `scenarios/x.toml:5: tier "dram": cost_per_gb: must be >= 0`},
		{"speedup zero", doc("[workload]\ntrace = \"t\"\nspeedup = 0\n"), `scenarios/x.toml:3: workload: speedup: must be a number > 0 (2 replays the trace at twice its request rate)`},
		{"speedup text", doc("[workload]\ntrace = \"t\"\nspeedup = \"fast\"\n"), `scenarios/x.toml:3: workload: speedup: must be a number, got string "fast"`},
		{"shared not bool", doc(tiers2 + "shared_bandwidth = 1\n"), `scenarios/x.toml:5: tier "dram": shared_bandwidth: must be true or false, got integer 1`},
		{"inline tier line", doc("tier = [{kind = \"hbm\"}, {kind = \"dram\", capacity = -1}]\n"), `scenarios/x.toml:1: tier "dram": capacity: must be > 0`},
		{"multi-line string does not confuse lines", doc("[[policy]]\neviction = \"lru\"\nname = \"\"\"\n[[tier]]\ncapacity = 1\n\"\"\"\n" + tiers2 + "capacity = 0\n"), `scenarios/x.toml:11: tier "dram": capacity: must be > 0`},
		{"multi-line array does not confuse lines", doc("seed = [\n  1,\n]\n"), `scenarios/x.toml:1: seed: must be an integer, got array`},

		// links
		{"link to unknown", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"ssd2\"\n"), `scenarios/x.toml:7: link 1: to: unknown tier "ssd2"`},
		{"link from unknown", doc(tiers2 + "[[link]]\nfrom = \"gpu\"\nto = \"dram\"\n"), `scenarios/x.toml:6: link 1: from: unknown tier "gpu"`},
		{"link from required", doc(tiers2 + "[[link]]\nto = \"dram\"\n"), `scenarios/x.toml:5: link 1: from: required (a tier name)`},
		{"link self", doc(tiers2 + "[[link]]\nfrom = \"dram\"\nto = \"dram\"\n"), `scenarios/x.toml:7: link 1: to: same tier as from ("dram")`},
		{"link twice", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\n[[link]]\nfrom = \"dram\"\nto = \"hbm\"\n"), `scenarios/x.toml:10: link 2: to: "dram" and "hbm" are already linked by link 1`},
		{"link bandwidth zero", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nbandwidth = 0\n"), `scenarios/x.toml:8: link 1: bandwidth: must be > 0`},
		{"link reverse latency negative", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nreverse_latency = \"-1us\"\n"), `scenarios/x.toml:8: link 1: reverse_latency: must be >= 0`},
		{"link reverse negative", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nreverse_bandwidth = \"-1GB/s\"\n"), `scenarios/x.toml:8: link 1: reverse_bandwidth: must be > 0`},
		{"link lanes", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nlanes = 0\n"), `scenarios/x.toml:8: link 1: lanes: must be >= 1`},
		{"link latency", doc(tiers2 + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nlatency = \"fast\"\n"), `scenarios/x.toml:8: link 1: latency: bad duration "fast": missing number`},
		{"unreachable", doc(tiers2 + "[[tier]]\nkind = \"ssd\"\n[[link]]\nfrom = \"hbm\"\nto = \"dram\"\n"), `scenarios/x.toml:5: tier "ssd": not reachable from "hbm" through [[link]]s`},
		{"empty link array", doc("link = []\n" + tiers2), `scenarios/x.toml:4: tier "dram": not reachable from "hbm" through [[link]]s`},

		// workload
		{"missing workload", doc("", "[workload]"), `scenarios/x.toml: missing [workload] table`},
		{"trace required", doc("[workload]\nlimit = 1\n"), `scenarios/x.toml:1: workload: trace: required (path of the trace file)`},
		{"trace type", doc("[workload]\ntrace = 3\n"), `scenarios/x.toml:2: workload: trace: must be a string, got integer 3`},
		{"format", doc("[workload]\ntrace = \"t\"\nformat = \"parquet\"\n"), `scenarios/x.toml:3: workload: format: unknown format "parquet" (known: ` + strings.Join(Formats(), ", ") + ")"},
		{"bailian blocks", doc("[workload]\ntrace = \"t\"\nformat = \"bailian\"\n[model]\nlayers = 1\nkv_heads = 8\nhead_dim = 128\nblock_tokens = 24\n"),
			`scenarios/x.toml:3: workload: format: bailian traces hash 16-token blocks: model.block_tokens must be a multiple of 16, got 24`},
		{"limit", doc("[workload]\ntrace = \"t\"\nlimit = -1\n"), `scenarios/x.toml:3: workload: limit: must be >= 0`},
		{"skip_bad_lines", doc("[workload]\ntrace = \"t\"\nskip_bad_lines = \"yes\"\n"), `scenarios/x.toml:3: workload: skip_bad_lines: must be true or false, got string "yes"`},

		// policies
		{"missing policy", doc("", "[[policy]]"), `scenarios/x.toml: missing [[policy]]: at least one policy is required`},
		{"eviction unknown", doc("[[policy]]\neviction = \"nope\"\n"), `scenarios/x.toml:2: policy 1: eviction: unknown policy "nope" (known: ` + known + `)`},
		{"eviction unknown named", doc("[[policy]]\nname = \"mine\"\neviction = \"nope\"\n"), `scenarios/x.toml:3: policy "mine": eviction: unknown policy "nope" (known: ` + known + `)`},
		{"eviction required", doc("[[policy]]\nname = \"p\"\n"), `scenarios/x.toml:1: policy "p": eviction: required (known: ` + known + `)`},
		{"eviction misspelt", doc("[[policy]]\nevicton = \"lru\"\n"), `scenarios/x.toml:2: unknown key "evicton" in [[policy]]`},
		{"duplicate policy", doc("[[policy]]\neviction = \"lru\"\n[[policy]]\neviction = \"lru\"\n"), `scenarios/x.toml:3: policy "lru": name: duplicate policy name (policy 1 has it too); give each [[policy]] its own name`},
		{"empty policy name", doc("[[policy]]\nname = \"\"\neviction = \"lru\"\n"), `scenarios/x.toml:2: policy 1: name: must not be empty`},
		{"policy takes no params", doc("[[policy]]\neviction = \"lru\"\nalpha = 1\n"), `scenarios/x.toml:3: unknown key "alpha" in [[policy]] "lru" (eviction "lru" takes no parameters)`},
		{"policy unknown param", doc("[[policy]]\neviction = \"scenario_test_params\"\nalpha = 1\nbeta = 2\n"), `scenarios/x.toml:4: unknown key "beta" in [[policy]] "scenario_test_params" (eviction "scenario_test_params" takes alpha, window)`},
		{"policy param type", doc("[[policy]]\neviction = \"scenario_test_params\"\nwindow = \"big\"\n"), `scenarios/x.toml:3: policy "scenario_test_params": window: must be a number, got string "big"`},
		{"policy reserved type", doc("[[policy]]\neviction = \"lru\"\nadmission = 1\n"), `scenarios/x.toml:3: policy "lru": admission: must be a string, got integer 1`},
		{"policy prefetch_timeout", doc("[[policy]]\neviction = \"lru\"\nprefetch_timeout = \"soon\"\n"), `scenarios/x.toml:3: policy "lru": prefetch_timeout: bad duration "soon": missing number`},
		{"policy admission", doc("[[policy]]\neviction = \"lru\"\nadmission = \"after:0\"\n"), `scenarios/x.toml:3: policy "lru": admission: want "after:K" with K >= 1, got "after:0"`},
		{"policy promotion", doc("[[policy]]\neviction = \"lru\"\npromotion = \"sometimes\"\n"), `scenarios/x.toml:3: policy "lru": promotion: unknown promotion "sometimes" (want "always", "second-hit" or "never")`},
		{"policy write", doc("[[policy]]\neviction = \"lru\"\nwrite = \"around\"\n"), `scenarios/x.toml:3: policy "lru": write: unknown write policy "around" (want "back" or "through")`},
		{"policy prefetch timeout missing", doc("[[policy]]\neviction = \"lru\"\nprefetch = \"timeout\"\n"), `scenarios/x.toml:3: policy "lru": prefetch: "timeout" needs prefetch_timeout > 0`},
		{"policy prefetch_timeout negative", doc("[[policy]]\neviction = \"lru\"\nprefetch_timeout = \"-1ms\"\n"), `scenarios/x.toml:3: policy "lru": prefetch_timeout: must be >= 0`},
		{"policy prefetch_timeout past the time limit", doc("[[policy]]\neviction = \"lru\"\nprefetch_timeout = \"9000000000s\"\n"), `scenarios/x.toml:3: policy "lru": prefetch_timeout: 9000000000s is past the simulated-time limit of 146 years (2^62 ns)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), path)
			if err == nil {
				t.Fatalf("no error; want %s", c.want)
			}
			if err.Error() != c.want {
				t.Errorf("error\n got: %s\nwant: %s\nsource:\n%s", err, c.want, c.src)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("error is %T, not *Error", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "two-tier.toml")
	if err := os.WriteFile(p, []byte(doc("")), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "two-tier" || s.Workload.Trace != filepath.Join(dir, "trace.jsonl") || s.Path != p {
		t.Errorf("got %+v", s)
	}
	_, err = Load(filepath.Join(dir, "missing.toml"))
	if err == nil || !errors.Is(err, fs.ErrNotExist) || err.Error() != filepath.Join(dir, "missing.toml")+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
}

// Every registered policy's parameters are accepted as [[policy]] keys.
func TestAllPolicyParams(t *testing.T) {
	for _, name := range policy.Names() {
		spec, _ := policy.Lookup(name)
		var b strings.Builder
		b.WriteString("[[policy]]\neviction = \"" + name + "\"\n")
		for _, k := range param.Names(spec.Params) {
			if contains(policyKeys, k) {
				t.Errorf("policy %s: parameter %q collides with a fixed [[policy]] key", name, k)
			}
			b.WriteString(k + " = 1\n")
		}
		s, err := Parse([]byte(doc(b.String())), path)
		if err != nil {
			t.Errorf("policy %s: %v", name, err)
			continue
		}
		if got := len(s.Policies[0].Params); got != len(spec.Params) {
			t.Errorf("policy %s: %d params, want %d", name, got, len(spec.Params))
		}
	}
}

// Two policies that differ only in recompute must be told apart in the
// description that summary.json carries.
func TestDescribeListsRecompute(t *testing.T) {
	s, err := Parse([]byte(doc("[[policy]]\neviction = \"lru\"\n[[policy]]\nname = \"lru-or-recompute\"\neviction = \"lru\"\nrecompute = \"when-cheaper\"\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	if d, want := s.Describe(), "policies: lru, lru-or-recompute (lru recompute=when-cheaper)\n"; !strings.Contains(d, want) {
		t.Errorf("Describe lacks %q:\n%s", want, d)
	}
}
