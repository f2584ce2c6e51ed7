// Package scenario loads a TOML scenario file into validated, typed
// configuration with every default filled in.
//
// Layout, as Reference renders it from the declarations the loader reads:
//
//	name = "conversation-3tier"   # letters, digits, '.', '_', '-'; names the results folder;
//	                              # default the file name without .toml
//	seed = 1                      # drives format = "synthetic"; default 1
//	profile = "hw.toml"           # link figures from kvsim calibrate replace the default links;
//	                              # default none
//
//	[model]                       # required;
//	                              # bytes/token = 2 x layers x kv_heads x head_dim x dtype bytes
//	layers = 32                   # 1..16777216; required
//	kv_heads = 8                  # 1..16777216; required
//	head_dim = 128                # 1..16777216; required
//	dtype = "bf16"                # element type; fp32 | bf16 | fp16 | fp8 | int8; default "bf16"
//	block_tokens = 512            # tokens per KV block (Mooncake's); 1..16777216; default 512
//
//	[gpu]                         # optional
//	prefill_tokens_per_s = 20000  # > 0; default 20000
//	attention_ns_per_token2 = 0   # quadratic attention cost per (new x context) token pair, ns; >= 0;
//	                              # default 0
//	decode_tokens_per_s = 50      # per running request; > 0; default 50
//	load = "layerwise"            # layerwise: KV loads overlap compute layer by layer;
//	                              # layerwise | serial; default "layerwise"
//
//	[[tier]]                      # required, one or more; the first tier must be the one hbm tier
//	name = "hbm"                  # unique; letters, digits, '.', '_', '-'; default the kind
//	kind = "hbm"                  # hbm | pinned | dram | ssd | nvmeof | remote_dram; required
//	capacity = "60GiB"            # or an integer byte count; > 0; default per kind
//	bandwidth = "2TB/s"           # or a number of bytes/s; > 0; default per kind
//	latency = "100ns"             # ns, us, µs, ms, s; >= 0; default per kind
//	cost_per_gb = 20.0            # dollars per 1e9 bytes; >= 0; default per kind
//	shared_bandwidth = false      # true: every transfer in or out of the tier, over any
//	                              # link and either direction, also queues for one pipe
//	                              # of this bandwidth (an SSD's reads and writes share the
//	                              # drive); false: each link direction is its own pipe; default false
//
//	[[link]]                      # optional; default: consecutive tiers in file order
//	from = "hbm"                  # required
//	to = "dram"                   # required
//	bandwidth = "25GB/s"          # from -> to; > 0; default the slower tier's
//	reverse_bandwidth = "25GB/s"  # to -> from; > 0; default bandwidth
//	latency = "100ns"             # from -> to; >= 0; default the larger tier's
//	reverse_latency = "100ns"     # to -> from; >= 0; default latency
//	lanes = 1                     # transfers in flight per direction: they hide latency, not add bandwidth;
//	                              # 1..2147483647; default 1
//
//	[workload]                    # required
//	trace = "../traces/conversation_trace.jsonl"  # absolute, or relative to this file's directory;
//	                              # default none: required unless format = "synthetic"
//	format = "mooncake"           # "synthetic": no trace, generated from seed (scenarios/synthetic_seed.toml);
//	                              # mooncake | synthetic; default "mooncake"
//	limit = 0                     # requests to read, 0 = all; 0..2147483647; default 0
//	skip_bad_lines = false        # default false
//	speedup = 1.0                 # arrival times divided by it: 2 = twice the request rate; > 0;
//	                              # default 1
//	requests = 2000               # 0..2147483647; only with format = "synthetic"; default 2000
//	rate = 3.5                    # new conversations per second; only with format = "synthetic";
//	                              # default 3.5
//	turns = 2.5                   # mean turns per conversation; only with format = "synthetic";
//	                              # default 2.5
//	system_tokens = 1024          # shared system prompt; 0..2147483647; only with format = "synthetic";
//	                              # default 1024
//	user_tokens = 3000            # mean per turn; 0..2147483647; only with format = "synthetic";
//	                              # default 3000
//	output_tokens = 400           # mean per turn; 0..2147483647; only with format = "synthetic";
//	                              # default 400
//	think = "20s"                 # mean pause between turns; only with format = "synthetic";
//	                              # default "20s"
//	max_context = 32768           # a conversation ends before its context passes this; 0..2147483647;
//	                              # only with format = "synthetic"; default 32768
//
//	[[policy]]                    # required, one or more
//	name = "lru"                  # label in results; unique; default the eviction name
//	eviction = "lru"              # a kvsim/policy name; required
//	admission = "after:2"         # "always", or "after:K": K references before entering a lower tier;
//	                              # default "always"
//	promotion = "always"          # "always", "second-hit" (Mooncake) or "never" (serve from a transient copy);
//	                              # default "always"
//	write = "through"             # "back": offload on evict, or "through": copy down on creation;
//	                              # default "back"
//	prefetch = "off"              # "off", "best_effort", "wait_complete" or "timeout" (SGLang HiCache);
//	                              # default "off"
//	prefetch_timeout = "50ms"     # for prefetch = "timeout"; >= 0; default "0ns"
//	recompute = "never"           # "never", or "when-cheaper": recompute the part of a cached prefix that loads slower;
//	                              # default "never"
//	# any other key is a numeric parameter the eviction policy declares
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
