// Package scenario loads a TOML scenario file into validated, typed
// configuration with every default filled in.
//
// Layout (only [model], [[tier]], [workload] and [[policy]] are required):
//
//	name = "conversation-3tier"   # default: file name without .toml
//	seed = 1                      # default 1; drives format = "synthetic"
//	profile = "hw.toml"           # optional: link figures from kvsim calibrate replace the defaults
//
//	[model]
//	layers = 32
//	kv_heads = 8
//	head_dim = 128
//	dtype = "bf16"                # fp32 | bf16 (default) | fp16 | fp8 | int8
//	block_tokens = 512            # default 512
//
//	[gpu]
//	prefill_tokens_per_s = 20000  # default 20000
//	attention_ns_per_token2 = 0   # optional quadratic attention cost, default 0
//	decode_tokens_per_s = 50      # per running request, default 50
//	load = "layerwise"            # layerwise (default: KV loads overlap compute) | serial
//
//	[[tier]]                      # the first tier must be the one hbm tier
//	name = "hbm"                  # default: the kind
//	kind = "hbm"                  # hbm | pinned | dram | ssd | nvmeof | remote_dram
//	capacity = "60GiB"            # or an integer byte count
//	bandwidth = "2TB/s"           # or a number of bytes/s
//	latency = "100ns"             # ns | us | µs | ms | s
//	cost_per_gb = 20.0
//	shared_bandwidth = false      # true: every transfer in or out of the tier, over any
//	                              # link and either direction, also queues for one pipe
//	                              # of this bandwidth (an SSD's reads and writes)
//
//	[[link]]                      # optional; default: consecutive tiers in file order
//	from = "hbm"
//	to = "dram"
//	bandwidth = "25GB/s"
//	reverse_bandwidth = "25GB/s"  # default: bandwidth
//	latency = "100ns"
//	reverse_latency = "100ns"     # default: latency
//	lanes = 1                     # transfers in flight (hide latency); default 1
//
//	[workload]
//	trace = "../traces/conversation_trace.jsonl"  # relative to this file's directory
//	format = "mooncake"           # default; or "synthetic" (no trace: generated from seed,
//	                              # keys requests, rate, turns, system_tokens, user_tokens,
//	                              # output_tokens, think, max_context)
//	limit = 0                     # requests to read, 0 = all
//	skip_bad_lines = false
//	speedup = 1.0                 # arrival times divided by it: 2 = twice the request rate
//
//	[[policy]]
//	name = "lru"                  # label, default: the eviction name; unique
//	eviction = "lru"              # a kvsim/policy name
//	admission = "always"          # or "after:K"
//	write = "back"                # or "through"
//	promotion = "always"          # or "second-hit", "never"
//	prefetch = "off"              # or "best_effort", "wait_complete", "timeout" (+ prefetch_timeout)
//	recompute = "never"           # or "when-cheaper"
//	# any other key is a numeric parameter the eviction policy declares.
//
// Tier defaults per kind (background document, section 1; KindDefaults):
//
//	kind         capacity   bandwidth  latency  $/GB
//	hbm          60 GiB     2 TB/s     100ns    20
//	pinned       64 GiB     25 GB/s    100ns    5
//	dram         512 GiB    50 GB/s    100ns    5
//	ssd          3.84 TB    7 GB/s     10us     0.3
//	nvmeof       15.36 TB   6 GB/s     20us     0.1
//	remote_dram  1 TiB      50 GB/s    3us      5
//
// Link defaults: bandwidth is the smaller of the two tiers' bandwidths, both
// ways; latency the larger of their latencies; one lane. The exception is a
// link between hbm and a "dram" tier, which defaults to 1 GB/s
// (PageableBandwidth): "dram" is pageable host memory, and the background
// document's example D2H copy from pageable memory runs at ~1 GB/s against
// ~25 GB/s from pinned memory. For host memory registered as pinned, use a
// "pinned" tier or give the link an explicit bandwidth.
//
// Every tier must be reachable from the hbm tier through links, no pair of
// tiers may be linked twice, and links are used in both directions.
//
// Errors are one line: "FILE:LINE: table: key: problem", the line omitted
// where it cannot be known (see Error).
package scenario
