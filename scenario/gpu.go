package scenario

import (
	"fmt"
	"math"
	"strings"

	"kvsim/core"
)

// GPU is the compute model.
type GPU struct {
	Engine           string `key:"engine"`                 // "batched" or "simple"
	MaxBatchedTokens int    `key:"max_num_batched_tokens"` // tokens one step computes at most
	MaxSeqs          int    `key:"max_num_seqs"`           // running requests at most
	PageTokens       int    `key:"page_tokens"`            // the engine's KV page for generated tokens
	StepModel        string `key:"step_model"`             // "roofline" or "linear"; set from the keys given when absent

	Preset string `key:"preset"`               // "" for none
	TP     int    `key:"tp"`                   // tensor-parallel GPUs
	DP     int    `key:"dp" json:",omitempty"` // attention data-parallel groups of tp GPUs; 0 for 1
	EP     int    `key:"ep" json:",omitempty"` // GPUs holding whole experts: 0 (1) or tp x dp

	// The link between the instance's GPUs; zero (none) charges nothing
	// for collectives, as before these keys.
	Interconnect          string  `key:"interconnect" json:",omitempty"`
	InterconnectBandwidth float64 `key:"interconnect_bandwidth" json:",omitempty"` // bytes/s per GPU, each way
	InterconnectLatency   int64   `key:"interconnect_latency" json:",omitempty"`   // ns per collective step

	PeakTFLOPs   float64 `key:"peak_tflops"`        // dense bf16 of one GPU; 0 when unknown
	HBMBandwidth float64 `key:"hbm_bandwidth"`      // bytes/s of one GPU; 0 when unknown
	HBMCapacity  int64   `key:"hbm_capacity"`       // bytes of one GPU; 0 when unknown
	ComputeEff   float64 `key:"compute_efficiency"` // share of peak FLOP/s reached
	MemoryEff    float64 `key:"memory_efficiency"`  // share of HBM bandwidth reached
	StepOverhead int64   `key:"step_overhead"`      // ns

	// The linear step model's coefficients, ns per unit. LegacyStep: none
	// was given, so the simulator derives the step from the rates below
	// (C0 and CPrefill then show what it derives).
	C0         float64 `key:"c0"`
	CPrefill   float64 `key:"c_prefill"`
	CDecode    float64 `key:"c_decode"`
	CCtx       float64 `key:"c_ctx"`
	LegacyStep bool

	PrefillTokensPerSec  float64 `key:"prefill_tokens_per_s"`
	AttentionNsPerToken2 float64 `key:"attention_ns_per_token2"`         // quadratic attention cost
	DecodeTokensPerSec   float64 `key:"decode_tokens_per_s"`             // per running request
	Load                 string  `key:"load"`                            // "layerwise" (loads overlap compute layer by layer) or "serial"
	HBMFree              string  `key:"hbm_free"`                        // "landed" (an evicted block's HBM is free once its copy left HBM) or "evict" (at once)
	CostPerHour          float64 `key:"cost_per_hour" json:",omitempty"` // dollars per GPU-hour; 0: none (omitted so run ids stay)
}

// GPUMemoryUtilization is the share of GPU memory the hbm tier's default
// capacity may fill with weights and KV: vLLM's gpu_memory_utilization
// default.
const GPUMemoryUtilization = 0.9

func parseGPU(t *table, m Model, mt *table) (GPU, error) {
	if t == nil {
		t = &table{p: mt.p, decl: sectionNamed("gpu"), name: "gpu", label: "gpu"} // every key at its default
	}
	given := func(key string) bool { _, ok := t.m[key]; return ok }
	var g GPU
	err := t.bind(&g, func(key string) (any, error) {
		if ic, ok := interconnects[g.Interconnect]; ok {
			if x := presetDefault(&ic, key); x != nil {
				return x, nil
			}
		}
		pre := gpuPresets[g.Preset]
		return presetDefault(&pre, key), nil
	})
	if err != nil {
		return g, err
	}
	if err := g.checkParallel(t, m, mt); err != nil {
		return g, err
	}
	coef := "" // the first linear coefficient given
	for _, k := range []string{"c0", "c_prefill", "c_decode", "c_ctx"} {
		if coef == "" && given(k) {
			coef = k
		}
	}
	if g.AttentionNsPerToken2 >= float64(core.MaxTime) {
		return g, t.errf("attention_ns_per_token2", "%g ns for one pair of tokens is past %s", g.AttentionNsPerToken2, timeLimit)
	}

	// The step model: explicit, or what the keys given describe.
	if !given("step_model") {
		switch {
		case coef != "":
			g.StepModel = "linear"
		case g.Preset != "":
			g.StepModel = "roofline"
		case given("prefill_tokens_per_s") || given("decode_tokens_per_s"):
			g.StepModel = "linear" // a scenario written for the rate engine
		case given("peak_tflops") || given("hbm_bandwidth"):
			g.StepModel = "roofline"
		default:
			g.StepModel = "linear" // nothing describes the GPU: the default rates
		}
	}
	for _, f := range t.decl.fields {
		if f.Only != "" && f.Only != `step_model = "`+g.StepModel+`"` && given(f.Name) {
			return g, t.errf(f.Name, "only with %s (step_model is %q)", f.Only, g.StepModel)
		}
	}
	switch g.StepModel {
	case "linear":
		if coef == "" {
			g.LegacyStep = true
			g.C0, g.CPrefill = 1e9/g.DecodeTokensPerSec, 1e9/g.PrefillTokensPerSec
		}
	case "roofline":
		if g.Engine != "batched" {
			break // only the batched engine steps
		}
		need := func(tt *table, key, what string) error {
			return tt.errf(key, `required for step_model = "roofline" (%s)`, what)
		}
		switch {
		case g.PeakTFLOPs == 0:
			return g, need(t, "peak_tflops", "or a [gpu] preset: "+strings.Join(GPUPresets(), ", "))
		case g.HBMBandwidth == 0:
			return g, need(t, "hbm_bandwidth", "or a [gpu] preset: "+strings.Join(GPUPresets(), ", "))
		case m.Params == 0:
			return g, need(mt, "params", "or a [model] preset: "+strings.Join(ModelPresets(), ", "))
		case m.Heads == 0:
			return g, need(mt, "heads", "query heads, or a [model] preset")
		}
		// One token's step must stay within simulated time.
		tp := float64(g.TP)
		compute := 2 * m.ActiveParams() / (g.PeakTFLOPs * 1e12 * tp * g.ComputeEff) * 1e9
		memory := m.WeightBytes() / (g.HBMBandwidth * tp * g.MemoryEff) * 1e9
		switch {
		case !(compute+float64(g.StepOverhead) < float64(core.MaxTime)):
			key := "peak_tflops"
			if !given(key) {
				key = "compute_efficiency"
			}
			return g, t.errf(key, "one token takes %s of compute, past %s", years(compute), timeLimit)
		case !(memory+float64(g.StepOverhead) < float64(core.MaxTime)):
			key := "hbm_bandwidth"
			if !given(key) {
				key = "memory_efficiency"
			}
			return g, t.errf(key, "one step reads the weights in %s, past %s", years(memory), timeLimit)
		case math.IsInf(g.PeakTFLOPs*1e12*tp, 0):
			return g, t.errf("peak_tflops", "%g TFLOP/s x tp %d is past what a float64 holds", g.PeakTFLOPs, g.TP)
		case math.IsInf(g.HBMBandwidth*tp, 0):
			return g, t.errf("hbm_bandwidth", "%g B/s x tp %d is past what a float64 holds", g.HBMBandwidth, g.TP)
		}
	}
	return g, nil
}

// hbmDefault is the hbm tier's capacity when the file gives none: with
// the GPU's memory known, what vLLM leaves for KV
// (GPUMemoryUtilization x memory of the tp GPUs, minus the weights,
// divided among the copies of the KV: KVReplicas);
// else the kind's default. ok is false, with why, when the weights leave
// nothing or are unknown.
func hbmDefault(g GPU, m Model, kindDefault int64) (capacity int64, why string) {
	if g.HBMCapacity == 0 {
		return kindDefault, ""
	}
	if m.Params == 0 {
		return 0, "required with a GPU memory size (a [gpu] preset or hbm_capacity) unless [model] params or preset sizes the weights"
	}
	total := GPUMemoryUtilization * float64(g.HBMCapacity) * float64(g.TP)
	weights := m.WeightBytes()
	if dp := g.DPs(); dp > 1 {
		total *= float64(dp)
		weights = m.ResidentWeightBytes(dp)
	}
	free := total - weights
	if !(free >= 1) || free >= float64(math.MaxInt64) {
		gpus := fmt.Sprintf("tp %d", g.TP)
		if g.DPs() > 1 {
			gpus = fmt.Sprintf("tp %d x dp %d", g.TP, g.DPs())
		}
		return 0, fmt.Sprintf("%s of weights leave no room for KV in %g x %s x %s; give capacity or raise tp",
			FormatBytes(int64(min(weights, math.MaxInt64/2))), GPUMemoryUtilization, FormatBytes(g.HBMCapacity), gpus)
	}
	if r := g.KVReplicas(m); r > 1 {
		free /= float64(r) // each token's KV is kept r times
	}
	return int64(free), ""
}

// KVReplicas is how many of a tp group's GPUs keep each token's KV: vLLM
// splits KV heads over tp but gives every GPU at least one head, so
// with fewer KV heads than tp each is kept tp / kv_heads times; MLA's
// latent is one vector, kept whole by all tp GPUs.
func (g GPU) KVReplicas(m Model) int {
	switch {
	case m.KVLoraRank > 0:
		return g.TP
	case g.TP > m.KVHeads:
		return (g.TP + m.KVHeads - 1) / m.KVHeads
	}
	return 1
}

// DPs is the number of attention data-parallel groups (dp, 1 when unset).
func (g GPU) DPs() int { return max(1, g.DP) }

// EPs is the number of GPUs the experts are spread over as whole experts
// (ep, 1 when unset).
func (g GPU) EPs() int { return max(1, g.EP) }

// GPUs is the instance's GPU count: tp x dp.
func (g GPU) GPUs() int { return g.TP * g.DPs() }

// checkParallel checks dp, ep and the interconnect against the model: dp
// and ep only for a model with experts, ep the whole instance, and a
// full step's collectives within simulated time.
func (g GPU) checkParallel(t *table, m Model, mt *table) error {
	given := func(key string) bool { _, ok := t.m[key]; return ok }
	if (g.DPs() > 1 || g.EPs() > 1) && m.Experts == 0 {
		key := "dp"
		if g.DPs() == 1 {
			key = "ep"
		}
		return t.errf(key, "only for a model with experts (data-parallel replicas of a dense model are [cluster] instances)")
	}
	if g.DPs() > 1 && g.EPs() != g.GPUs() {
		return t.errf("dp", "dp = %d needs ep = tp x dp = %d: the dp groups share experts spread over all their GPUs", g.DPs(), g.GPUs())
	}
	if g.EPs() > 1 && g.EPs() != g.GPUs() {
		return t.errf("ep", "%d must be 1 or tp x dp = %d (vLLM spreads experts over all of an instance's GPUs)", g.EPs(), g.GPUs())
	}
	if g.EPs() > m.Experts && m.Experts > 0 {
		return t.errf("ep", "%d GPUs for %d experts leave some without one", g.EPs(), m.Experts)
	}
	if g.InterconnectBandwidth > 0 && g.GPUs() > 1 {
		if m.Hidden == 0 {
			return mt.errf("hidden", "required with an interconnect: collectives move hidden-size activations")
		}
		// A bound on what the step model charges: per layer at most two
		// collectives each moving under twice the step's activations, each
		// of under 2 x GPUs latency steps.
		act := float64(g.MaxBatchedTokens) * float64(m.Hidden) * float64(m.ActBytes()) * float64(max(1, m.ExpertsPerToken))
		ns := float64(m.Layers) * 4 * (2*act/g.InterconnectBandwidth*1e9 + 2*float64(g.GPUs())*float64(g.InterconnectLatency))
		if !(ns < float64(core.MaxTime)) {
			key := "interconnect_bandwidth"
			if !given(key) && given("interconnect_latency") {
				key = "interconnect_latency"
			}
			return t.errf(key, "a step of %d tokens may spend %s in collectives, past %s", g.MaxBatchedTokens, years(ns), timeLimit)
		}
	}
	return nil
}
