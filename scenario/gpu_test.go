package scenario

import (
	"errors"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/policy"
)

func parseOK(t *testing.T, src string, sets ...string) *Scenario {
	t.Helper()
	s, err := ParseWith([]byte(src), path, sets)
	if err != nil {
		t.Fatalf("%v\nsource:\n%s", err, src)
	}
	return s
}

// A model preset fills the shape from config.json; each key overrides it.
func TestModelPresets(t *testing.T) {
	s := parseOK(t, doc("[model]\npreset = \"llama-3.1-8b\"\n"))
	want := Model{Preset: "llama-3.1-8b", Layers: 32, KVHeads: 8, HeadDim: 128, Heads: 32, Params: 8_030_261_248, DType: "bf16", BlockTokens: 512, Hidden: 4096}
	if s.Model != want {
		t.Errorf("llama-3.1-8b: %+v\nwant %+v", s.Model, want)
	}
	if got := s.Model.BytesPerToken(); got != 128<<10 { // 2 x 32 x 8 x 128 x 2
		t.Errorf("BytesPerToken %d", got)
	}
	s = parseOK(t, doc("[model]\npreset = \"qwen2.5-7b\"\nlayers = 2\nheads = 8\nparams = 1e9\ndtype = \"fp8\"\n"))
	want = Model{Preset: "qwen2.5-7b", Layers: 2, KVHeads: 4, HeadDim: 128, Heads: 8, Params: 1e9, DType: "fp8", BlockTokens: 512, Hidden: 3584}
	if s.Model != want {
		t.Errorf("overridden qwen2.5-7b: %+v\nwant %+v", s.Model, want)
	}
	if got := s.Model.WeightBytes(); got != 1e9 {
		t.Errorf("fp8 weights of 1e9 parameters: %g bytes", got)
	}
	for _, name := range ModelPresets() {
		p, _ := LookupModel(name)
		if p.Heads%p.KVHeads != 0 || p.Params < 1e9 || p.Layers < 1 || p.HeadDim < 1 {
			t.Errorf("preset %s: %+v", name, p)
		}
		parseOK(t, doc("[model]\npreset = \""+name+"\"\n[gpu]\npreset = \"b200\"\ntp = 8\n"))
	}
}

// A GPU preset gives the data sheet's figures, each overridable; the
// figures stay per GPU (tp multiplies them where they are used).
func TestGPUPresets(t *testing.T) {
	s := parseOK(t, doc("[model]\npreset = \"llama-3.1-70b\"\n[gpu]\npreset = \"h200\"\ntp = 4\npeak_tflops = 900\n"))
	g := s.GPU
	if g.Preset != "h200" || g.TP != 4 || g.PeakTFLOPs != 900 || g.HBMBandwidth != 4.8e12 || g.HBMCapacity != 141<<30 ||
		g.StepModel != "roofline" || g.ComputeEff != 0.5 || g.MemoryEff != 0.8 || g.StepOverhead != 1e6 || g.LegacyStep {
		t.Errorf("h200 x4: %+v", g)
	}
	want := map[string]GPUPreset{
		"h100": {989, 3.35e12, 80 << 30}, "h200": {989, 4.8e12, 141 << 30}, "a100": {312, 2.039e12, 80 << 30},
		"l40s": {362, 0.864e12, 48 << 30}, "b200": {2250, 8e12, 180 << 30},
		"h100-sxm": {989, 3.35e12, 80 << 30}, "h100-pcie": {756, 2e12, 80 << 30}, "h20": {148, 4e12, 96 << 30},
		"rtx-4090": {165.2, 1.008e12, 24 << 30}, "rtx-pro-6000": {503.8, 1.792e12, 96 << 30}, "mi300x": {1307.4, 5.3e12, 192 << 30},
	}
	if !slices.Equal(GPUPresets(), slices.Sorted(maps.Keys(want))) {
		t.Errorf("GPU presets %v", GPUPresets())
	}
	for name, w := range want {
		s := parseOK(t, doc("[gpu]\npreset = \""+name+"\"\nhbm_bandwidth = \"1TB/s\"\n[model]\npreset = \"llama-3.2-3b\"\n"))
		if p, _ := LookupGPU(name); p != w || s.GPU.PeakTFLOPs != w.PeakTFLOPs || s.GPU.HBMBandwidth != 1e12 || s.GPU.HBMCapacity != w.HBMCapacity {
			t.Errorf("%s: preset %+v, scenario %+v; want %+v", name, p, s.GPU, w)
		}
	}
}

// The step model a file gets when it names none: scenarios written for the
// rate engine stay linear (the legacy mapping), a described GPU is a
// roofline, coefficients are linear.
func TestStepModelDefault(t *testing.T) {
	const m8b = "[model]\npreset = \"llama-3.1-8b\"\n"
	cases := []struct {
		name, src string
		model     string
		legacy    bool
	}{
		{"no gpu table", doc(""), "linear", true},
		{"rates only", doc("[gpu]\nprefill_tokens_per_s = 1e5\ndecode_tokens_per_s = 100\n"), "linear", true},
		{"rates and a preset", doc(m8b + "[gpu]\npreset = \"h100\"\nprefill_tokens_per_s = 1e5\n"), "roofline", false},
		{"a preset", doc(m8b + "[gpu]\npreset = \"a100\"\n"), "roofline", false},
		{"figures without rates", doc(m8b + "[gpu]\npeak_tflops = 100\nhbm_bandwidth = \"1TB/s\"\n"), "roofline", false},
		{"a coefficient and a preset", doc("[gpu]\npreset = \"h100\"\nc_decode = \"30us\"\n[[tier]]\nkind = \"hbm\"\ncapacity = \"1GiB\"\n"), "linear", false},
		{"explicit linear", doc("[gpu]\npreset = \"h100\"\nstep_model = \"linear\"\n[[tier]]\nkind = \"hbm\"\ncapacity = \"1GiB\"\n"), "linear", true},
		{"roofline of a simple engine needs no figures", doc("[gpu]\nengine = \"simple\"\nstep_model = \"roofline\"\n"), "roofline", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := parseOK(t, c.src).GPU
			if g.StepModel != c.model || g.LegacyStep != c.legacy {
				t.Errorf("step model %q legacy %v, want %q %v", g.StepModel, g.LegacyStep, c.model, c.legacy)
			}
		})
	}
}

// Linear coefficients: given ones as written (fractions of a ns kept),
// the others 0; none given: the legacy mapping of the rates.
func TestLinearCoefficients(t *testing.T) {
	g := parseOK(t, doc("[gpu]\nc0 = \"4.5ms\"\nc_prefill = \"40us\"\nc_ctx = \"0.25ns\"\nattention_ns_per_token2 = 0.5\n")).GPU
	if g.C0 != 4.5e6 || g.CPrefill != 4e4 || g.CDecode != 0 || g.CCtx != 0.25 || g.LegacyStep || g.AttentionNsPerToken2 != 0.5 {
		t.Errorf("coefficients %+v", g)
	}
	g = parseOK(t, doc("[gpu]\nprefill_tokens_per_s = 100000\ndecode_tokens_per_s = 100\n")).GPU
	if g.C0 != 1e7 || g.CPrefill != 1e4 || g.CDecode != 0 || g.CCtx != 0 || !g.LegacyStep {
		t.Errorf("legacy mapping %+v", g)
	}
	g = parseOK(t, doc("[gpu]\nc_decode = 0\n")).GPU
	if g.C0 != 0 || g.CPrefill != 0 || g.LegacyStep {
		t.Errorf("one coefficient given as 0: %+v", g)
	}
}

// The hbm tier's default capacity with a known GPU memory: what vLLM
// leaves for KV, 0.9 x memory x tp minus the weights.
func TestHBMCapacityDefault(t *testing.T) {
	const m8b = "[model]\npreset = \"llama-3.1-8b\"\n"
	weights := 8_030_261_248 * 2.
	kv := func(gib, tp int, w float64) int64 { return int64(0.9*float64(int64(gib)<<30)*float64(tp) - w) }
	cases := []struct {
		name, src string
		want      int64
	}{
		{"h100", doc(m8b + "[gpu]\npreset = \"h100\"\n"), kv(80, 1, weights)},
		{"h100 tp 2", doc(m8b + "[gpu]\npreset = \"h100\"\ntp = 2\n"), kv(80, 2, weights)},
		{"hbm_capacity without a preset", doc(m8b + "[gpu]\nhbm_capacity = \"40GiB\"\n"), kv(40, 1, weights)},
		{"given capacity wins", doc(m8b + "[gpu]\npreset = \"h100\"\n[[tier]]\nkind = \"hbm\"\ncapacity = \"10GiB\"\n"), 10 << 30},
		{"no GPU memory: the kind's default", doc(m8b), 60 << 30},
		{"fp8 weights", doc(m8b + "dtype = \"fp8\"\n[gpu]\npreset = \"l40s\"\n"), kv(48, 1, weights/2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := parseOK(t, c.src)
			if got := s.Tiers[0].Capacity; got != c.want {
				t.Errorf("hbm capacity %d (%s), want %d (%s)", got, FormatBytes(got), c.want, FormatBytes(c.want))
			}
			if len(s.Tiers) > 1 && s.Tiers[1].Capacity != 512<<30 {
				t.Errorf("dram capacity %d changed", s.Tiers[1].Capacity)
			}
		})
	}
}

// Per-tier eviction: a table by tier name, with a default for the rest;
// the policy's parameters go to the tiers whose policy takes them.
func TestEvictionTable(t *testing.T) {
	const tiers3 = "[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n[[tier]]\nkind = \"ssd\"\n"
	s := parseOK(t, doc(tiers3+"[[policy]]\nname = \"split\"\neviction = { hbm = \"lru\", ssd = \"fifo\", default = \"scenario_test_params\" }\nalpha = 2\n"+
		"[[policy]]\neviction = { default = \"lru\" }\n[[policy]]\nname = \"one\"\neviction = \"fifo\"\n"))
	p := s.Policies[0]
	if !slices.Equal(p.Evictions, []string{"lru", "scenario_test_params", "fifo"}) || p.Eviction != "hbm=lru,dram=scenario_test_params,ssd=fifo" {
		t.Errorf("table: %q, %q", p.Evictions, p.Eviction)
	}
	if len(p.TierParams(0)) != 0 || !reflect.DeepEqual(p.TierParams(1), map[string]float64{"alpha": 2}) || len(p.TierParams(2)) != 0 {
		t.Errorf("params by tier: %v %v %v", p.TierParams(0), p.TierParams(1), p.TierParams(2))
	}
	if p.Offline() {
		t.Error("offline without an offline policy")
	}
	if q := s.Policies[1]; q.Name != "lru" || q.Eviction != "lru" || !slices.Equal(q.Evictions, []string{"lru", "lru", "lru"}) {
		t.Errorf("default only: %+v", q)
	}
	if q := s.Policies[2]; q.TierEviction(2) != "fifo" || !slices.Equal(q.Evictions, []string{"fifo", "fifo", "fifo"}) {
		t.Errorf("one name: %+v", q)
	}
	s = parseOK(t, doc(tiers3+"[[policy]]\nname = \"bound\"\neviction = { hbm = \"lru\", default = \"belady\" }\n"))
	if !s.Policies[0].Offline() {
		t.Error("belady below hbm is not offline")
	}
	if d := s.Describe(); !strings.Contains(d, "policies: bound (hbm=lru,dram=belady,ssd=belady)") {
		t.Errorf("Describe:\n%s", d)
	}
	// The table written as a sub-table, and through --set.
	s = parseOK(t, doc("[[policy]]\nname = \"x\"\n[policy.eviction]\nhbm = \"fifo\"\ndram = \"lru\"\n"))
	if s.Policies[0].Eviction != "hbm=fifo,dram=lru" {
		t.Errorf("sub-table: %q", s.Policies[0].Eviction)
	}
	s = parseOK(t, doc("[[policy]]\nname = \"x\"\neviction = \"lru\"\n"), `policy.x.eviction={ dram = "fifo", default = "lru" }`)
	if s.Policies[0].Eviction != "hbm=lru,dram=fifo" {
		t.Errorf("--set: %q", s.Policies[0].Eviction)
	}
}

func TestStageAndSLO(t *testing.T) {
	s := parseOK(t, doc("[[policy]]\neviction = \"lru\"\n[[policy]]\nname = \"p\"\neviction = \"lru\"\nstage = \"pass\"\n"+
		"[[policy]]\nname = \"c\"\neviction = \"lru\"\nstage = \"copy\"\n[slo]\nttft_ms = 200\ntpot_ms = 0.5\n"))
	for i, want := range []core.Stage{core.StageCopy, core.StagePass, core.StageCopy} {
		if s.Policies[i].Strategy.Stage != want {
			t.Errorf("policy %d: stage %v, want %v", i, s.Policies[i].Strategy.Stage, want)
		}
	}
	if s.SLO != (SLO{TTFTms: 200, TPOTms: 0.5}) || !s.SLO.Set() {
		t.Errorf("slo %+v", s.SLO)
	}
	if d := s.Describe(); !strings.Contains(d, "slo: TTFT <= 200 ms, TPOT <= 0.5 ms") || !strings.Contains(d, "p (lru stage=pass)") {
		t.Errorf("Describe:\n%s", d)
	}
	if s := parseOK(t, doc("[slo]\ntpot_ms = 40\n")); s.SLO != (SLO{TPOTms: 40}) {
		t.Errorf("tpot only: %+v", s.SLO)
	}
	if s := parseOK(t, doc("")); s.SLO.Set() {
		t.Errorf("no [slo]: %+v", s.SLO)
	}
	if s := parseOK(t, doc(""), "slo.ttft_ms=300", "gpu.max_num_seqs=4", "gpu.engine=simple"); s.SLO.TTFTms != 300 || s.GPU.MaxSeqs != 4 || s.GPU.Engine != "simple" {
		t.Errorf("--set: %+v %+v", s.SLO, s.GPU)
	}
}

func TestDescribeGPU(t *testing.T) {
	d := parseOK(t, doc("[model]\npreset = \"llama-3.1-70b\"\n[gpu]\npreset = \"h100\"\ntp = 4\n")).Describe()
	for _, part := range []string{"model: llama-3.1-70b, 80 layers", "64 query heads, 7.06e+10 parameters",
		"gpu: batched engine (8192 tokens per step), 256 running requests at most, 4 x h100 (989 TFLOP/s, 3.35 TB/s, 80 GiB)",
		"steps: roofline, 0.5 of peak FLOP/s, 0.8 of HBM bandwidth, 1ms overhead"} {
		if !strings.Contains(d, part) {
			t.Errorf("Describe lacks %q:\n%s", part, d)
		}
	}
	d = parseOK(t, doc("[gpu]\nprefill_tokens_per_s = 1e5\ndecode_tokens_per_s = 100\n")).Describe()
	if want := "steps: linear, 10ms + 10us/prefill token + 0ns/decoding sequence + 0ns/context token + 0 ns/token^2 (from prefill 100000 tok/s, decode 100 tok/s)"; !strings.Contains(d, want) {
		t.Errorf("Describe lacks %q:\n%s", want, d)
	}
}

func TestNewKeyErrors(t *testing.T) {
	const m8b = "[model]\npreset = \"llama-3.1-8b\"\n" // lines 1-2
	const tiers3 = "[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n[[tier]]\nkind = \"ssd\"\n"
	cases := []struct{ name, src, want string }{
		// [model]
		{"model preset", doc("[model]\npreset = \"gpt-5\"\n"), `scenarios/x.toml:2: model: preset: unknown preset "gpt-5" (known: deepseek-v3, gemma-3-27b, gpt-oss-120b, kimi-k2, llama-3.1-405b, llama-3.1-70b, llama-3.1-8b, llama-3.2-3b, llama-3.3-70b, llama-4-scout, mistral-small-24b, qwen2.5-32b, qwen2.5-72b, qwen2.5-7b, qwen3-235b-a22b, qwen3-30b-a3b, qwen3-32b, qwen3-8b)`},
		{"model preset type", doc("[model]\npreset = 8\n"), `scenarios/x.toml:2: model: preset: must be a string, got integer 8`},
		{"heads zero", doc(m8b + "heads = 0\n"), `scenarios/x.toml:3: model: heads: must be > 0`},
		{"heads not a multiple", doc(m8b + "heads = 12\n"), `scenarios/x.toml:3: model: heads: 12 query heads are not a multiple of 8 kv_heads`},
		{"kv_heads override breaks the preset's heads", doc(m8b + "kv_heads = 5\n"), `scenarios/x.toml:3: model: kv_heads: 32 query heads are not a multiple of 5 kv_heads`},
		{"params negative", doc(m8b + "params = -1\n"), `scenarios/x.toml:3: model: params: must be > 0`},
		{"params text", doc(m8b + "params = \"8B\"\n"), `scenarios/x.toml:3: model: params: must be a number, got string "8B"`},
		{"params too many", doc(m8b + "params = 1e30\n"), `scenarios/x.toml:3: model: params: 1e+30 parameters of bf16 is past what kvsim can count in bytes`},

		// [gpu]
		{"engine", doc("[gpu]\nengine = \"async\"\n"), `scenarios/x.toml:2: gpu: engine: unknown engine "async" (known: batched, simple)`},
		{"max_num_batched_tokens", doc("[gpu]\nmax_num_batched_tokens = 0\n"), `scenarios/x.toml:2: gpu: max_num_batched_tokens: must be >= 1`},
		{"max_num_batched_tokens huge", doc("[gpu]\nmax_num_batched_tokens = 4294967296\n"), `scenarios/x.toml:2: gpu: max_num_batched_tokens: must be <= 2147483647`},
		{"max_num_seqs", doc("[gpu]\nmax_num_seqs = -1\n"), `scenarios/x.toml:2: gpu: max_num_seqs: must be >= 1`},
		{"max_num_seqs float", doc("[gpu]\nmax_num_seqs = 2.5\n"), `scenarios/x.toml:2: gpu: max_num_seqs: must be an integer, got float 2.5`},
		{"step_model", doc("[gpu]\nstep_model = \"exact\"\n"), `scenarios/x.toml:2: gpu: step_model: unknown step_model "exact" (known: roofline, linear)`},
		{"gpu preset", doc("[gpu]\npreset = \"h800\"\n"), `scenarios/x.toml:2: gpu: preset: unknown preset "h800" (known: a100, b200, h100, h100-pcie, h100-sxm, h20, h200, l40s, mi300x, rtx-4090, rtx-pro-6000)`},
		{"tp", doc("[gpu]\ntp = 0\n"), `scenarios/x.toml:2: gpu: tp: must be >= 1`},
		{"peak_tflops", doc("[gpu]\npeak_tflops = 0\n"), `scenarios/x.toml:2: gpu: peak_tflops: must be > 0`},
		{"hbm_bandwidth unit", doc("[gpu]\nhbm_bandwidth = \"3TB\"\n"), `scenarios/x.toml:2: gpu: hbm_bandwidth: bad bandwidth "3TB": unknown unit "TB" (use GB/s, GiB/s, MB/s, MiB/s, Gbit/s, Gbps, ...)`},
		{"hbm_capacity", doc("[gpu]\nhbm_capacity = \"-80GB\"\n"), `scenarios/x.toml:2: gpu: hbm_capacity: must be > 0`},
		{"compute_efficiency above 1", doc(m8b + "[gpu]\npreset = \"h100\"\ncompute_efficiency = 1.5\n"), `scenarios/x.toml:5: gpu: compute_efficiency: must be > 0 and <= 1`},
		{"memory_efficiency zero", doc(m8b + "[gpu]\npreset = \"h100\"\nmemory_efficiency = 0\n"), `scenarios/x.toml:5: gpu: memory_efficiency: must be > 0 and <= 1`},
		{"step_overhead", doc(m8b + "[gpu]\npreset = \"h100\"\nstep_overhead = \"-1ms\"\n"), `scenarios/x.toml:5: gpu: step_overhead: must be >= 0`},
		{"step_overhead bare", doc(m8b + "[gpu]\npreset = \"h100\"\nstep_overhead = 5\n"), `scenarios/x.toml:5: gpu: step_overhead: must be a duration like "10us", got integer 5`},
		{"c0 no unit", doc("[gpu]\nc0 = \"5\"\n"), `scenarios/x.toml:2: gpu: c0: bad duration "5": missing unit (ns, us, ms, s)`},
		{"c_prefill number", doc("[gpu]\nc_prefill = 40.5\n"), `scenarios/x.toml:2: gpu: c_prefill: must be a duration like "40us" or "0.5ns", got float 40.5`},
		{"c_ctx negative", doc("[gpu]\nc_ctx = \"-1ns\"\n"), `scenarios/x.toml:2: gpu: c_ctx: must be >= 0`},
		{"c_decode past the time limit", doc("[gpu]\nc_decode = \"5000000000s\"\n"), `scenarios/x.toml:2: gpu: c_decode: 5000000000s is past the simulated-time limit of 146 years (2^62 ns)`},
		{"coefficient with roofline", doc(m8b + "[gpu]\npreset = \"h100\"\nstep_model = \"roofline\"\nc_decode = \"1us\"\n"), `scenarios/x.toml:6: gpu: c_decode: only with step_model = "linear" (step_model is "roofline")`},
		{"peak with linear", doc(m8b + "[gpu]\npreset = \"h100\"\nstep_model = \"linear\"\npeak_tflops = 5\n"), `scenarios/x.toml:6: gpu: peak_tflops: only with step_model = "roofline" (step_model is "linear")`},
		// Rates make the step model linear: a GPU figure beside them would be unused.
		{"figures with rates", doc("[gpu]\nhbm_bandwidth = \"1TB/s\"\ndecode_tokens_per_s = 10\n"), `scenarios/x.toml:2: gpu: hbm_bandwidth: only with step_model = "roofline" (step_model is "linear")`},
		{"bandwidth with coefficients", doc(m8b + "[gpu]\nhbm_bandwidth = \"3TB/s\"\nc0 = \"1ms\"\n"), `scenarios/x.toml:4: gpu: hbm_bandwidth: only with step_model = "roofline" (step_model is "linear")`},
		{"efficiency with linear", doc("[gpu]\nprefill_tokens_per_s = 1000\ncompute_efficiency = 0.4\n"), `scenarios/x.toml:3: gpu: compute_efficiency: only with step_model = "roofline" (step_model is "linear")`},
		{"roofline without params", doc("[gpu]\npreset = \"h100\"\n[[tier]]\nkind = \"hbm\"\ncapacity = \"1GiB\"\n"), `scenarios/x.toml:6: model: params: required for step_model = "roofline" (or a [model] preset: deepseek-v3, gemma-3-27b, gpt-oss-120b, kimi-k2, llama-3.1-405b, llama-3.1-70b, llama-3.1-8b, llama-3.2-3b, llama-3.3-70b, llama-4-scout, mistral-small-24b, qwen2.5-32b, qwen2.5-72b, qwen2.5-7b, qwen3-235b-a22b, qwen3-30b-a3b, qwen3-32b, qwen3-8b)`},
		{"roofline without heads", doc("[gpu]\npreset = \"h100\"\n[model]\nlayers = 2\nkv_heads = 1\nhead_dim = 64\nparams = 1e9\n"), `scenarios/x.toml:3: model: heads: required for step_model = "roofline" (query heads, or a [model] preset)`},
		{"roofline without peak", doc(m8b + "[gpu]\nstep_model = \"roofline\"\nhbm_bandwidth = \"1TB/s\"\n"), `scenarios/x.toml:3: gpu: peak_tflops: required for step_model = "roofline" (or a [gpu] preset: a100, b200, h100, h100-pcie, h100-sxm, h20, h200, l40s, mi300x, rtx-4090, rtx-pro-6000)`},
		{"roofline without bandwidth", doc(m8b + "[gpu]\npeak_tflops = 100\n"), `scenarios/x.toml:3: gpu: hbm_bandwidth: required for step_model = "roofline" (or a [gpu] preset: a100, b200, h100, h100-pcie, h100-sxm, h20, h200, l40s, mi300x, rtx-4090, rtx-pro-6000)`},
		{"roofline past the time limit", doc(m8b + "[gpu]\npreset = \"h100\"\npeak_tflops = 1e-20\n"), `scenarios/x.toml:5: gpu: peak_tflops: one token takes 1.02e+11 years of compute, past the simulated-time limit of 146 years (2^62 ns)`},
		{"weights past the GPU memory", doc("[model]\npreset = \"llama-3.1-70b\"\n[gpu]\npreset = \"h100\"\n"), `scenarios/x.toml:5: tier "hbm": capacity: 131.42 GiB of weights leave no room for KV in 0.9 x 80 GiB x tp 1; give capacity or raise tp`},
		{"GPU memory without params", doc("[gpu]\npreset = \"h100\"\nstep_model = \"linear\"\n"), `scenarios/x.toml:8: tier "hbm": capacity: required with a GPU memory size (a [gpu] preset or hbm_capacity) unless [model] params or preset sizes the weights`},

		// [[policy]]
		{"stage", doc("[[policy]]\neviction = \"lru\"\nstage = \"skip\"\n"), `scenarios/x.toml:3: policy "lru": stage: unknown stage "skip" (want "copy" or "pass")`},
		{"stage type", doc("[[policy]]\neviction = \"lru\"\nstage = true\n"), `scenarios/x.toml:3: policy "lru": stage: must be a string, got boolean true`},
		{"idle_rank open loop", doc("[[policy]]\neviction = \"lru\"\nidle_rank = \"observed\"\n"), `scenarios/x.toml:3: policy "lru": idle_rank: needs [workload] mode = "closed": an idle session is one waiting for its next call`},
		{"idle_rank unknown", doc("[[policy]]\neviction = \"lru\"\nidle_rank = \"always\"\n"), `scenarios/x.toml:3: policy "lru": idle_rank: unknown idle_rank "always" (known: off, observed, oracle)`},
		{"idle_rank batches", doc("[workload]\ntrace = \"t.jsonl\"\nmode = \"closed\"\n[[policy]]\neviction = \"mooncake\"\nidle_rank = \"oracle\"\n"), `scenarios/x.toml:6: policy "mooncake": idle_rank: tier "hbm" (mooncake): idle ranking cannot wrap a policy that evicts in batches`},
		{"idle_rank offline", doc("[workload]\ntrace = \"t.jsonl\"\nmode = \"closed\"\n[[policy]]\neviction = \"belady\"\nidle_rank = \"oracle\"\n"), `scenarios/x.toml:6: policy "belady": idle_rank: tier "hbm": cannot wrap offline policy "belady"`},
		{"eviction type", doc("[[policy]]\neviction = 3\n"), `scenarios/x.toml:2: policy 1: eviction: must be a policy name or a table of them by tier name ({ hbm = "lru", ssd = "fifo" }), got integer 3`},
		{"eviction unknown tier", doc(tiers3 + "[[policy]]\nname = \"p\"\neviction = { hbm = \"lru\", nvme = \"fifo\", default = \"lru\" }\n"), `scenarios/x.toml:9: policy "p": eviction: nvme: unknown tier "nvme" (tiers: hbm, dram, ssd; or default)`},
		{"eviction missing tier", doc(tiers3 + "[[policy]]\nname = \"p\"\neviction = { hbm = \"lru\", ssd = \"fifo\" }\n"), `scenarios/x.toml:9: policy "p": eviction: no policy for tier "dram": name it in the table or add default = "..."`},
		{"eviction table unknown policy", doc(tiers3 + "[[policy]]\nname = \"p\"\neviction = { hbm = \"lru\", default = \"nope\" }\n"), `scenarios/x.toml:9: policy "p": eviction: default: unknown policy "nope" (known: ` + strings.Join(policyNames(), ", ") + `)`},
		{"eviction table value type", doc(tiers3 + "[[policy]]\nname = \"p\"\neviction = { hbm = 1, default = \"lru\" }\n"), `scenarios/x.toml:9: policy "p": eviction: hbm: must be a policy name, got integer 1`},
		{"eviction sub-table of the second policy", doc(tiers3 + "[[policy]]\nname = \"a\"\n[policy.eviction]\ndefault = \"lru\"\n[[policy]]\nname = \"b\"\n[policy.eviction]\nhbm = \"lru\"\n"),
			`scenarios/x.toml:13: policy "b": eviction: no policy for tier "dram": name it in the table or add default = "..."`},
		{"eviction table needs a name", doc(tiers3 + "[[policy]]\neviction = { hbm = \"lru\", default = \"fifo\" }\n"), `scenarios/x.toml:7: policy 1: name: required when tiers differ in eviction (hbm=lru,dram=fifo,ssd=fifo): it labels the results and --set`},
		{"eviction table parameter nobody takes", doc(tiers3 + "[[policy]]\nname = \"p\"\neviction = { hbm = \"lru\", default = \"fifo\" }\nalpha = 1\n"), `scenarios/x.toml:10: unknown key "alpha" in [[policy]] "p" (eviction "hbm=lru,dram=fifo,ssd=fifo" takes no parameters)`},

		// [slo]
		{"ttft_ms zero", doc("[slo]\nttft_ms = 0\n"), `scenarios/x.toml:2: slo: ttft_ms: must be > 0`},
		{"tpot_ms negative", doc("[slo]\ntpot_ms = -3\n"), `scenarios/x.toml:2: slo: tpot_ms: must be > 0`},
		{"tpot_ms text", doc("[slo]\ntpot_ms = \"50ms\"\n"), `scenarios/x.toml:2: slo: tpot_ms: must be a number, got string "50ms"`},
		{"slo unknown key", doc("[slo]\nttft = 5\n"), `scenarios/x.toml:2: unknown key "ttft" in [slo]`},
		{"slo not a table", doc("slo = 5\n"), `scenarios/x.toml:1: slo: must be a table ([slo]), got integer 5`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), path)
			if err == nil {
				t.Fatalf("no error; want %s\nsource:\n%s", c.want, c.src)
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

func TestParseFineDuration(t *testing.T) {
	for in, want := range map[string]float64{"0.25ns": 0.25, "40us": 40e3, "1.5ms": 1.5e6, "2s": 2e9, "0": 0, "0.0": 0, "48.5 ns": 48.5} {
		if got, err := ParseFineDuration(in); err != nil || got != want {
			t.Errorf("ParseFineDuration(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5", "ns", "1 fortnight", "1..2ns"} {
		if got, err := ParseFineDuration(in); err == nil {
			t.Errorf("ParseFineDuration(%q) = %g, no error", in, got)
		}
	}
	for ns, want := range map[float64]string{0.25: "0.25ns", 48.5: "48.5ns", 40e3: "40us", 1e7: "10ms"} {
		if got := FormatFineDuration(ns); got != want {
			t.Errorf("FormatFineDuration(%g) = %q, want %q", ns, got, want)
		}
	}
}

func policyNames() []string { return policy.Names() }

// The README's preset tables say what the presets hold.
func TestPresetsDocumented(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(strings.Trim(l, "| "), " | ")
		if len(f) < 5 || !strings.HasPrefix(f[0], "`") {
			continue
		}
		name := strings.Trim(f[0], "`")
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Errorf("README preset row %q: %v", l, err)
			}
			return v
		}
		if g, ok := LookupGPU(name); ok {
			seen++
			bw, err1 := ParseBandwidth(strings.ReplaceAll(f[2], " ", ""))
			c, err2 := ParseBytes(strings.ReplaceAll(f[3], " ", ""))
			if num(f[1]) != g.PeakTFLOPs || err1 != nil || math.Abs(bw-g.HBMBandwidth) > 1e-9*g.HBMBandwidth || err2 != nil || c != g.HBMCapacity {
				t.Errorf("README row %q differs from preset %+v", l, g)
			}
		}
		if m, ok := LookupModel(name); ok && len(f) == 6 {
			seen++
			if int(num(f[1])) != m.Layers || int(num(f[2])) != m.Heads || int(num(f[3])) != m.KVHeads || int(num(f[4])) != m.HeadDim ||
				math.Abs(num(f[5])-m.Params)/m.Params > 0.002 { // three figures
				t.Errorf("README row %q differs from preset %+v", l, m)
			}
		}
	}
	if want := len(GPUPresets()) + len(ModelPresets()); seen != want {
		t.Errorf("README documents %d presets, want %d", seen, want)
	}
}
