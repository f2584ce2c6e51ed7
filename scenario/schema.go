package scenario

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"kvsim/cluster"
	"kvsim/param"
	"kvsim/tierkind"
	"kvsim/trace"
)

// The scenario layout is declared once, here: every key with its type and
// unit, default, range and doc line. Loading reads keys through these
// declarations (type, default, range and unit checks, unknown keys),
// --set finds its tables here, and Reference renders the documentation
// (doc.go and the README are checked against it by TestReference).

// The key declaration is param's; these short names keep the schema
// below readable.
type field = param.Key

const (
	tString       = param.String
	tInt          = param.Int
	tNumber       = param.Number
	tTokenRate    = param.TokenRate
	tBool         = param.Bool
	tBytes        = param.Bytes
	tBandwidth    = param.Bandwidth
	tDuration     = param.Duration
	tFineDuration = param.FineDuration

	anyValue = param.Any
	above0   = param.Above0
	atLeast0 = param.AtLeast0
	atLeast1 = param.AtLeast1
	share    = param.Share
)

// section declares one table of the scenario.
type section struct {
	name     string // "" for the top level
	array    bool   // [[name]]
	required bool
	doc      string   // the header's comment in Reference
	label    []string // --set names an entry by the first of these keys that is set
	fields   []field
	params   string // [[policy]]: other keys are the eviction policy's numeric parameters (this says so)
}

func (s *section) field(key string) *field { return param.Find(s.fields, key) }

// header is the section's TOML header, or "the top level".
func (s *section) header() string {
	switch {
	case s.name == "":
		return "the top level"
	case s.array:
		return "[[" + s.name + "]]"
	}
	return "[" + s.name + "]"
}

const maxInt32 = math.MaxInt32

// schema is the scenario layout, in file order.
var schema = []*section{
	{name: "", fields: []field{
		{Name: "name", Type: tString, DefaultDoc: "the file name without .toml", Example: `"conversation-3tier"`,
			Doc: "letters, digits, '.', '_', '-'; names the results folder"},
		{Name: "seed", Type: tInt, Default: int64(1), Example: "1", Doc: `drives format = "synthetic"`},
		{Name: "profile", Type: tString, DefaultDoc: "none", Example: `"hw.toml"`,
			Doc: "link figures from kvsim calibrate replace the default links"},
	}},
	{name: "model", required: true, doc: "bytes/token = 2 x layers x kv_heads x head_dim x kv_dtype bytes (MLA: layers x\n(kv_lora_rank + qk_rope_head_dim) x kv_dtype bytes), counting only full-attention layers", fields: []field{
		{Name: "preset", Type: tString, DefaultDoc: "none", Enum: ModelPresets, Example: `"llama-3.1-8b"`,
			Doc: "the geometry from the model's config.json (docs/engine.md lists the presets); each key overrides"},
		{Name: "layers", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: presetOrRequired, Example: "32"},
		{Name: "kv_heads", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: presetOrRequired, Example: "8"},
		{Name: "head_dim", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: presetOrRequired, Example: "128"},
		{Name: "heads", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: "the preset's; needed by step_model = \"roofline\"", Example: "32",
			Doc: "query heads, a multiple of kv_heads: attention FLOPs = 4 x layers x heads x head_dim per token pair"},
		{Name: "params", Type: tNumber, Min: above0, DefaultDoc: "the preset's; needed by step_model = \"roofline\"", Example: "8.03e9",
			Doc: "parameters: 2 FLOPs per parameter per token, params x dtype bytes of weights read per step"},
		{Name: "dtype", Type: tString, Default: "bf16", Enum: DTypes, Example: `"bf16"`, Doc: "element type of the weights (the deepseek-v3 and kimi-k2 presets: fp8), and of the KV cache unless kv_dtype"},
		{Name: "block_tokens", Type: tInt, Default: int64(512), Min: above0, Max: maxDim, Example: "512", Doc: "tokens per KV block (Mooncake's)"},
		{Name: "hidden", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: "the preset's", Example: "4096",
			Doc: "hidden size: one token's activations, what tp and ep collectives move; sizes an expert"},
		{Name: "kv_dtype", Type: tString, Enum: DTypes, DefaultDoc: "the preset's, else dtype", Example: `"fp8"`, Doc: "element type of the KV cache"},
		{Name: "kv_lora_rank", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: "the preset's; none: K and V per KV head", Example: "512",
			Doc: "MLA: one cached latent of kv_lora_rank + qk_rope_head_dim elements per token and layer"},
		{Name: "qk_rope_head_dim", Type: tInt, Min: atLeast0, Max: maxDim, DefaultDoc: "the preset's, else 0", Example: "64", Doc: "MLA: the rotary part cached beside the latent"},
		{Name: "window", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: "the preset's; none: every layer attends to the whole context", Example: "128",
			Doc: "tokens a local layer attends to; local layers keep at most this much KV per request,\noutside the block cache (docs/engine.md)"},
		{Name: "window_kind", Type: tString, Enum: WindowKinds, DefaultDoc: `the preset's, else "sliding"`, Example: `"sliding"`,
			Doc: `"sliding": the last window tokens; "chunked": the tokens of its own window-token chunk`},
		{Name: "full_every", Type: tInt, Min: atLeast1, Max: maxDim, DefaultDoc: "the preset's; required with window", Example: "2",
			Doc: "every full_every-th layer (the full_every-th, the 2 x full_every-th, ...) attends to everything"},
		{Name: "experts", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: "the preset's; none: a dense model", Example: "128",
			Doc: "routed experts per MoE layer; params counts them all, FLOPs count experts_per_token of them"},
		{Name: "experts_per_token", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: "the preset's; required with experts", Example: "8"},
		{Name: "expert_ffn", Type: tInt, Min: above0, Max: maxDim, DefaultDoc: "the preset's; required with experts", Example: "768",
			Doc: "intermediate size of one expert: 3 x hidden x expert_ffn parameters"},
		{Name: "shared_experts", Type: tInt, Min: atLeast0, Max: maxDim, DefaultDoc: "the preset's, else 0", Example: "1",
			Doc: "experts of expert_ffn every token uses, part of the dense parameters"},
		{Name: "expert_dtype", Type: tString, Enum: ExpertDTypes, DefaultDoc: "the preset's, else dtype", Example: `"mxfp4"`,
			Doc: "element type of the routed experts' weights (gpt-oss ships MXFP4: 4.25 bits a weight)"},
		{Name: "dense_layers", Type: tInt, Min: atLeast0, Max: maxDim, DefaultDoc: "the preset's, else 0", Example: "3",
			Doc: "the first dense_layers layers have a dense MLP instead of experts"},
	}},
	{name: "gpu", doc: gpuDoc, fields: []field{
		{Name: "engine", Type: tString, Default: "batched", Enum: func() []string { return []string{"batched", "simple"} },
			Doc: `"batched": vLLM v1-style steps (decodes first, then prefill chunks, under a token budget);` +
				"\n" + `"simple": one prefill at a time at prefill_tokens_per_s, decodes at decode_tokens_per_s`},
		{Name: "max_num_batched_tokens", Type: tInt, Default: int64(8192), Min: atLeast1, Max: maxInt32, Example: "8192",
			Doc: "tokens one batched step computes at most (vLLM's max_num_batched_tokens)"},
		{Name: "max_num_seqs", Type: tInt, Default: int64(256), Min: atLeast1, Max: maxInt32, Example: "256",
			Doc: "running (admitted) requests at most, either engine (vLLM's max_num_seqs)"},
		{Name: "page_tokens", Type: tInt, Default: int64(16), Min: atLeast1, Max: maxDim, Example: "16",
			Doc: "generated tokens' KV is allocated in pages of this many tokens (vLLM's block_size);\nthe cache's unit of reuse stays model.block_tokens"},
		{Name: "step_model", Type: tString, Enum: func() []string { return []string{"roofline", "linear"} }, Example: `"roofline"`,
			DefaultDoc: `"roofline" with a preset (or with peak_tflops or hbm_bandwidth and no rates), else "linear";` + "\n" + `"linear" whenever a c_ key is set`,
			Doc:        "time of one batched step"},
		{Name: "preset", Type: tString, DefaultDoc: "none", Enum: GPUPresets, Example: `"h100"`,
			Doc: "peak_tflops, hbm_bandwidth and hbm_capacity from the data sheet; each key overrides"},
		{Name: "tp", Type: tInt, Default: int64(1), Min: atLeast1, Max: 1 << 16, Example: "1",
			Doc: "tensor-parallel GPUs serving the model: FLOP/s, bandwidth and memory are tp times one GPU's;\n" +
				"with an interconnect, two all-reduces of the step's activations per layer"},
		{Name: "dp", Type: tInt, Min: atLeast1, Max: 1 << 16, DefaultDoc: "1", Example: "1",
			Doc: "attention data parallelism of a MoE model: dp groups of tp GPUs, each with its own KV,\n" +
				"share the experts (ep = tp x dp); replicas of a dense model are [cluster] instances"},
		{Name: "ep", Type: tInt, Min: atLeast1, Max: 1 << 16, DefaultDoc: "1", Example: "1",
			Doc: "1: experts tensor-parallel like the rest; tp x dp: each GPU holds whole experts (vLLM's\n" +
				"enable_expert_parallel), and with dp > 1 every MoE layer dispatches and combines tokens in two all-to-alls"},
		{Name: "interconnect", Type: tString, Enum: Interconnects, DefaultDoc: "none: collectives take no time", Example: `"nvlink4"`,
			Doc: "the link between the GPUs of one instance: its bandwidth and latency"},
		{Name: "interconnect_bandwidth", Type: tBandwidth, Min: above0, DefaultDoc: "the interconnect's", Example: `"450GB/s"`,
			Doc: "per GPU, each direction"},
		{Name: "interconnect_latency", Type: tDuration, Min: atLeast0, DefaultDoc: "the interconnect's", Example: `"1us"`,
			Doc: "per step of a collective (a ring all-reduce has 2 x (tp - 1))"},
		{Name: "peak_tflops", Type: tNumber, Min: above0, DefaultDoc: "the preset's", Example: "989", Only: roofline, Doc: "dense bf16 TFLOP/s of one GPU"},
		{Name: "hbm_bandwidth", Type: tBandwidth, Min: above0, DefaultDoc: "the preset's", Example: `"3.35TB/s"`, Only: roofline, Doc: "of one GPU"},
		{Name: "hbm_capacity", Type: tBytes, Min: above0, DefaultDoc: "the preset's", Example: `"80GiB"`,
			Doc: "of one GPU; the hbm tier's capacity defaults to 0.9 x hbm_capacity x tp minus the weights\n(vLLM's gpu_memory_utilization = 0.9)"},
		{Name: "compute_efficiency", Type: tNumber, Default: 0.5, Min: share, Example: "0.5", Only: roofline, Doc: "share of peak FLOP/s reached"},
		{Name: "memory_efficiency", Type: tNumber, Default: 0.8, Min: share, Example: "0.8", Only: roofline, Doc: "share of HBM bandwidth reached"},
		{Name: "step_overhead", Type: tDuration, Default: int64(1_000_000), Min: atLeast0, Example: `"1ms"`, Only: roofline,
			Doc: "fixed time per step: scheduling, input preparation, sampling"},
		{Name: "c0", Type: tFineDuration, Min: atLeast0, DefaultDoc: "0 if any c_ key is set, else 1s / decode_tokens_per_s", Example: `"5ms"`,
			Only: linear, Doc: "per step"},
		{Name: "c_prefill", Type: tFineDuration, Min: atLeast0, DefaultDoc: "0 if c0 or another c_ key is set, else 1s / prefill_tokens_per_s",
			Example: `"40us"`, Only: linear, Doc: "per prefill token"},
		{Name: "c_decode", Type: tFineDuration, Min: atLeast0, DefaultDoc: "0", Example: `"30us"`, Only: linear, Doc: "per decoding sequence"},
		{Name: "c_ctx", Type: tFineDuration, Min: atLeast0, DefaultDoc: "0", Example: `"50ns"`, Only: linear,
			Doc: "per context token attention reads; attention_ns_per_token2 stays the per-pair term"},
		{Name: "prefill_tokens_per_s", Type: tTokenRate, Default: 20000.0, Min: above0, Example: "20000", Doc: "simple engine; legacy linear mapping"},
		{Name: "attention_ns_per_token2", Type: tNumber, Default: 0.0, Min: atLeast0, Example: "0",
			Doc: "quadratic attention cost per (new x context) token pair, ns; simple engine and linear steps"},
		{Name: "decode_tokens_per_s", Type: tTokenRate, Default: 50.0, Min: above0, Example: "50", Doc: "per running request; simple engine; legacy linear mapping"},
		{Name: "load", Type: tString, Default: "layerwise", Enum: func() []string { return []string{"layerwise", "serial"} },
			Msg: `must be "layerwise" or "serial", got %q`, Example: `"layerwise"`,
			Doc: "layerwise: KV loads overlap compute layer by layer; simple engine only (a batched prefill starts once its loads landed)"},
		{Name: "cost_per_hour", Type: tNumber, Min: atLeast0, DefaultDoc: "0: no GPU cost", Example: "2.5",
			Doc: "dollars per GPU-hour; a run costs tp x dp x instances GPUs over its simulated span (docs/ledger.md)"},
		{Name: "hbm_free", Type: tString, Default: "landed", Enum: func() []string { return []string{"landed", "evict"} },
			Msg: `must be "landed" or "evict", got %q`, Example: `"landed"`,
			Doc: `when an evicted block's HBM is free: "landed": once its copy down has left HBM` + "\n" +
				`(vLLM's offloading keeps GPU blocks until their store completes); "evict": at once (optimistic)`},
	}},
	{name: "tier", array: true, required: true, label: []string{"name", "kind"}, doc: "the first tier must be the one hbm tier; at most 8", fields: slices.Concat([]field{
		{Name: "name", Type: tString, DefaultDoc: "the kind", Example: `"hbm"`, Doc: "unique; letters, digits, '.', '_', '-'"},
		{Name: "kind", Type: tString, Required: true, Need: "one of %s", Enum: Kinds, Example: `"hbm"`},
		{Name: "capacity", Type: tBytes, DefaultDoc: "per kind", Min: above0, Example: `"60GiB"`, Doc: "or an integer byte count"},
		{Name: "bandwidth", Type: tBandwidth, DefaultDoc: "per kind", Min: above0, Example: `"2TB/s"`, Doc: "or a number of bytes/s"},
		{Name: "latency", Type: tDuration, DefaultDoc: "per kind", Min: atLeast0, Example: `"100ns"`, Doc: "ns, us, µs, ms, s"},
		{Name: "cost_per_gb", Type: tNumber, DefaultDoc: "per kind", Min: atLeast0, Example: "20.0", Doc: "dollars per 1e9 bytes"},
		{Name: "shared_bandwidth", Type: tBool, Default: false, Example: "false",
			Doc: "true: every transfer in or out of the tier, over any\nlink and either direction, also queues for one pipe\nof this bandwidth (an SSD's reads and writes share the\ndrive); false: each link direction is its own pipe"},
		{Name: "scope", Type: tString, Default: "node", Enum: Scopes, Example: `"node"`,
			Doc: `"node": each instance has its own copy; "cluster": one pool` + "\n" +
				"shared by every instance of [cluster] (a global DRAM pool,\n" +
				"NVMe-oF, remote DRAM), capacity being each node's share;\n" +
				"only the last tier, at most one, not hbm (docs/cluster.md)"},
		{Name: "dwpd", Type: tNumber, Min: above0, FMax: 100, DefaultDoc: "none: no life figure", Example: "1",
			Doc: "rated drive writes per day over service_years (a 3.84 TB data-center NVMe: 1 over\n5 years, about 7 PB written); any kind may take it (docs/ledger.md)"},
		{Name: "tbw", Type: tNumber, Min: above0, DefaultDoc: "none: no life figure", Example: "7008",
			Doc: "rated terabytes (1e12 bytes) written; with dwpd too, the smaller rating counts"},
		{Name: "service_years", Type: tNumber, Min: above0, FMax: 100, DefaultDoc: "5", Example: "5",
			Doc: "dwpd's rating period (the warranty) and the years the tier's cost is spread over\n(a rated tier wearing out sooner: its life)"},
	}, tierkind.Keys())}, // each kind's own, from its file (tierkind/)
	{name: "link", array: true, label: []string{"from-to"}, doc: "optional; default: consecutive tiers in file order", fields: []field{
		{Name: "from", Type: tString, Required: true, Need: "a tier name", Example: `"hbm"`},
		{Name: "to", Type: tString, Required: true, Need: "a tier name", Example: `"dram"`},
		{Name: "bandwidth", Type: tBandwidth, DefaultDoc: "the slower tier's", Min: above0, Example: `"25GB/s"`, Doc: "from -> to"},
		{Name: "reverse_bandwidth", Type: tBandwidth, DefaultDoc: "bandwidth", Min: above0, Example: `"25GB/s"`, Doc: "to -> from"},
		{Name: "latency", Type: tDuration, DefaultDoc: "the larger tier's", Min: atLeast0, Example: `"100ns"`, Doc: "from -> to"},
		{Name: "reverse_latency", Type: tDuration, DefaultDoc: "latency", Min: atLeast0, Example: `"100ns"`, Doc: "to -> from"},
		{Name: "lanes", Type: tInt, Default: int64(1), Min: atLeast1, Max: MaxLanes, Example: "1",
			Doc: "transfers in flight per direction: they hide latency, not add bandwidth\n(replay --real: a remote tier's connections or queue pairs)"},
	}},
	{name: "workload", required: true, fields: []field{
		{Name: "trace", Type: tString, DefaultDoc: `none: required unless format = "synthetic"`, Example: `"../traces/conversation_trace.jsonl"`,
			Doc: "absolute, or relative to this file's directory"},
		{Name: "format", Type: tString, Default: "mooncake", Enum: Formats, Example: `"mooncake"`,
			Doc: formatDoc()},
		{Name: "mode", Type: tString, Default: "open", Enum: func() []string { return []string{"open", "closed"} }, Example: `"open"`,
			Doc: `"open": every request arrives at its trace time; "closed": a session's later turn arrives` + "\n" +
				"its think time after the turn it follows finished (docs/workloads.md)"},
		{Name: "limit", Type: tInt, Default: int64(0), Min: atLeast0, Max: maxInt32, Example: "0", Doc: "requests to read, 0 = all"},
		{Name: "skip_bad_lines", Type: tBool, Default: false, Example: "false"},
		{Name: "speedup", Type: tNumber, Default: 1.0, Min: above0, Msg: "must be a number > 0 (2 replays the trace at twice its request rate)",
			Example: "1.0", Doc: "arrival times divided by it: 2 = twice the request rate"},
		{Name: "requests", Type: tInt, Min: atLeast0, Max: MaxSyntheticRequests, Msg: "must be in 0..1000000", Only: synthetic},
		{Name: "rate", Type: tNumber, Min: above0, Only: synthetic, Doc: "new conversations per second"},
		// The generator draws a turn count in about mean steps; max_context
		// ends conversations long before 10000 turns.
		{Name: "turns", Type: tNumber, Min: atLeast1, FMax: 10000, Only: synthetic, Doc: "mean turns per conversation"},
		{Name: "system_tokens", Type: tInt, Min: atLeast0, Max: MaxSyntheticTokens, Msg: "must be in 0..1048576", Only: synthetic,
			Doc: "shared system prompt"},
		{Name: "user_tokens", Type: tInt, Min: atLeast0, Max: MaxSyntheticTokens, Msg: "must be in 0..1048576", Only: synthetic,
			Doc: "mean per turn"},
		{Name: "output_tokens", Type: tInt, Min: atLeast0, Max: MaxSyntheticTokens, Msg: "must be in 0..1048576", Only: synthetic,
			Doc: "mean per turn"},
		{Name: "think", Type: tDuration, Only: synthetic, Doc: "mean pause between turns"},
		{Name: "max_context", Type: tInt, Min: atLeast0, Max: MaxSyntheticTokens, Msg: "must be in 0..1048576", Only: synthetic,
			Doc: "a conversation ends before its context passes this"},
	}},
	{name: "workload.inject", doc: "block ids for a trace without them (docs/workloads.md): system prompt -> tenant prefix\n-> session history -> new tokens, drawn from seed", fields: []field{
		{Name: "replace", Type: tBool, Default: false, Example: "false", Doc: "also replace the ids of requests that have them"},
		{Name: "system_tokens", Type: tInt, Default: int64(0), Min: atLeast0, Max: maxInt32, Example: "1024", Doc: "global system prompt every request starts with"},
		{Name: "tenants", Type: tInt, Default: int64(0), Min: atLeast0, Max: 1 << 20, Example: "0", Doc: "tenant (application) prefixes after it; 0: none"},
		{Name: "tenant_tokens", Type: tInt, Default: int64(0), Min: atLeast0, Max: maxInt32, Example: "0", Doc: "tokens of each tenant prefix; needs tenants >= 1"},
		{Name: "tenant_zipf", Type: tNumber, Default: 1.0, Min: atLeast0, FMax: 10, Msg: "must be a number in 0..10", Example: "1.0",
			Doc: "skew of a new session's tenant: tenant k (from 1) with weight k^-tenant_zipf, 0 = uniform"},
		{Name: "session_continue", Type: tNumber, Default: 0.0, Min: atLeast0, FMax: 1, Msg: "must be a probability in 0..1", Example: "0.6",
			Doc: "probability a request continues an open session (prompt = its last prompt + reply + new tokens)"},
		{Name: "sessions", Type: tInt, Default: int64(64), Min: atLeast1, Max: 1 << 20, Example: "64",
			Doc: "open sessions, the oldest closing when a new one opens: more = longer reuse distances"},
		{Name: "session_gap", Type: tInt, Default: int64(0), Min: atLeast0, Max: 1 << 30, Example: "0",
			Doc: "mean requests a session waits after a turn before it may continue (exponential: the reply, the user's pause)"},
	}},
	{name: "policy", array: true, required: true, label: []string{"name", "eviction"}, doc: "one simulation each; at most 64", params: "any other key is a numeric parameter the eviction policy declares", fields: []field{
		{Name: "name", Type: tString, DefaultDoc: "the eviction name", Example: `"lru"`, Doc: "label in results; unique"},
		{Name: "eviction", Type: tString, Required: true, Example: `"lru"`,
			Doc: `a kvsim/policy name for every tier, or one per tier: { hbm = "lru", ssd = "fifo" };` + "\n" + `a "default" entry covers the tiers not named`},
		{Name: "admission", Type: tString, Default: "always", Example: `"after:2"`, Doc: `"always", or "after:K": K references before entering a lower tier`},
		{Name: "promotion", Type: tString, Default: "always", Doc: `"always", "second-hit" (Mooncake) or "never" (serve from a transient copy)`},
		{Name: "write", Type: tString, Default: "back", Example: `"through"`, Doc: `"back": offload on evict, or "through": copy down on creation`},
		{Name: "prefetch", Type: tString, Default: "off", Doc: `"off", "best_effort", "wait_complete" or "timeout" (SGLang HiCache)`},
		{Name: "prefetch_timeout", Type: tDuration, Default: int64(0), Min: atLeast0, Example: `"50ms"`, Doc: `for prefetch = "timeout"`},
		{Name: "recompute", Type: tString, Default: "never", Doc: `"never", or "when-cheaper": recompute the part of a cached prefix that loads slower`},
		{Name: "stage", Type: tString, Default: "copy", Example: `"copy"`,
			Doc: `"copy": a hit below tier 1 reaches hbm through tier 1 and leaves a copy there (LMCache, Mooncake);` + "\n" + `"pass": it moves straight to hbm`},
		{Name: "idle_rank", Type: tString, Default: "off", Enum: func() []string { return []string{"off", "observed", "oracle"} }, Example: `"observed"`,
			Doc: `closed-loop sessions: each tier evicts idle sessions' blocks first, overdue ones, then those expected back latest (MORI);` + "\n" + `"observed": expected wait = mean tool wait seen on the call's path, "oracle": the trace's own next wait`},
	}},
	{name: "slo", doc: "summary.json's slo_attainment: the share of requests meeting both (rejected ones miss)", fields: []field{
		{Name: "ttft_ms", Type: tNumber, Min: above0, DefaultDoc: "none", Example: "500", Doc: "time to first token at most, ms"},
		{Name: "tpot_ms", Type: tNumber, Min: above0, DefaultDoc: "none", Example: "50", Doc: "time per output token at most, ms (requests with one output token meet it)"},
	}},
	{name: "cluster", doc: "optional: instances, each a copy of the GPU and every tier above (docs/cluster.md)", fields: slices.Concat([]field{
		{Name: "instances", Type: tInt, Min: atLeast1, Max: MaxInstances, Example: "4", DefaultDoc: "none: this, or the two below",
			Doc: "each with its own engine, HBM and copy of every node-scoped tier"},
		{Name: "prefill_instances", Type: tInt, Min: atLeast1, Max: MaxInstances, Example: "1", DefaultDoc: "none",
			Doc: "with decode_instances: prefill/decode disaggregation (the router picks a prefill instance;\nits KV then crosses the NICs to a decode one); instances, if given, must be their sum"},
		{Name: "decode_instances", Type: tInt, Min: atLeast1, Max: MaxInstances, Example: "3", DefaultDoc: "none",
			Doc: "instances = prefill_instances + decode_instances"},
		{Name: "router", Type: tString, Default: "round_robin", Enum: cluster.RouterNames, Example: `"cache_aware"`,
			Doc: "chooses each request's instance (docs/routers.md)"},
	}, cluster.RouterKeys(), []field{ // each router's, from its file (cluster/router_*.go)
		{Name: "nic_bandwidth", Type: tBandwidth, Default: 25e9, Min: above0, Example: `"25GB/s"`,
			Doc: "each node's NIC, each direction, full duplex (25GB/s = 200 Gbit/s): the pool's\ncross-node reads and writes and disaggregation's KV transfers pass both ends'"},
		{Name: "nic_latency", Type: tDuration, Default: int64(5000), Min: atLeast0, Example: `"5us"`,
			Doc: "one way, per transfer"},
		{Name: "nic_lanes", Type: tInt, Default: int64(8), Min: atLeast1, Max: MaxLanes, Example: "8",
			Doc: "transfers a NIC has in flight per direction: they hide latency, not add bandwidth"},
		{Name: "peer_fetch", Type: tBool, Default: false, Example: "false",
			Doc: "a block in no tier of an instance's own nor the pool is read over both NICs from another\ninstance's node-scoped pinned or dram tier, if one holds it, rather than computed (docs/cluster.md)"},
		{Name: "peer_stage", Type: tString, Default: "direct", Enum: func() []string { return []string{"direct", "host"} }, Example: `"direct"`,
			Doc: "with peer_fetch: \"direct\": a peer's block crosses the NICs into HBM;\n\"host\": it lands in the reader's own host tier (a copy kept there), then crosses its local link to HBM"},
		{Name: "view_delay", Type: tDuration, Default: int64(0), Min: atLeast0, Example: `"0s"`,
			Doc: "the router sees the cluster this late: cached blocks by event, load by report (docs/routers.md)"},
		{Name: "events", Type: tString, DefaultDoc: "none", Example: `"tcp://*:5557"`,
			Doc: "kvsim run publishes each instance's KV events in vLLM's format, instance i at PORT+i,\nits replay socket at PORT+instances+i (as --publish-events; docs/events.md)"},
	})},
}

// Ranges of the counts that cost memory or time per unit, each set from
// what real systems use (a cap is a promise that the program can hold it):
const (
	// MaxInstances bounds [cluster] instances: a router fronts tens to a
	// few hundred engine instances. Each simulated instance keeps its own
	// tables of the trace's blocks, so instances cost memory times the
	// trace's distinct blocks.
	MaxInstances = 256
	// MaxLanes bounds a link's lanes and a NIC's: transfers in flight per
	// direction. Copy engines are a handful per GPU, NVMe drivers use a
	// queue per core, RDMA and Redis clients tens to hundreds of
	// connections. The simulator keeps and scans a slot per lane on every
	// transfer, and replay --real opens a connection per lane of a remote
	// tier.
	MaxLanes = 1024
	// MaxSyntheticRequests bounds [workload] requests of format =
	// "synthetic": far past a cache's steady state; each request's
	// record costs about 2 KB.
	MaxSyntheticRequests = 1_000_000
	// MaxSyntheticTokens bounds the synthetic workload's token counts: a
	// 1M-token context is the longest common model window, and a
	// context's blocks are generated, held and simulated one by one.
	MaxSyntheticTokens = 1 << 20
	// MaxPolicies bounds [[policy]] entries: a comparison is of a few to
	// tens of policies, and each is a whole simulation whose records the
	// run keeps (2,000 policies took 0.9 GB on 100 requests).
	MaxPolicies = 64
)

// Scopes lists the values of [[tier]] scope.
func Scopes() []string { return []string{"node", "cluster"} }

// gpuDoc heads [gpu] in the reference: the two step models.
const gpuDoc = "the time of one batched step (step_model):\n" +
	`"roofline": max(FLOPs / (peak x compute_efficiency),` + "\n" +
	"            bytes / (bandwidth x memory_efficiency)) + step_overhead,\n" +
	"  FLOPs = 2 x active params x new tokens + attention, bytes = weights + KV read,\n" +
	"  plus, with an interconnect, tp's all-reduces and ep's all-to-alls (docs/engine.md);\n" +
	`"linear": c0 + c_prefill x prefill tokens + c_decode x decoding sequences` + "\n" +
	"  + c_ctx x context tokens + attention_ns_per_token2 x token pairs"

const (
	presetOrRequired = "the preset's; required without one"
	roofline         = `step_model = "roofline"`
	linear           = `step_model = "linear"`
)

const synthetic = `format = "synthetic"`

// formatDoc lists the workload formats: each trace format's words from its
// file (trace/format_*.go), formats with equal words together, then
// "synthetic".
func formatDoc() string {
	var docs []string // in ID order, by a group's first format
	names := map[string][]string{}
	for _, f := range trace.FormatSpecs() {
		if _, ok := names[f.Doc]; !ok {
			docs = append(docs, f.Doc)
		}
		names[f.Doc] = append(names[f.Doc], strconv.Quote(f.Name))
	}
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = strings.Join(names[d], " or ") + " (" + d + ")"
	}
	return strings.Join(parts, ", ") + `; "synthetic": no trace, generated from seed`
}

// sectionNamed returns the declaration of a table, nil if there is none.
func sectionNamed(name string) *section {
	for _, s := range schema {
		if s.name == name {
			return s
		}
	}
	return nil
}

// known reports whether t's declaration has key, or, at the top level, a
// table by that name.
func (t *table) known(key string) bool {
	if t.decl.field(key) != nil {
		return true
	}
	if t.decl.name == "" {
		return key != "" && sectionNamed(key) != nil
	}
	sub := sectionNamed(t.decl.name + "." + key) // a nested table: [workload.inject]
	return sub != nil && !t.decl.array
}

// keys lists the declared keys in order.
func (s *section) keys() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.Name
	}
	return out
}

// policyKeys are the fixed keys of a [[policy]] entry; every other key is a
// numeric parameter of the eviction policy.
var policyKeys = sectionNamed("policy").keys()
