package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"kvsim/core"
)

// The scenario layout is declared once, here: every key with its type and
// unit, default, range and doc line. Loading reads keys through these
// declarations (type, default, range and unit checks, unknown keys),
// --set finds its tables here, and Reference renders the documentation
// (doc.go and the README are checked against it by TestReference).

// typ is how a key's value is written, and its unit.
type typ uint8

const (
	tString       typ = iota
	tInt              // integer
	tNumber           // integer or finite float
	tTokenRate        // tokens/s: a number; one token must take less than the time limit
	tBool             // true or false
	tBytes            // "60GiB" or an integer byte count
	tBandwidth        // "25GB/s" or a number of bytes/s; one block must move within the time limit
	tDuration         // "10us"; a bare integer only as 0; within the time limit
	tFineDuration     // a tDuration that keeps fractions of a ns (float64 ns): step-time coefficients
)

// bound is a key's lower limit.
type bound uint8

const (
	anyValue bound = iota
	above0         // > 0
	atLeast0       // >= 0
	atLeast1       // >= 1
	share          // > 0 and <= 1
)

var boundNames = [...]string{anyValue: "", above0: "> 0", atLeast0: ">= 0", atLeast1: ">= 1", share: "0 < x <= 1"}

// field declares one key.
type field struct {
	key      string
	typ      typ
	def      any    // default (int64, float64, string or bool); nil when required or set by the code (defDoc)
	defDoc   string // the default in words, where def cannot say it
	required bool   // absent: "KEY: required (need)"
	need     string // what a required key wants; %s is the enum
	min      bound
	max      int64           // integers: the largest accepted, 0 for no limit
	fmax     float64         // numbers: the largest accepted, 0 for no limit
	enum     func() []string // strings: the accepted values
	msg      string          // replaces the range message; a format of the value if it has a verb
	example  string          // the value Reference shows; "" for the default
	doc      string          // one line; "\n" continues the comment
	only     string          // accepted only with this other setting (workload: format = "synthetic"; gpu: a step_model)
}

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

func (s *section) field(key string) *field {
	for i := range s.fields {
		if s.fields[i].key == key {
			return &s.fields[i]
		}
	}
	return nil
}

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
		{key: "name", typ: tString, defDoc: "the file name without .toml", example: `"conversation-3tier"`,
			doc: "letters, digits, '.', '_', '-'; names the results folder"},
		{key: "seed", typ: tInt, def: int64(1), example: "1", doc: `drives format = "synthetic"`},
		{key: "profile", typ: tString, defDoc: "none", example: `"hw.toml"`,
			doc: "link figures from kvsim calibrate replace the default links"},
	}},
	{name: "model", required: true, doc: "bytes/token = 2 x layers x kv_heads x head_dim x dtype bytes", fields: []field{
		{key: "preset", typ: tString, defDoc: "none", enum: ModelPresets, example: `"llama-3.1-8b"`,
			doc: "layers, kv_heads, head_dim, heads and params from the model's config.json; each key overrides"},
		{key: "layers", typ: tInt, min: above0, max: maxDim, defDoc: presetOrRequired, example: "32"},
		{key: "kv_heads", typ: tInt, min: above0, max: maxDim, defDoc: presetOrRequired, example: "8"},
		{key: "head_dim", typ: tInt, min: above0, max: maxDim, defDoc: presetOrRequired, example: "128"},
		{key: "heads", typ: tInt, min: above0, max: maxDim, defDoc: "the preset's; needed by step_model = \"roofline\"", example: "32",
			doc: "query heads, a multiple of kv_heads: attention FLOPs = 4 x layers x heads x head_dim per token pair"},
		{key: "params", typ: tNumber, min: above0, defDoc: "the preset's; needed by step_model = \"roofline\"", example: "8.03e9",
			doc: "parameters: 2 FLOPs per parameter per token, params x dtype bytes of weights read per step"},
		{key: "dtype", typ: tString, def: "bf16", enum: DTypes, example: `"bf16"`, doc: "element type of the KV cache and the weights"},
		{key: "block_tokens", typ: tInt, def: int64(512), min: above0, max: maxDim, example: "512", doc: "tokens per KV block (Mooncake's)"},
	}},
	{name: "gpu", doc: gpuDoc, fields: []field{
		{key: "engine", typ: tString, def: "batched", enum: func() []string { return []string{"batched", "simple"} },
			doc: `"batched": vLLM v1-style steps (decodes first, then prefill chunks, under a token budget);` +
				"\n" + `"simple": one prefill at a time at prefill_tokens_per_s, decodes at decode_tokens_per_s`},
		{key: "max_num_batched_tokens", typ: tInt, def: int64(8192), min: atLeast1, max: maxInt32, example: "8192",
			doc: "tokens one batched step computes at most (vLLM's max_num_batched_tokens)"},
		{key: "max_num_seqs", typ: tInt, def: int64(256), min: atLeast1, max: maxInt32, example: "256",
			doc: "running (admitted) requests at most, either engine (vLLM's max_num_seqs)"},
		{key: "page_tokens", typ: tInt, def: int64(16), min: atLeast1, max: maxDim, example: "16",
			doc: "generated tokens' KV is allocated in pages of this many tokens (vLLM's block_size);\nthe cache's unit of reuse stays model.block_tokens"},
		{key: "step_model", typ: tString, enum: func() []string { return []string{"roofline", "linear"} }, example: `"roofline"`,
			defDoc: `"roofline" with a preset (or with peak_tflops or hbm_bandwidth and no rates), else "linear";` + "\n" + `"linear" whenever a c_ key is set`,
			doc:    "time of one batched step"},
		{key: "preset", typ: tString, defDoc: "none", enum: GPUPresets, example: `"h100"`,
			doc: "peak_tflops, hbm_bandwidth and hbm_capacity from the data sheet; each key overrides"},
		{key: "tp", typ: tInt, def: int64(1), min: atLeast1, max: 1 << 16, example: "1",
			doc: "tensor-parallel GPUs serving the model: FLOP/s, bandwidth and memory are tp times one GPU's"},
		{key: "peak_tflops", typ: tNumber, min: above0, defDoc: "the preset's", example: "989", only: roofline, doc: "dense bf16 TFLOP/s of one GPU"},
		{key: "hbm_bandwidth", typ: tBandwidth, min: above0, defDoc: "the preset's", example: `"3.35TB/s"`, only: roofline, doc: "of one GPU"},
		{key: "hbm_capacity", typ: tBytes, min: above0, defDoc: "the preset's", example: `"80GiB"`,
			doc: "of one GPU; the hbm tier's capacity defaults to 0.9 x hbm_capacity x tp minus the weights\n(vLLM's gpu_memory_utilization = 0.9)"},
		{key: "compute_efficiency", typ: tNumber, def: 0.5, min: share, example: "0.5", only: roofline, doc: "share of peak FLOP/s reached"},
		{key: "memory_efficiency", typ: tNumber, def: 0.8, min: share, example: "0.8", only: roofline, doc: "share of HBM bandwidth reached"},
		{key: "step_overhead", typ: tDuration, def: int64(1_000_000), min: atLeast0, example: `"1ms"`, only: roofline,
			doc: "fixed time per step: scheduling, input preparation, sampling"},
		{key: "c0", typ: tFineDuration, min: atLeast0, defDoc: "0 if any c_ key is set, else 1s / decode_tokens_per_s", example: `"5ms"`,
			only: linear, doc: "per step"},
		{key: "c_prefill", typ: tFineDuration, min: atLeast0, defDoc: "0 if c0 or another c_ key is set, else 1s / prefill_tokens_per_s",
			example: `"40us"`, only: linear, doc: "per prefill token"},
		{key: "c_decode", typ: tFineDuration, min: atLeast0, defDoc: "0", example: `"30us"`, only: linear, doc: "per decoding sequence"},
		{key: "c_ctx", typ: tFineDuration, min: atLeast0, defDoc: "0", example: `"50ns"`, only: linear,
			doc: "per context token attention reads; attention_ns_per_token2 stays the per-pair term"},
		{key: "prefill_tokens_per_s", typ: tTokenRate, def: 20000.0, min: above0, example: "20000", doc: "simple engine; legacy linear mapping"},
		{key: "attention_ns_per_token2", typ: tNumber, def: 0.0, min: atLeast0, example: "0",
			doc: "quadratic attention cost per (new x context) token pair, ns; simple engine and linear steps"},
		{key: "decode_tokens_per_s", typ: tTokenRate, def: 50.0, min: above0, example: "50", doc: "per running request; simple engine; legacy linear mapping"},
		{key: "load", typ: tString, def: "layerwise", enum: func() []string { return []string{"layerwise", "serial"} },
			msg: `must be "layerwise" or "serial", got %q`, example: `"layerwise"`,
			doc: "layerwise: KV loads overlap compute layer by layer; simple engine only (a batched prefill starts once its loads landed)"},
		{key: "hbm_free", typ: tString, def: "landed", enum: func() []string { return []string{"landed", "evict"} },
			msg: `must be "landed" or "evict", got %q`, example: `"landed"`,
			doc: `when an evicted block's HBM is free: "landed": once its copy down has left HBM` + "\n" +
				`(vLLM's offloading keeps GPU blocks until their store completes); "evict": at once (optimistic)`},
	}},
	{name: "tier", array: true, required: true, label: []string{"name", "kind"}, doc: "the first tier must be the one hbm tier; at most 8", fields: []field{
		{key: "name", typ: tString, defDoc: "the kind", example: `"hbm"`, doc: "unique; letters, digits, '.', '_', '-'"},
		{key: "kind", typ: tString, required: true, need: "one of %s", enum: Kinds, example: `"hbm"`},
		{key: "capacity", typ: tBytes, defDoc: "per kind", min: above0, example: `"60GiB"`, doc: "or an integer byte count"},
		{key: "bandwidth", typ: tBandwidth, defDoc: "per kind", min: above0, example: `"2TB/s"`, doc: "or a number of bytes/s"},
		{key: "latency", typ: tDuration, defDoc: "per kind", min: atLeast0, example: `"100ns"`, doc: "ns, us, µs, ms, s"},
		{key: "cost_per_gb", typ: tNumber, defDoc: "per kind", min: atLeast0, example: "20.0", doc: "dollars per 1e9 bytes"},
		{key: "shared_bandwidth", typ: tBool, def: false, example: "false",
			doc: "true: every transfer in or out of the tier, over any\nlink and either direction, also queues for one pipe\nof this bandwidth (an SSD's reads and writes share the\ndrive); false: each link direction is its own pipe"},
		{key: "scope", typ: tString, def: "node", enum: Scopes, example: `"node"`,
			doc: `"node": each instance has its own copy; "cluster": one pool` + "\n" +
				"shared by every instance of [cluster] (a global DRAM pool,\n" +
				"NVMe-oF, remote DRAM), capacity being each node's share;\n" +
				"only the last tier, at most one, not hbm (docs/cluster.md)"},
		{key: "endpoint", typ: tString, defDoc: "none: emulated in local memory", example: `"redis://10.0.0.2:6379"`,
			doc: "remote_dram only: the Redis or Valkey server that\nreplay --real keeps the tier in (redis://HOST:PORT\nor valkey://HOST:PORT, optionally /DB), or the\nkvsim serve --rdma whose memory it writes and reads\nby RDMA (rdma://HOST:PORT, optionally\n?device=NAME&gid_index=N; docs/rdma.md); the\nsimulator does not read it"},
		{key: "device", typ: tString, defDoc: "none: a bucket store in replay's --dir", example: `"/dev/nvme1n1"`,
			doc: "nvmeof only: the namespace (or a file) replay --real keeps the\ntier in, in fixed slots by O_DIRECT; claimed only if its first\n64 KiB are zero or kvsim's; the simulator does not read it"},
	}},
	{name: "link", array: true, label: []string{"from-to"}, doc: "optional; default: consecutive tiers in file order", fields: []field{
		{key: "from", typ: tString, required: true, need: "a tier name", example: `"hbm"`},
		{key: "to", typ: tString, required: true, need: "a tier name", example: `"dram"`},
		{key: "bandwidth", typ: tBandwidth, defDoc: "the slower tier's", min: above0, example: `"25GB/s"`, doc: "from -> to"},
		{key: "reverse_bandwidth", typ: tBandwidth, defDoc: "bandwidth", min: above0, example: `"25GB/s"`, doc: "to -> from"},
		{key: "latency", typ: tDuration, defDoc: "the larger tier's", min: atLeast0, example: `"100ns"`, doc: "from -> to"},
		{key: "reverse_latency", typ: tDuration, defDoc: "latency", min: atLeast0, example: `"100ns"`, doc: "to -> from"},
		{key: "lanes", typ: tInt, def: int64(1), min: atLeast1, max: MaxLanes, example: "1",
			doc: "transfers in flight per direction: they hide latency, not add bandwidth\n(replay --real: a remote tier's connections or queue pairs)"},
	}},
	{name: "workload", required: true, fields: []field{
		{key: "trace", typ: tString, defDoc: `none: required unless format = "synthetic"`, example: `"../traces/conversation_trace.jsonl"`,
			doc: "absolute, or relative to this file's directory"},
		{key: "format", typ: tString, def: "mooncake", enum: Formats, example: `"mooncake"`,
			doc: `"mooncake" (JSONL; optional session_id and delay), "bailian" (Qwen Bailian JSONL: 16-token` + "\n" +
				`ids chained, regrouped into block_tokens, a multiple of 16), "azure" or "burstgpt" (CSV, no hash` + "\n" +
				`ids: [workload.inject] gives them blocks); "synthetic": no trace, generated from seed`},
		{key: "mode", typ: tString, def: "open", enum: func() []string { return []string{"open", "closed"} }, example: `"open"`,
			doc: `"open": every request arrives at its trace time; "closed": a session's later turn arrives` + "\n" +
				"its think time after the turn it follows finished (docs/workloads.md)"},
		{key: "limit", typ: tInt, def: int64(0), min: atLeast0, max: maxInt32, example: "0", doc: "requests to read, 0 = all"},
		{key: "skip_bad_lines", typ: tBool, def: false, example: "false"},
		{key: "speedup", typ: tNumber, def: 1.0, min: above0, msg: "must be a number > 0 (2 replays the trace at twice its request rate)",
			example: "1.0", doc: "arrival times divided by it: 2 = twice the request rate"},
		{key: "requests", typ: tInt, min: atLeast0, max: MaxSyntheticRequests, msg: "must be in 0..1000000", only: synthetic},
		{key: "rate", typ: tNumber, min: above0, only: synthetic, doc: "new conversations per second"},
		// The generator draws a turn count in about mean steps; max_context
		// ends conversations long before 10000 turns.
		{key: "turns", typ: tNumber, min: atLeast1, fmax: 10000, only: synthetic, doc: "mean turns per conversation"},
		{key: "system_tokens", typ: tInt, min: atLeast0, max: MaxSyntheticTokens, msg: "must be in 0..1048576", only: synthetic,
			doc: "shared system prompt"},
		{key: "user_tokens", typ: tInt, min: atLeast0, max: MaxSyntheticTokens, msg: "must be in 0..1048576", only: synthetic,
			doc: "mean per turn"},
		{key: "output_tokens", typ: tInt, min: atLeast0, max: MaxSyntheticTokens, msg: "must be in 0..1048576", only: synthetic,
			doc: "mean per turn"},
		{key: "think", typ: tDuration, only: synthetic, doc: "mean pause between turns"},
		{key: "max_context", typ: tInt, min: atLeast0, max: MaxSyntheticTokens, msg: "must be in 0..1048576", only: synthetic,
			doc: "a conversation ends before its context passes this"},
	}},
	{name: "workload.inject", doc: "block ids for a trace without them (docs/workloads.md): system prompt -> tenant prefix\n-> session history -> new tokens, drawn from seed", fields: []field{
		{key: "replace", typ: tBool, def: false, example: "false", doc: "also replace the ids of requests that have them"},
		{key: "system_tokens", typ: tInt, def: int64(0), min: atLeast0, max: maxInt32, example: "1024", doc: "global system prompt every request starts with"},
		{key: "tenants", typ: tInt, def: int64(0), min: atLeast0, max: 1 << 20, example: "0", doc: "tenant (application) prefixes after it; 0: none"},
		{key: "tenant_tokens", typ: tInt, def: int64(0), min: atLeast0, max: maxInt32, example: "0", doc: "tokens of each tenant prefix; needs tenants >= 1"},
		{key: "tenant_zipf", typ: tNumber, def: 1.0, min: atLeast0, fmax: 10, msg: "must be a number in 0..10", example: "1.0",
			doc: "skew of a new session's tenant: tenant k (from 1) with weight k^-tenant_zipf, 0 = uniform"},
		{key: "session_continue", typ: tNumber, def: 0.0, min: atLeast0, fmax: 1, msg: "must be a probability in 0..1", example: "0.6",
			doc: "probability a request continues an open session (prompt = its last prompt + reply + new tokens)"},
		{key: "sessions", typ: tInt, def: int64(64), min: atLeast1, max: 1 << 20, example: "64",
			doc: "open sessions, the oldest closing when a new one opens: more = longer reuse distances"},
		{key: "session_gap", typ: tInt, def: int64(0), min: atLeast0, max: 1 << 30, example: "0",
			doc: "mean requests a session waits after a turn before it may continue (exponential: the reply, the user's pause)"},
	}},
	{name: "policy", array: true, required: true, label: []string{"name", "eviction"}, doc: "one simulation each; at most 64", params: "any other key is a numeric parameter the eviction policy declares", fields: []field{
		{key: "name", typ: tString, defDoc: "the eviction name", example: `"lru"`, doc: "label in results; unique"},
		{key: "eviction", typ: tString, required: true, example: `"lru"`,
			doc: `a kvsim/policy name for every tier, or one per tier: { hbm = "lru", ssd = "fifo" };` + "\n" + `a "default" entry covers the tiers not named`},
		{key: "admission", typ: tString, def: "always", example: `"after:2"`, doc: `"always", or "after:K": K references before entering a lower tier`},
		{key: "promotion", typ: tString, def: "always", doc: `"always", "second-hit" (Mooncake) or "never" (serve from a transient copy)`},
		{key: "write", typ: tString, def: "back", example: `"through"`, doc: `"back": offload on evict, or "through": copy down on creation`},
		{key: "prefetch", typ: tString, def: "off", doc: `"off", "best_effort", "wait_complete" or "timeout" (SGLang HiCache)`},
		{key: "prefetch_timeout", typ: tDuration, def: int64(0), min: atLeast0, example: `"50ms"`, doc: `for prefetch = "timeout"`},
		{key: "recompute", typ: tString, def: "never", doc: `"never", or "when-cheaper": recompute the part of a cached prefix that loads slower`},
		{key: "stage", typ: tString, def: "copy", example: `"copy"`,
			doc: `"copy": a hit below tier 1 reaches hbm through tier 1 and leaves a copy there (LMCache, Mooncake);` + "\n" + `"pass": it moves straight to hbm`},
	}},
	{name: "slo", doc: "summary.json's slo_attainment: the share of requests meeting both (rejected ones miss)", fields: []field{
		{key: "ttft_ms", typ: tNumber, min: above0, defDoc: "none", example: "500", doc: "time to first token at most, ms"},
		{key: "tpot_ms", typ: tNumber, min: above0, defDoc: "none", example: "50", doc: "time per output token at most, ms (requests with one output token meet it)"},
	}},
	{name: "cluster", doc: "optional: instances, each a copy of the GPU and every tier above (docs/cluster.md)", fields: []field{
		{key: "instances", typ: tInt, min: atLeast1, max: MaxInstances, example: "4", defDoc: "none: this, or the two below",
			doc: "each with its own engine, HBM and copy of every node-scoped tier"},
		{key: "prefill_instances", typ: tInt, min: atLeast1, max: MaxInstances, example: "1", defDoc: "none",
			doc: "with decode_instances: prefill/decode disaggregation (the router picks a prefill instance;\nits KV then crosses the NICs to a decode one); instances, if given, must be their sum"},
		{key: "decode_instances", typ: tInt, min: atLeast1, max: MaxInstances, example: "3", defDoc: "none",
			doc: "instances = prefill_instances + decode_instances"},
		{key: "router", typ: tString, def: "round_robin", enum: RouterNames, example: `"cache_aware"`,
			doc: "chooses each request's instance (docs/routers.md)"},
		{key: "cache_threshold", typ: tNumber, def: 0.5, min: atLeast0, fmax: 1, msg: "must be within 0..1, got %g", example: "0.5",
			doc: "cache_aware: a prefix match above this share of the prompt wins (SGLang)"},
		{key: "balance_abs", typ: tNumber, def: 32.0, min: atLeast0, example: "32",
			doc: "cache_aware: imbalanced when the loads differ by more than this ..."},
		{key: "balance_rel", typ: tNumber, def: 1.0001, min: atLeast1, msg: "must be >= 1, got %g", example: "1.0001",
			doc: "... and the largest exceeds the smallest times this"},
		{key: "overlap_weight", typ: tNumber, def: 1.0, min: atLeast0, example: "1.0",
			doc: "kv_cost: weight of the blocks to prefill against the blocks to decode (Dynamo)"},
		{key: "host_weight", typ: tNumber, def: 0.75, min: atLeast0, fmax: 1, example: "0.75",
			msg: "must be within 0..1 (above 1 a lower-tier hit would beat an hbm hit), got %g",
			doc: "kv_cost: the share of a hit a block found below hbm is credited (Dynamo's host_cache_hit_weight)"},
		{key: "slo_reject", typ: tBool, def: false, example: "false",
			doc: "mooncake: reject a request whose best estimated TTFT misses [slo] ttft_ms"},
		{key: "nic_bandwidth", typ: tBandwidth, defDoc: `"25GB/s"`, min: above0, example: `"25GB/s"`,
			doc: "each node's NIC, each direction, full duplex (25GB/s = 200 Gbit/s): the pool's\ncross-node reads and writes and disaggregation's KV transfers pass both ends'"},
		{key: "nic_latency", typ: tDuration, def: int64(5000), min: atLeast0, example: `"5us"`,
			doc: "one way, per transfer"},
		{key: "nic_lanes", typ: tInt, def: int64(8), min: atLeast1, max: MaxLanes, example: "8",
			doc: "transfers a NIC has in flight per direction: they hide latency, not add bandwidth"},
		{key: "view_delay", typ: tDuration, def: int64(0), min: atLeast0, example: `"0s"`,
			doc: "the router sees the cluster this late: cached blocks by event, load by report (docs/routers.md)"},
	}},
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

// RouterNames lists the routers [cluster] router accepts: the cluster
// package's (a test there checks that each builds).
func RouterNames() []string {
	return []string{"round_robin", "least_loaded", "cache_aware", "kv_cost", "mooncake"}
}

// gpuDoc heads [gpu] in the reference: the two step models.
const gpuDoc = "the time of one batched step (step_model):\n" +
	`"roofline": max(FLOPs / (peak x compute_efficiency),` + "\n" +
	"            bytes / (bandwidth x memory_efficiency)) + step_overhead,\n" +
	"  FLOPs = 2 x params x new tokens + attention, bytes = weights + KV read;\n" +
	`"linear": c0 + c_prefill x prefill tokens + c_decode x decoding sequences` + "\n" +
	"  + c_ctx x context tokens + attention_ns_per_token2 x token pairs"

const (
	presetOrRequired = "the preset's; required without one"
	roofline         = `step_model = "roofline"`
	linear           = `step_model = "linear"`
)

const synthetic = `format = "synthetic"`

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

// value reads key as declared: its type and unit, def when absent, then
// its range and the time limit. def is the declared default unless the
// code computes one (a tier kind's, a link's).
func (t *table) value(key string, def any) (any, error) {
	f := t.decl.field(key)
	if f == nil {
		panic("scenario: undeclared key " + t.decl.name + "." + key)
	}
	raw, given := t.m[key]
	if !given {
		if f.required {
			need := f.need
			if strings.Contains(need, "%s") {
				need = fmt.Sprintf(need, strings.Join(f.enum(), ", "))
			}
			if need != "" {
				return nil, t.errf(key, "required (%s)", need)
			}
			return nil, t.errf(key, "required")
		}
		if def == nil {
			return nil, nil
		}
	}
	v, err := t.convert(f, raw, given, def)
	if err != nil {
		return nil, err
	}
	return v, t.check(f, v)
}

// convert turns the decoded TOML value into the key's Go type.
func (t *table) convert(f *field, raw any, given bool, def any) (any, error) {
	if !given {
		return def, nil
	}
	key := f.key
	switch f.typ {
	case tString:
		if s, ok := raw.(string); ok {
			return s, nil
		}
		return nil, t.errf(key, "must be a string, got %s", describe(raw))
	case tInt:
		if n, ok := raw.(int64); ok {
			return n, nil
		}
		return nil, t.errf(key, "must be an integer, got %s", describe(raw))
	case tBool:
		if b, ok := raw.(bool); ok {
			return b, nil
		}
		return nil, t.errf(key, "must be true or false, got %s", describe(raw))
	case tBytes:
		switch n := raw.(type) {
		case int64:
			return n, nil
		case string:
			b, err := ParseBytes(n)
			if err != nil {
				return nil, t.errf(key, "%v", err)
			}
			return b, nil
		}
		return nil, t.errf(key, `must be a size like "60GiB" or a byte count, got %s`, describe(raw))
	case tDuration:
		switch n := raw.(type) {
		case string:
			d, err := ParseDuration(n)
			if err != nil {
				return nil, t.errf(key, "%v", err)
			}
			return d, nil
		case int64:
			if n == 0 {
				return int64(0), nil
			}
		}
		return nil, t.errf(key, `must be a duration like "10us", got %s`, describe(raw))
	case tFineDuration:
		switch n := raw.(type) {
		case string:
			d, err := ParseFineDuration(n)
			if err != nil {
				return nil, t.errf(key, "%v", err)
			}
			return d, nil
		case int64:
			if n == 0 {
				return 0.0, nil
			}
		}
		return nil, t.errf(key, `must be a duration like "40us" or "0.5ns", got %s`, describe(raw))
	case tBandwidth:
		if s, ok := raw.(string); ok {
			b, err := ParseBandwidth(s)
			if err != nil {
				return nil, t.errf(key, "%v", err)
			}
			return b, nil
		}
		switch raw.(type) {
		case int64, float64:
		default:
			return nil, t.errf(key, `must be a rate like "25GB/s" or a number of bytes/s, got %s`, describe(raw))
		}
	}
	// tNumber, tTokenRate, and a bandwidth given as a number.
	switch n := raw.(type) {
	case int64:
		return float64(n), nil
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, t.errf(key, "must be a finite number, got %v", n)
		}
		return n, nil
	}
	return nil, t.errf(key, "must be a number, got %s", describe(raw))
}

// check applies the declared range, then the limits the unit implies.
func (t *table) check(f *field, v any) error {
	key := f.key
	fail := func(format string, args ...any) error {
		switch {
		case f.msg == "":
			return t.errf(key, format, args...)
		case strings.Contains(f.msg, "%"):
			return t.errf(key, f.msg, v)
		}
		return t.errf(key, "%s", f.msg)
	}
	switch n := v.(type) {
	case int64:
		switch {
		case f.min == above0 && n <= 0:
			return fail("must be > 0")
		case f.min == atLeast0 && n < 0:
			return fail("must be >= 0")
		case f.min == atLeast1 && n < 1:
			return fail("must be >= 1")
		case f.max != 0 && n > f.max:
			return fail("must be <= %d", f.max)
		}
		if f.typ == tDuration {
			return t.inTime(key, n)
		}
	case float64:
		switch {
		case f.min == above0 && !(n > 0):
			return fail("must be > 0")
		case f.min == atLeast0 && n < 0:
			return fail("must be >= 0")
		case f.min == atLeast1 && !(n >= 1):
			return fail("must be >= 1")
		case f.min == share && !(n > 0 && n <= 1):
			return fail("must be > 0 and <= 1")
		case f.fmax != 0 && n > f.fmax:
			return fail("must be <= %g", f.fmax)
		}
		switch f.typ {
		case tFineDuration:
			if !(n < float64(core.MaxTime)) {
				return t.errf(key, "%s is past %s", FormatDuration(int64(min(n, 9e18))), timeLimit)
			}
		case tBandwidth:
			return t.perBlock(key, n)
		case tTokenRate:
			return t.perToken(key, n)
		}
	case string:
		if f.enum != nil && !slices.Contains(f.enum(), n) {
			if f.msg != "" {
				return t.errf(key, f.msg, n)
			}
			return t.errf(key, "unknown %s %q (known: %s)", key, n, strings.Join(f.enum(), ", "))
		}
	}
	return nil
}

// Typed readers: the declared default, or def where the code computes it.
func (t *table) str(key string) (string, error) {
	v, err := t.value(key, t.decl.field(key).def)
	s, _ := v.(string)
	return s, err
}
func (t *table) integer(key string) (int64, error) {
	v, err := t.value(key, t.decl.field(key).def)
	n, _ := v.(int64)
	return n, err
}
func (t *table) intOr(key string, def int64) (int64, error) {
	v, err := t.value(key, def)
	n, _ := v.(int64)
	return n, err
}
func (t *table) number(key string) (float64, error) {
	v, err := t.value(key, t.decl.field(key).def)
	x, _ := v.(float64)
	return x, err
}
func (t *table) numberOr(key string, def float64) (float64, error) {
	v, err := t.value(key, def)
	x, _ := v.(float64)
	return x, err
}

// optNumber is numberOr for a key whose absence (def 0) means "unknown":
// def is returned unchecked when the key is not given.
func (t *table) optNumber(key string, def float64) (float64, error) {
	if _, given := t.m[key]; !given {
		return def, nil
	}
	return t.number(key)
}
func (t *table) optInt(key string, def int64) (int64, error) {
	if _, given := t.m[key]; !given {
		return def, nil
	}
	return t.integer(key)
}
func (t *table) boolean(key string) (bool, error) {
	v, err := t.value(key, t.decl.field(key).def)
	b, _ := v.(bool)
	return b, err
}

// param reads an eviction policy's parameter: a number, no default.
func (t *table) param(key string) (float64, error) {
	v, err := t.convert(&field{key: key, typ: tNumber}, t.m[key], true, nil)
	x, _ := v.(float64)
	return x, err
}

// timeLimit is core.MaxTime in words.
const timeLimit = "the simulated-time limit of 146 years (2^62 ns)"

// years renders nanoseconds in years for limit messages.
func years(ns float64) string {
	if ns > 1e300 {
		return "forever"
	}
	return strconv.FormatFloat(ns/(365.25*86400e9), 'g', 3, 64) + " years"
}

// inTime checks a duration against the simulated-time limit.
func (t *table) inTime(key string, ns int64) error {
	if ns > core.MaxTime {
		return t.errf(key, "%s is past %s", FormatDuration(ns), timeLimit)
	}
	return nil
}

// perToken checks that one token at rate (tokens/s) takes less than the
// simulated-time limit.
func (t *table) perToken(key string, rate float64) error {
	if ns := 1e9 / rate; !(ns < float64(core.MaxTime)) {
		return t.errf(key, "%g tokens/s takes %s per token, past %s", rate, years(ns), timeLimit)
	}
	return nil
}

// perBlock checks that a bandwidth moves one KV block within the limit.
func (t *table) perBlock(key string, bw float64) error {
	if ns := float64(t.p.blockBytes) * 1e9 / bw; t.p.blockBytes > 0 && !(ns < float64(core.MaxTime)) {
		return t.errf(key, "%g B/s moves one %s block in %s, past %s", bw, FormatBytes(t.p.blockBytes), years(ns), timeLimit)
	}
	return nil
}

// describe renders a decoded TOML value for type errors.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("float %v", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case time.Time:
		return "datetime"
	case map[string]any:
		return "table"
	case []any, []map[string]any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// keys lists the declared keys in order.
func (s *section) keys() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.key
	}
	return out
}

// policyKeys are the fixed keys of a [[policy]] entry; every other key is a
// numeric parameter of the eviction policy.
var policyKeys = sectionNamed("policy").keys()
