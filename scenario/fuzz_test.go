package scenario

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/param"
	"kvsim/policy"
)

// checkErr: a rejected scenario gets one line, a *Error, naming file.
func checkErr(t *testing.T, err error, file string) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("multi-line error: %q", msg)
	}
	if !strings.HasPrefix(msg, file+":") && !strings.HasPrefix(msg, file+" (--set):") {
		t.Fatalf("error does not name the file %s: %q", file, msg)
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("error is %T", err)
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// checkValid is everything a loaded scenario promises the code that runs
// it: each field in its range, every reference resolved.
func checkValid(t *testing.T, s *Scenario) {
	t.Helper()
	bad := func(what string, v any) { t.Helper(); t.Fatalf("invalid scenario accepted: %s: %+v", what, v) }
	safe := func(name string) bool {
		return name != "" && !strings.ContainsAny(name, "/\\\x00") && name[0] != '.'
	}
	if !safe(s.Name) {
		bad("name (it becomes a folder)", s.Name)
	}
	m := s.Model
	if m.Layers < 1 || m.KVHeads < 1 || m.HeadDim < 1 || m.BlockTokens < 1 || m.DTypeBytes() == 0 {
		bad("model", m)
	}
	if _, ok := MulChecked(2, int64(m.DTypeBytes()), int64(m.Layers), int64(m.KVHeads), int64(m.HeadDim), int64(m.BlockTokens)); !ok || m.BytesPerBlock() <= 0 {
		bad("model bytes per block", m)
	}
	g := s.GPU
	if !(g.PrefillTokensPerSec > 0) || !finite(g.PrefillTokensPerSec) || !(g.DecodeTokensPerSec > 0) || !finite(g.DecodeTokensPerSec) ||
		!(g.AttentionNsPerToken2 >= 0) || !finite(g.AttentionNsPerToken2) || (g.Load != "layerwise" && g.Load != "serial") {
		bad("gpu", g)
	}
	fine := func(xs ...float64) bool {
		for _, x := range xs {
			if !(x >= 0) || !(x < float64(core.MaxTime)) {
				return false
			}
		}
		return true
	}
	if (g.Engine != "batched" && g.Engine != "simple") || g.MaxBatchedTokens < 1 || g.MaxSeqs < 1 || g.TP < 1 ||
		!(g.ComputeEff > 0 && g.ComputeEff <= 1) || !(g.MemoryEff > 0 && g.MemoryEff <= 1) || g.StepOverhead < 0 ||
		!fine(g.C0, g.CPrefill, g.CDecode, g.CCtx) || !(g.PeakTFLOPs >= 0) || !finite(g.PeakTFLOPs) ||
		!(g.HBMBandwidth >= 0) || !finite(g.HBMBandwidth) || g.HBMCapacity < 0 ||
		!(m.Params >= 0) || !finite(m.Params) || m.Heads < 0 || (m.Heads > 0 && m.Heads%m.KVHeads != 0) {
		bad("gpu step model", g)
	}
	if m.BytesPerToken() <= 0 || m.FullLayers() < 1 || m.LocalBytesPerToken() < 0 || m.KVDTypeBytes() == 0 ||
		!(m.ActiveParams() >= 0) || !finite(m.ActiveParams()) || m.ActiveParams() > m.Params ||
		(m.Experts > 0 && (m.ExpertsPerToken < 1 || m.ExpertsPerToken > m.Experts || m.Hidden < 1 || m.DenseLayers >= m.Layers || !(m.ActiveParams() > 0))) {
		bad("model geometry", m)
	}
	if _, ok := MulChecked(m.LayerBytesPerToken(), int64(m.Layers), int64(m.BlockTokens)); !ok {
		bad("model bytes per block, all layers", m)
	}
	if _, ok := MulChecked(m.LayerBytesPerToken(), int64(m.Layers), int64(m.Window)); !ok {
		bad("model bytes of a window", m)
	}
	if g.DP < 0 || g.EP < 0 || !(g.InterconnectBandwidth >= 0) || !finite(g.InterconnectBandwidth) || g.InterconnectLatency < 0 ||
		(g.EPs() > 1 && g.EPs() != g.GPUs()) || ((g.DPs() > 1 || g.EPs() > 1) && m.Experts == 0) ||
		(g.InterconnectBandwidth > 0 && g.GPUs() > 1 && m.Hidden < 1) {
		bad("gpu parallelism", g)
	}
	switch g.StepModel {
	case "roofline":
		if g.Engine == "batched" && (!(g.PeakTFLOPs > 0) || !(g.HBMBandwidth > 0) || !(m.Params > 0) || m.Heads < 1) {
			bad("roofline without its figures", g)
		}
	case "linear":
	default:
		bad("step model", g)
	}
	if s.SLO.TTFTms < 0 || s.SLO.TPOTms < 0 || !finite(s.SLO.TTFTms) || !finite(s.SLO.TPOTms) {
		bad("slo", s.SLO)
	}
	if len(s.Tiers) == 0 || len(s.Tiers) > core.MaxTiers || s.Tiers[0].Kind != "hbm" {
		bad("tiers", s.Tiers)
	}
	names := map[string]bool{}
	for i, tr := range s.Tiers {
		if _, ok := KindDefaults(tr.Kind); !ok || (i > 0 && tr.Kind == "hbm") || names[tr.Name] || !safe(tr.Name) ||
			tr.Capacity <= 0 || !(tr.Bandwidth > 0) || !finite(tr.Bandwidth) || tr.Latency < 0 || !(tr.CostPerGB >= 0) || !finite(tr.CostPerGB) {
			bad("tier", tr)
		}
		names[tr.Name] = true
	}
	pairs := map[[2]int]bool{}
	reach := make([]bool, len(s.Tiers))
	reach[0] = true
	for _, l := range s.Links {
		if l.From < 0 || l.From >= len(s.Tiers) || l.To < 0 || l.To >= len(s.Tiers) || l.From == l.To ||
			!(l.Bandwidth > 0) || !finite(l.Bandwidth) || !(l.ReverseBandwidth > 0) || !finite(l.ReverseBandwidth) ||
			l.Latency < 0 || l.ReverseLatency < 0 || l.Lanes < 1 || l.Lanes > math.MaxInt32 {
			bad("link", l)
		}
		k := [2]int{min(l.From, l.To), max(l.From, l.To)}
		if pairs[k] {
			bad("duplicate link", l)
		}
		pairs[k] = true
	}
	for changed := true; changed; { // every tier reachable from hbm
		changed = false
		for _, l := range s.Links {
			if reach[l.From] != reach[l.To] {
				reach[l.From], reach[l.To], changed = true, true, true
			}
		}
	}
	for i, ok := range reach {
		if !ok {
			bad("unreachable tier", s.Tiers[i])
		}
	}
	w := s.Workload
	if (w.Format != "mooncake" && w.Format != "synthetic") || (w.Format == "synthetic") != (w.Gen != nil) || w.Trace == "" ||
		w.Limit < 0 || !(w.Speedup > 0) || !finite(w.Speedup) {
		bad("workload", w)
	}
	if w.Gen != nil {
		if err := w.Gen.Validate(); err != nil {
			bad("synthetic workload: "+err.Error(), *w.Gen)
		}
	}
	if len(s.Policies) == 0 {
		bad("policies", s.Policies)
	}
	pols := map[string]bool{}
	for _, p := range s.Policies {
		if p.Name == "" || pols[p.Name] || p.PrefetchTimeout < 0 || len(p.Evictions) != len(s.Tiers) || p.Eviction == "" {
			bad("policy", p)
		}
		pols[p.Name] = true
		var takes []string
		for i := range s.Tiers {
			spec, ok := policy.Lookup(p.TierEviction(i))
			if !ok {
				bad("tier eviction", p)
			}
			takes = append(takes, param.Names(spec.Params)...)
			if _, err := policy.New(p.TierEviction(i), policy.Config{Capacity: s.Tiers[i].Capacity, Params: p.TierParams(i)}); err != nil && !spec.Offline {
				bad("tier policy: "+err.Error(), p)
			}
		}
		for k, v := range p.Params {
			if !strings.Contains(","+strings.Join(takes, ",")+",", ","+k+",") || !finite(v) {
				bad("policy parameter "+k, p)
			}
		}
		if _, err := core.ParseStage(p.Stage); err != nil {
			bad("stage", p)
		}
		if _, err := core.ParseAdmission(p.Admission); err != nil {
			bad("admission", p)
		}
		if _, err := core.ParseWrite(p.Write); err != nil {
			bad("write", p)
		}
		if _, err := core.ParsePromotion(p.Promotion); err != nil {
			bad("promotion", p)
		}
		if _, err := core.ParseRecompute(p.Recompute); err != nil {
			bad("recompute", p)
		}
		if pf, err := core.ParsePrefetch(p.Prefetch); err != nil || (pf == core.PrefetchTimeout && p.PrefetchTimeout <= 0) {
			bad("prefetch", p)
		}
	}
	_ = s.Describe()
}

var parseSeeds = []string{
	doc(""),
	fullTOML,
	doc("tier = [{kind = \"hbm\"}, {kind = \"dram\", capacity = -1}]\n"),
	doc("name = \"\"\"\n[[tier]]\ncapacity = 1\n\"\"\"\n"),
	doc("[[policy]]\nname = \"\"\"\n[[tier]]\ncapacity = 1\n\"\"\"\neviction = \"lru\"\n"),
	doc("[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"ssd\"\n[[link]]\nfrom = \"ssd\"\nto = \"hbm\"\nlanes = 3\n"),
	doc("[model]\nlayers = 16777216\nkv_heads = 16777216\nhead_dim = 16777216\n"),
	doc("[[policy]]\neviction = \"scenario_test_params\"\nalpha = 1\nbeta = 2\n"),
	doc("a.b.c = 1\n'q.k' = \"x\"\n\"x\\ny\" = 2\n"),
	doc("name = \"a/../b\"\n[[tier]]\nkind = \"hbm\"\n[[tier]]\nname = \"x/..\"\nkind = \"ssd\"\n"),
	doc("[gpu]\nprefill_tokens_per_s = 1e-300\ndecode_tokens_per_s = inf\nload = \"serial\"\n"),
	doc("[workload]\nformat = \"synthetic\"\nrequests = 3\nrate = 0.5\nturns = 2.0\nthink = \"1ms\"\n"),
	doc("[workload]\ntrace = \"t.jsonl\"\nspeedup = 0.001\nlimit = 2147483648\nskip_bad_lines = true\n"),
	doc("[[policy]]\neviction = \"lru\"\nprefetch = \"timeout\"\nprefetch_timeout = \"1ms\"\nadmission = \"after:2\"\nwrite = \"through\"\npromotion = \"second-hit\"\nrecompute = \"when-cheaper\"\n"),
	doc("[[tier]]\nkind = \"hbm\"\n" + strings.Repeat("[[tier]]\nkind = \"dram\"\n", 2) + "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\n"),
	doc("[model]\npreset = \"llama-3.1-8b\"\nheads = 16\n[gpu]\npreset = \"h100\"\ntp = 2\ncompute_efficiency = 0.7\nstep_overhead = \"0.5ms\"\n"),
	doc("[model]\npreset = \"qwen2.5-72b\"\nparams = 7e10\n[gpu]\npreset = \"b200\"\nengine = \"simple\"\nmax_num_seqs = 64\n"),
	doc("[gpu]\nstep_model = \"linear\"\nc0 = \"5ms\"\nc_prefill = \"40us\"\nc_decode = \"0.5us\"\nc_ctx = \"0.25ns\"\nmax_num_batched_tokens = 2048\n"),
	doc("[model]\nlayers = 2\nkv_heads = 2\nhead_dim = 64\nheads = 4\nparams = 1e8\n[gpu]\npeak_tflops = 10\nhbm_bandwidth = \"100GB/s\"\nhbm_capacity = \"8GiB\"\n"),
	doc("[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n[[tier]]\nkind = \"ssd\"\n[[policy]]\nname = \"t\"\neviction = { hbm = \"lru\", default = \"scenario_test_params\" }\nalpha = 1\nstage = \"pass\"\n"),
	doc("[[policy]]\nname = \"t\"\n[policy.eviction]\nhbm = \"fifo\"\ndram = \"lru\"\n[slo]\nttft_ms = 500\ntpot_ms = 50\n"),
	doc("[model]\npreset = \"deepseek-v3\"\nkv_dtype = \"fp8\"\n[gpu]\npreset = \"h200\"\ntp = 8\nep = 8\ninterconnect = \"nvlink4\"\n"),
	doc("[model]\npreset = \"qwen3-30b-a3b\"\nexperts_per_token = 4\ndense_layers = 2\nshared_experts = 1\n[gpu]\npreset = \"h100\"\ntp = 2\ndp = 2\nep = 4\ninterconnect = \"pcie5\"\ninterconnect_latency = \"5us\"\n"),
	doc("[model]\npreset = \"gpt-oss-120b\"\nwindow = 4096\nwindow_kind = \"chunked\"\nfull_every = 4\n[gpu]\npreset = \"b200\"\ntp = 2\ninterconnect_bandwidth = \"1e-9B/s\"\n"),
	doc("[model]\nlayers = 3\nkv_heads = 1\nhead_dim = 8\nheads = 2\nparams = 1e9\nhidden = 16\nkv_lora_rank = 16777216\nqk_rope_head_dim = 16777216\nexperts = 16777216\nexperts_per_token = 16777216\nexpert_ffn = 16777216\n"),
	doc("[model]\nlayers = 16777216\nkv_heads = 4096\nhead_dim = 4096\nwindow = 16777216\nfull_every = 16777216\nblock_tokens = 1\nexperts = 2\nexperts_per_token = 1\nexpert_ffn = 1\nhidden = 1\nparams = 1e300\n"),
	"[model\n",
	"",
}

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse([]byte(src), "f.toml")
		if err != nil {
			checkErr(t, err, "f.toml")
			return
		}
		checkValid(t, s)
	})
}

// fuzzDir holds what a fuzzed scenario may name: a profile and a trace.
func fuzzDir(f *testing.F) string {
	dir := f.TempDir()
	for name, text := range map[string]string{
		"hw.toml":  testProfile,
		"t.jsonl":  `{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1]}` + "\n",
		"bad.toml": "[[link]]\nfrom = \"tape\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	return dir
}

// FuzzLoad is the loader's whole path as kvsim run takes it: a file on
// disk, its profile resolved next to it, and --set overrides. Any input
// ends in a valid scenario or in one line naming the file.
func FuzzLoad(f *testing.F) {
	dir := fuzzDir(f)
	for _, s := range parseSeeds {
		f.Add(s, "")
	}
	for _, c := range []struct{ src, set string }{
		{doc("profile = \"hw.toml\"\n[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"pinned\"\n[[tier]]\nkind = \"ssd\"\n"), "tier.ssd.capacity=1TB"},
		{doc("profile = \"bad.toml\"\n"), ""},
		{doc("profile = \"missing.toml\"\n"), ""},
		{doc("profile = \".\"\n"), ""},
		{doc("[workload]\ntrace = \"t.jsonl\"\n"), "workload.trace=/elsewhere/t.jsonl"},
		{doc(""), "profile=hw.toml"},
		{doc(""), "tier.dram.name=x/.."},
		{doc("[model]\npreset = \"llama-3.1-8b\"\n"), "gpu.preset=h200"},
		{doc(""), `policy.lru.eviction={ hbm = "fifo", default = "lru" }`},
		{doc(""), "slo.tpot_ms=20"},
		{doc("[model]\npreset = \"qwen3-30b-a3b\"\n[gpu]\npreset = \"h100\"\ntp = 2\n"), "gpu.interconnect=pcie4"},
		{doc("[model]\npreset = \"gpt-oss-120b\"\n"), "model.window=0"},
	} {
		f.Add(c.src, c.set)
	}
	path := filepath.Join(dir, "s.toml")
	f.Fuzz(func(t *testing.T, src, set string) {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		s, err := LoadWith(path, sets)
		if err != nil {
			checkErr(t, err, path)
			return
		}
		checkValid(t, s)
		if s.Path != path || !slicesEq(s.Sets, sets) {
			t.Fatalf("path %q, sets %q", s.Path, s.Sets)
		}
		if s.Profile != "" {
			if _, err := LoadProfile(s.Profile); err != nil {
				t.Fatalf("profile %s accepted, but it does not load: %v", s.Profile, err)
			}
		}
		if s.Workload.Gen == nil && !filepath.IsAbs(s.Workload.Trace) {
			t.Fatalf("trace %q not anchored at the scenario's folder", s.Workload.Trace)
		}
	})
}

func slicesEq(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzProfile: any profile file loads into figures the links can use, or
// fails with one line naming it.
func FuzzProfile(f *testing.F) {
	for _, s := range []string{testProfile, "", "[[link]]\nfrom = \"hbm\"\nto = \"dram\"\nbandwidth = \"0GB/s\"\n",
		"[[link]]\nfrom = \"hbm\"\nto = \"ssd\"\nbandwidth = \"1e400B/s\"\nlatency = \"-1us\"\n", "nope = 1\n", "[measurements]\nx = [1, 2]\n"} {
		f.Add(s)
	}
	path := filepath.Join(f.TempDir(), "hw.toml")
	f.Fuzz(func(t *testing.T, src string) {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := LoadProfile(path)
		if err != nil {
			checkErr(t, err, path)
			return
		}
		for _, l := range p.Links {
			_, okA := KindDefaults(l.From)
			_, okB := KindDefaults(l.To)
			if !okA || !okB || !(l.Bandwidth > 0) || !finite(l.Bandwidth) || !(l.ReverseBandwidth > 0) || !finite(l.ReverseBandwidth) ||
				l.Latency < 0 || l.ReverseLatency < 0 {
				t.Fatalf("bad profile link accepted: %+v", l)
			}
		}
	})
}
