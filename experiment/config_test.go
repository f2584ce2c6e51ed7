package experiment

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/policy"
	"kvsim/scenario"
	"kvsim/sim"
)

func parse(t *testing.T, src string, sets ...string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.ParseWith([]byte(src), "s.toml", sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

const threeTiers = `[model]
preset = "llama-3.1-8b"
[gpu]
preset = "h100"
tp = 2
max_num_seqs = 64
max_num_batched_tokens = 4096
[[tier]]
kind = "hbm"
[[tier]]
kind = "dram"
[[tier]]
kind = "ssd"
[workload]
trace = "t.jsonl"
[[policy]]
name = "split"
eviction = { hbm = "lru", default = "fifo" }
stage = "pass"
[[policy]]
eviction = "lru"
`

// The configs carry the scenario's engine keys: max_num_seqs as the core's
// running bound, the stage, each tier's own eviction policy, the engine,
// its token budget and a roofline of the presets.
func TestSimConfigCarriesScenario(t *testing.T) {
	sc := parse(t, threeTiers)
	cfg := SimConfig(sc, sc.Policies[0], nil)
	if cfg.Core.MaxRunning != 64 || cfg.Core.Strategy.Stage != core.StagePass {
		t.Errorf("core: MaxRunning %d, stage %v", cfg.Core.MaxRunning, cfg.Core.Strategy.Stage)
	}
	if cfg.GPU.Engine != sim.EngineBatched || cfg.GPU.MaxBatchedTokens != 4096 {
		t.Errorf("gpu: %+v", cfg.GPU)
	}
	want := []reflect.Type{reflect.TypeOf(&policy.LRU{}), reflect.TypeOf(&policy.FIFO{}), reflect.TypeOf(&policy.FIFO{})}
	for i, w := range want {
		p, err := cfg.Core.NewPolicy(i, sc.Tiers[i].Capacity)
		if err != nil {
			t.Fatal(err)
		}
		if got := reflect.TypeOf(p); got != w {
			t.Errorf("tier %s: policy %v, want %v", sc.Tiers[i].Name, got, w)
		}
	}
	if c := CoreConfig(sc, sc.Policies[1], nil); c.Strategy.Stage != core.StageCopy {
		t.Errorf("default stage %v", c.Strategy.Stage)
	}
	r, ok := cfg.GPU.Step.(sim.RooflineStep)
	if !ok {
		t.Fatalf("step model %T, want a roofline", cfg.GPU.Step)
	}
	want8b := sim.RooflineStep{PeakFLOPs: 2 * 989e12, HBMBandwidth: 2 * 3.35e12, ComputeEff: 0.5, MemoryEff: 0.8, OverheadNs: 1e6,
		Params: 8_030_261_248, WeightBytes: 2 * 8_030_261_248, AttnFLOPsPerPair: 4 * 32 * 32 * 128, KVBytesPerToken: 128 << 10}
	if r != want8b {
		t.Errorf("roofline %+v\nwant     %+v", r, want8b)
	}
	// One decode step of one short sequence reads the weights: 16 GB at
	// 0.8 x 6.7 TB/s is 3 ms, plus the overhead.
	if ns := r.StepNs(&sim.StepBatch{DecodeSeqs: 1, ContextTokens: 100, AttnPairs: 101}); ns < 3.9e6 || ns > 4.1e6 {
		t.Errorf("one decode step %g ns", ns)
	}
}

// Step models: the linear coefficients as given (attention_ns_per_token2
// the per-pair term), nil for a rate-only scenario (the simulator's
// legacy mapping), and the simple engine keeps no step model.
func TestStepModels(t *testing.T) {
	base := "[model]\nlayers = 32\nkv_heads = 8\nhead_dim = 128\n[[tier]]\nkind = \"hbm\"\n[workload]\ntrace = \"t\"\n[[policy]]\neviction = \"lru\"\n"
	sc := parse(t, base+"[gpu]\nc0 = \"2ms\"\nc_prefill = \"30us\"\nc_decode = \"0.5us\"\nc_ctx = \"0.25ns\"\nattention_ns_per_token2 = 0.001\n")
	if got, want := StepModel(sc), (sim.LinearStep{C0: 2e6, CPrefill: 3e4, CDecode: 500, CCtx: 0.25, CAttn: 0.001}); got != want {
		t.Errorf("linear %+v, want %+v", got, want)
	}
	sc = parse(t, base+"[gpu]\nprefill_tokens_per_s = 100000\ndecode_tokens_per_s = 100\n")
	cfg := SimConfig(sc, sc.Policies[0], nil)
	if cfg.GPU.Step != nil || cfg.GPU.Engine != sim.EngineBatched || cfg.GPU.PrefillTokensPerSec != 1e5 || cfg.GPU.DecodeTokensPerSec != 100 {
		t.Errorf("legacy scenario: %+v", cfg.GPU)
	}
	sc = parse(t, base+"[gpu]\nengine = \"simple\"\nload = \"serial\"\n")
	if cfg := SimConfig(sc, sc.Policies[0], nil); cfg.GPU.Engine != sim.EngineSimple || cfg.GPU.Step != nil || !cfg.GPU.Serial || cfg.Core.MaxRunning != 256 {
		t.Errorf("simple engine: %+v, MaxRunning %d", cfg.GPU, cfg.Core.MaxRunning)
	}
}

// Every shipped scenario loads; those that give a GPU preset get a
// roofline, the one written with the old rates (mooncake_conversation) the
// legacy mapping (no step model: the simulator maps its rates).
func TestShippedScenariosStepModel(t *testing.T) {
	paths, err := filepath.Glob("../scenarios/*.toml")
	if err != nil || len(paths) == 0 {
		t.Fatal(paths, err)
	}
	legacy := 0
	for _, p := range paths {
		sc := load(t, p)
		step := StepModel(sc)
		if sc.GPU.Preset != "" {
			if _, ok := step.(sim.RooflineStep); !ok {
				t.Errorf("%s: step model %T", p, step)
			}
			continue
		}
		if step != nil || !sc.GPU.LegacyStep {
			t.Errorf("%s: step model %+v, want the legacy mapping", p, step)
		}
		legacy++
	}
	if legacy == 0 {
		t.Error("no shipped scenario shows the old rates still loading")
	}
}

// An offline policy on any tier makes the policy offline: kvsim run reads
// the future for it, and the tier gets a working Belady.
func TestOfflineOnOneTier(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(trace, []byte(`{"timestamp": 0, "input_length": 1024, "output_length": 2, "hash_ids": [1, 2]}`+"\n"+
		`{"timestamp": 10, "input_length": 1024, "output_length": 2, "hash_ids": [1, 3]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "[model]\nlayers = 2\nkv_heads = 1\nhead_dim = 64\nblock_tokens = 512\n[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n" +
		"[workload]\ntrace = \"" + trace + "\"\n[[policy]]\nname = \"b\"\neviction = { hbm = \"lru\", dram = \"belady\" }\n"
	sc := parse(t, src)
	p := sc.Policies[0]
	if !p.Offline() {
		t.Fatal("belady on dram is not offline")
	}
	sum, err := Run(t.Context(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Policies[0].Eviction; got != "hbm=lru,dram=belady" {
		t.Errorf("summary eviction %q", got)
	}
}

// [gpu] hbm_free reaches the core: "landed" (the default) holds an evicted
// block's HBM until its copy has left, "evict" frees it at once; the
// scenario's description names the old model.
func TestHBMFreeKey(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		hold bool
	}{{nil, true}, {[]string{"gpu.hbm_free=landed"}, true}, {[]string{"gpu.hbm_free=evict"}, false}} {
		sc := parse(t, threeTiers, tc.sets...)
		if got := SimConfig(sc, sc.Policies[0], nil).Core.HoldEvicted; got != tc.hold {
			t.Errorf("%v: HoldEvicted %v, want %v", tc.sets, got, tc.hold)
		}
		if named := strings.Contains(sc.Describe(), "evicted HBM free at once"); named == tc.hold {
			t.Errorf("%v: description %q", tc.sets, sc.Describe())
		}
	}
}
