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
//	                              # bytes/token = 2 x layers x kv_heads x head_dim x kv_dtype bytes (MLA: layers x
//	                              # (kv_lora_rank + qk_rope_head_dim) x kv_dtype bytes), counting only full-attention layers
//	preset = "llama-3.1-8b"       # the geometry from the model's config.json (docs/engine.md lists the presets);
//	                              # each key overrides;
//	                              # deepseek-v3 | gemma-3-27b | gpt-oss-120b | kimi-k2 | llama-3.1-405b | llama-3.1-70b | llama-3.1-8b | llama-3.2-3b | llama-3.3-70b | llama-4-scout | mistral-small-24b | qwen2.5-32b | qwen2.5-72b | qwen2.5-7b | qwen3-235b-a22b | qwen3-30b-a3b | qwen3-32b | qwen3-8b;
//	                              # default none
//	layers = 32                   # 1..16777216; default the preset's; required without one
//	kv_heads = 8                  # 1..16777216; default the preset's; required without one
//	head_dim = 128                # 1..16777216; default the preset's; required without one
//	heads = 32                    # query heads, a multiple of kv_heads: attention FLOPs = 4 x layers x heads x head_dim per token pair;
//	                              # 1..16777216; default the preset's; needed by step_model = "roofline"
//	params = 8.03e9               # parameters: 2 FLOPs per parameter per token, params x dtype bytes of weights read per step;
//	                              # > 0; default the preset's; needed by step_model = "roofline"
//	dtype = "bf16"                # element type of the weights (the deepseek-v3 and kimi-k2 presets: fp8), and of the KV cache unless kv_dtype;
//	                              # fp32 | bf16 | fp16 | fp8 | int8; default "bf16"
//	block_tokens = 512            # tokens per KV block (Mooncake's); 1..16777216; default 512
//	hidden = 4096                 # hidden size: one token's activations, what tp and ep collectives move;
//	                              # sizes an expert; 1..16777216; default the preset's
//	kv_dtype = "fp8"              # element type of the KV cache; fp32 | bf16 | fp16 | fp8 | int8;
//	                              # default the preset's, else dtype
//	kv_lora_rank = 512            # MLA: one cached latent of kv_lora_rank + qk_rope_head_dim elements per token and layer;
//	                              # 1..16777216; default the preset's; none: K and V per KV head
//	qk_rope_head_dim = 64         # MLA: the rotary part cached beside the latent; 0..16777216;
//	                              # default the preset's, else 0
//	window = 128                  # tokens a local layer attends to;
//	                              # local layers keep at most this much KV per request,
//	                              # outside the block cache (docs/engine.md); 1..16777216;
//	                              # default the preset's; none: every layer attends to the whole context
//	window_kind = "sliding"       # "sliding": the last window tokens;
//	                              # "chunked": the tokens of its own window-token chunk;
//	                              # sliding | chunked; default the preset's, else "sliding"
//	full_every = 2                # every full_every-th layer (the full_every-th, the 2 x full_every-th, ...) attends to everything;
//	                              # 1..16777216; default the preset's; required with window
//	experts = 128                 # routed experts per MoE layer;
//	                              # params counts them all, FLOPs count experts_per_token of them;
//	                              # 1..16777216; default the preset's; none: a dense model
//	experts_per_token = 8         # 1..16777216; default the preset's; required with experts
//	expert_ffn = 768              # intermediate size of one expert: 3 x hidden x expert_ffn parameters;
//	                              # 1..16777216; default the preset's; required with experts
//	shared_experts = 1            # experts of expert_ffn every token uses, part of the dense parameters;
//	                              # 0..16777216; default the preset's, else 0
//	expert_dtype = "mxfp4"        # element type of the routed experts' weights (gpt-oss ships MXFP4: 4.25 bits a weight);
//	                              # fp32 | bf16 | fp16 | fp8 | int8 | mxfp4;
//	                              # default the preset's, else dtype
//	dense_layers = 3              # the first dense_layers layers have a dense MLP instead of experts;
//	                              # 0..16777216; default the preset's, else 0
//
//	[gpu]                         # optional; the time of one batched step (step_model):
//	                              # "roofline": max(FLOPs / (peak x compute_efficiency),
//	                              #             bytes / (bandwidth x memory_efficiency)) + step_overhead,
//	                              #   FLOPs = 2 x active params x new tokens + attention, bytes = weights + KV read,
//	                              #   plus, with an interconnect, tp's all-reduces and ep's all-to-alls (docs/engine.md);
//	                              # "linear": c0 + c_prefill x prefill tokens + c_decode x decoding sequences
//	                              #   + c_ctx x context tokens + attention_ns_per_token2 x token pairs
//	engine = "batched"            # "batched": vLLM v1-style steps (decodes first, then prefill chunks, under a token budget);
//	                              # "simple": one prefill at a time at prefill_tokens_per_s, decodes at decode_tokens_per_s;
//	                              # batched | simple; default "batched"
//	max_num_batched_tokens = 8192  # tokens one batched step computes at most (vLLM's max_num_batched_tokens);
//	                              # 1..2147483647; default 8192
//	max_num_seqs = 256            # running (admitted) requests at most, either engine (vLLM's max_num_seqs);
//	                              # 1..2147483647; default 256
//	page_tokens = 16              # generated tokens' KV is allocated in pages of this many tokens (vLLM's block_size);
//	                              # the cache's unit of reuse stays model.block_tokens; 1..16777216;
//	                              # default 16
//	step_model = "roofline"       # time of one batched step; roofline | linear;
//	                              # default "roofline" with a preset (or with peak_tflops or hbm_bandwidth and no rates), else "linear";
//	                              # "linear" whenever a c_ key is set
//	preset = "h100"               # peak_tflops, hbm_bandwidth and hbm_capacity from the data sheet;
//	                              # each key overrides;
//	                              # a100 | b200 | h100 | h100-pcie | h100-sxm | h20 | h200 | l40s | mi300x | rtx-4090 | rtx-pro-6000;
//	                              # default none
//	tp = 1                        # tensor-parallel GPUs serving the model: FLOP/s, bandwidth and memory are tp times one GPU's;
//	                              # with an interconnect, two all-reduces of the step's activations per layer;
//	                              # 1..65536; default 1
//	dp = 1                        # attention data parallelism of a MoE model: dp groups of tp GPUs, each with its own KV,
//	                              # share the experts (ep = tp x dp);
//	                              # replicas of a dense model are [cluster] instances; 1..65536;
//	                              # default 1
//	ep = 1                        # 1: experts tensor-parallel like the rest;
//	                              # tp x dp: each GPU holds whole experts (vLLM's
//	                              # enable_expert_parallel), and with dp > 1 every MoE layer dispatches and combines tokens in two all-to-alls;
//	                              # 1..65536; default 1
//	interconnect = "nvlink4"      # the link between the GPUs of one instance: its bandwidth and latency;
//	                              # none | nvlink3 | nvlink4 | nvlink5 | pcie4 | pcie5 | xgmi;
//	                              # default none: collectives take no time
//	interconnect_bandwidth = "450GB/s"  # per GPU, each direction; > 0; default the interconnect's
//	interconnect_latency = "1us"  # per step of a collective (a ring all-reduce has 2 x (tp - 1)); >= 0;
//	                              # default the interconnect's
//	peak_tflops = 989             # dense bf16 TFLOP/s of one GPU; > 0;
//	                              # only with step_model = "roofline"; default the preset's
//	hbm_bandwidth = "3.35TB/s"    # of one GPU; > 0; only with step_model = "roofline";
//	                              # default the preset's
//	hbm_capacity = "80GiB"        # of one GPU;
//	                              # the hbm tier's capacity defaults to 0.9 x hbm_capacity x tp minus the weights
//	                              # (vLLM's gpu_memory_utilization = 0.9); > 0; default the preset's
//	compute_efficiency = 0.5      # share of peak FLOP/s reached; 0 < x <= 1;
//	                              # only with step_model = "roofline"; default 0.5
//	memory_efficiency = 0.8       # share of HBM bandwidth reached; 0 < x <= 1;
//	                              # only with step_model = "roofline"; default 0.8
//	step_overhead = "1ms"         # fixed time per step: scheduling, input preparation, sampling; >= 0;
//	                              # only with step_model = "roofline"; default "1ms"
//	c0 = "5ms"                    # per step; >= 0; only with step_model = "linear";
//	                              # default 0 if any c_ key is set, else 1s / decode_tokens_per_s
//	c_prefill = "40us"            # per prefill token; >= 0; only with step_model = "linear";
//	                              # default 0 if c0 or another c_ key is set, else 1s / prefill_tokens_per_s
//	c_decode = "30us"             # per decoding sequence; >= 0; only with step_model = "linear";
//	                              # default 0
//	c_ctx = "50ns"                # per context token attention reads;
//	                              # attention_ns_per_token2 stays the per-pair term; >= 0;
//	                              # only with step_model = "linear"; default 0
//	prefill_tokens_per_s = 20000  # simple engine; legacy linear mapping; > 0; default 20000
//	attention_ns_per_token2 = 0   # quadratic attention cost per (new x context) token pair, ns;
//	                              # simple engine and linear steps; >= 0; default 0
//	decode_tokens_per_s = 50      # per running request; simple engine; legacy linear mapping; > 0;
//	                              # default 50
//	load = "layerwise"            # layerwise: KV loads overlap compute layer by layer;
//	                              # simple engine only (a batched prefill starts once its loads landed);
//	                              # layerwise | serial; default "layerwise"
//	cost_per_hour = 2.5           # dollars per GPU-hour;
//	                              # a run costs tp x dp x instances GPUs over its simulated span (docs/ledger.md);
//	                              # >= 0; default 0: no GPU cost
//	hbm_free = "landed"           # when an evicted block's HBM is free: "landed": once its copy down has left HBM
//	                              # (vLLM's offloading keeps GPU blocks until their store completes);
//	                              # "evict": at once (optimistic); landed | evict; default "landed"
//
//	[[tier]]                      # required, one or more; the first tier must be the one hbm tier;
//	                              # at most 8
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
//	scope = "node"                # "node": each instance has its own copy; "cluster": one pool
//	                              # shared by every instance of [cluster] (a global DRAM pool,
//	                              # NVMe-oF, remote DRAM), capacity being each node's share;
//	                              # only the last tier, at most one, not hbm (docs/cluster.md);
//	                              # node | cluster; default "node"
//	dwpd = 1                      # rated drive writes per day over service_years (a 3.84 TB data-center NVMe: 1 over
//	                              # 5 years, about 7 PB written); any kind may take it (docs/ledger.md);
//	                              # > 0 and <= 100; default none: no life figure
//	tbw = 7008                    # rated terabytes (1e12 bytes) written;
//	                              # with dwpd too, the smaller rating counts; > 0;
//	                              # default none: no life figure
//	service_years = 5             # dwpd's rating period (the warranty) and the years the tier's cost is spread over
//	                              # (a rated tier wearing out sooner: its life); > 0 and <= 100;
//	                              # default 5
//	endpoint = "redis://10.0.0.2:6379"  # remote_dram only: the Redis or Valkey server that
//	                              # replay --real keeps the tier in (redis://HOST:PORT
//	                              # or valkey://HOST:PORT, optionally /DB), or the
//	                              # kvsim serve --rdma whose memory it writes and reads
//	                              # by RDMA (rdma://HOST:PORT, optionally
//	                              # ?device=NAME&gid_index=N; docs/rdma.md); the
//	                              # simulator does not read it;
//	                              # default none: emulated in local memory
//	device = "/dev/nvme1n1"       # nvmeof only: the namespace (or a file) replay --real keeps the
//	                              # tier in, in fixed slots by O_DIRECT; claimed only if its first
//	                              # 64 KiB are zero or kvsim's; the simulator does not read it;
//	                              # default none: a bucket store in replay's --dir
//
//	[[link]]                      # optional; default: consecutive tiers in file order
//	from = "hbm"                  # required
//	to = "dram"                   # required
//	bandwidth = "25GB/s"          # from -> to; > 0; default the slower tier's
//	reverse_bandwidth = "25GB/s"  # to -> from; > 0; default bandwidth
//	latency = "100ns"             # from -> to; >= 0; default the larger tier's
//	reverse_latency = "100ns"     # to -> from; >= 0; default latency
//	lanes = 1                     # transfers in flight per direction: they hide latency, not add bandwidth
//	                              # (replay --real: a remote tier's connections or queue pairs); 1..1024;
//	                              # default 1
//
//	[workload]                    # required
//	trace = "../traces/conversation_trace.jsonl"  # absolute, or relative to this file's directory;
//	                              # default none: required unless format = "synthetic"
//	format = "mooncake"           # "mooncake" (JSONL;
//	                              # optional session_id and delay), "bailian" (Qwen Bailian JSONL: 16-token
//	                              # ids chained, regrouped into block_tokens, a multiple of 16), "azure" or "burstgpt" (CSV, no hash
//	                              # ids: [workload.inject] gives them blocks), "kvevents" (a `kvsim events record` log: its GPU stores as requests);
//	                              # "synthetic": no trace, generated from seed;
//	                              # mooncake | bailian | azure | burstgpt | kvevents | synthetic;
//	                              # default "mooncake"
//	mode = "open"                 # "open": every request arrives at its trace time;
//	                              # "closed": a session's later turn arrives
//	                              # its think time after the turn it follows finished (docs/workloads.md);
//	                              # open | closed; default "open"
//	limit = 0                     # requests to read, 0 = all; 0..2147483647; default 0
//	skip_bad_lines = false        # default false
//	speedup = 1.0                 # arrival times divided by it: 2 = twice the request rate; > 0;
//	                              # default 1
//	requests = 2000               # 0..1000000; only with format = "synthetic"; default 2000
//	rate = 3.5                    # new conversations per second; > 0; only with format = "synthetic";
//	                              # default 3.5
//	turns = 2.5                   # mean turns per conversation; 1..10000;
//	                              # only with format = "synthetic"; default 2.5
//	system_tokens = 1024          # shared system prompt; 0..1048576; only with format = "synthetic";
//	                              # default 1024
//	user_tokens = 3000            # mean per turn; 0..1048576; only with format = "synthetic";
//	                              # default 3000
//	output_tokens = 400           # mean per turn; 0..1048576; only with format = "synthetic";
//	                              # default 400
//	think = "20s"                 # mean pause between turns; only with format = "synthetic";
//	                              # default "20s"
//	max_context = 32768           # a conversation ends before its context passes this; 0..1048576;
//	                              # only with format = "synthetic"; default 32768
//
//	[workload.inject]             # optional;
//	                              # block ids for a trace without them (docs/workloads.md): system prompt -> tenant prefix
//	                              # -> session history -> new tokens, drawn from seed
//	replace = false               # also replace the ids of requests that have them; default false
//	system_tokens = 1024          # global system prompt every request starts with; 0..2147483647;
//	                              # default 0
//	tenants = 0                   # tenant (application) prefixes after it; 0: none; 0..1048576;
//	                              # default 0
//	tenant_tokens = 0             # tokens of each tenant prefix; needs tenants >= 1; 0..2147483647;
//	                              # default 0
//	tenant_zipf = 1.0             # skew of a new session's tenant: tenant k (from 1) with weight k^-tenant_zipf, 0 = uniform;
//	                              # 0..10; default 1
//	session_continue = 0.6        # probability a request continues an open session (prompt = its last prompt + reply + new tokens);
//	                              # 0..1; default 0
//	sessions = 64                 # open sessions, the oldest closing when a new one opens: more = longer reuse distances;
//	                              # 1..1048576; default 64
//	session_gap = 0               # mean requests a session waits after a turn before it may continue (exponential: the reply, the user's pause);
//	                              # 0..1073741824; default 0
//
//	[[policy]]                    # required, one or more; one simulation each; at most 64
//	name = "lru"                  # label in results; unique; default the eviction name
//	eviction = "lru"              # a kvsim/policy name for every tier, or one per tier: { hbm = "lru", ssd = "fifo" };
//	                              # a "default" entry covers the tiers not named; required
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
//	stage = "copy"                # "copy": a hit below tier 1 reaches hbm through tier 1 and leaves a copy there (LMCache, Mooncake);
//	                              # "pass": it moves straight to hbm; default "copy"
//	idle_rank = "observed"        # closed-loop sessions: each tier evicts idle sessions' blocks first, overdue ones, then those expected back latest (MORI);
//	                              # "observed": expected wait = mean tool wait seen on the call's path, "oracle": the trace's own next wait;
//	                              # off | observed | oracle; default "off"
//	# any other key is a numeric parameter the eviction policy declares
//
//	[slo]                         # optional;
//	                              # summary.json's slo_attainment: the share of requests meeting both (rejected ones miss)
//	ttft_ms = 500                 # time to first token at most, ms; > 0; default none
//	tpot_ms = 50                  # time per output token at most, ms (requests with one output token meet it);
//	                              # > 0; default none
//
//	[cluster]                     # optional;
//	                              # optional: instances, each a copy of the GPU and every tier above (docs/cluster.md)
//	instances = 4                 # each with its own engine, HBM and copy of every node-scoped tier;
//	                              # 1..256; default none: this, or the two below
//	prefill_instances = 1         # with decode_instances: prefill/decode disaggregation (the router picks a prefill instance;
//	                              # its KV then crosses the NICs to a decode one);
//	                              # instances, if given, must be their sum; 1..256; default none
//	decode_instances = 3          # instances = prefill_instances + decode_instances; 1..256;
//	                              # default none
//	router = "cache_aware"        # chooses each request's instance (docs/routers.md);
//	                              # round_robin | least_loaded | cache_aware | kv_cost | mooncake | llmd_precise | llmd_approximate;
//	                              # default "round_robin"
//	cache_threshold = 0.5         # cache_aware: a prefix match above this share of the prompt wins (SGLang);
//	                              # 0..1; default 0.5
//	balance_abs = 32              # cache_aware: imbalanced when the loads differ by more than this ...;
//	                              # >= 0; default 32
//	balance_rel = 1.0001          # ... and the largest exceeds the smallest times this; >= 1;
//	                              # default 1.0001
//	overlap_weight = 1.0          # kv_cost: weight of the blocks to prefill against the blocks to decode (Dynamo's prefill_load_scale);
//	                              # >= 0; default 1
//	host_weight = 0.75            # kv_cost: the share of a hit a block found first in tier 1 is credited (Dynamo's host_cache_hit_weight);
//	                              # 0..1; default 0.75
//	disk_weight = 0.25            # kv_cost: the share of a hit a block found first in tier 2 or below is credited (Dynamo: disk_cache_hit_weight 0.25;
//	                              # 0.75 keeps the earlier credit); 0..1; default 0.75
//	overlap_credit = 1.0          # kv_cost: the share of a hit an hbm block is credited (Dynamo's overlap_score_credit);
//	                              # 0..1; default 1
//	credit_decay = 0              # kv_cost: the hbm credit is divided by 1 + this x the instance's prefill backlog above the least, in request sizes (Dynamo's overlap_score_credit_decay);
//	                              # >= 0; default 0
//	shared_weight = 0.5           # kv_cost: > 0 credits a block found first in the pooled tier this share instead of its tier's (Dynamo's shared_cache_multiplier);
//	                              # 0..1; default 0
//	peer_weight = 0.5             # kv_cost: the share of a hit a block another instance would serve from its host tier is credited ([cluster] peer_fetch;
//	                              # not Dynamo's: 0 ignores peers); 0..1; default 0
//	active_request_weight = 0     # kv_cost: blocks of cost per queued or running request (Dynamo's decode_active_request_weight);
//	                              # >= 0; default 0
//	temperature = 0               # kv_cost: 0 takes the least cost;
//	                              # above, a softmax sample over the normalised costs (Dynamo's router_temperature);
//	                              # >= 0; default 0
//	sample_seed = 0               # kv_cost: seeds the temperature sample (with the request's sequence number: a run is reproducible);
//	                              # >= 0; default 0
//	kv_events = true              # kv_cost: false scores its own index of routed blocks instead of the View's tiers (Dynamo's --no-kv-events);
//	                              # default true
//	router_ttl = 120              # kv_cost: seconds a routed block stays in the index without events (Dynamo's router_ttl_secs);
//	                              # >= 0; default 120
//	index_blocks = 1048576        # kv_cost: blocks the index without events keeps per instance, least recently routed dropped (Dynamo's router_max_tree_size);
//	                              # >= 1; default 1048576
//	slo_reject = false            # mooncake: reject a request whose best estimated TTFT misses [slo] ttft_ms;
//	                              # default false
//	llmd_prefix_weight = 3        # llmd_precise, llmd_approximate: profile weight of the prefix scorer;
//	                              # >= 0; default 3
//	llmd_queue_weight = 1         # llmd_precise, llmd_approximate: profile weight of the queue scorer (waiting requests, min-max normalised);
//	                              # >= 0; default 1
//	llmd_kv_weight = 1            # llmd_precise, llmd_approximate: profile weight of the KV-utilisation scorer (1 - usage);
//	                              # >= 0; default 1
//	llmd_gpu_weight = 1.0         # llmd_precise: score of a prefix block whose fastest copy is in hbm (llm-d's gpu medium);
//	                              # >= 0; default 1
//	llmd_cpu_weight = 0.8         # llmd_precise: score of a prefix block whose fastest copy is in tier 1 (llm-d's cpu medium);
//	                              # >= 0; default 0.8
//	llmd_storage_weight = 0.3     # llmd_precise: score of a prefix block whose fastest copy is in tier 2 or below (storage;
//	                              # llm-d's open proposal); >= 0; default 0.3
//	llmd_scrape_ms = 50           # llmd_precise, llmd_approximate: interval at which the queue and KV-utilisation scorers' metrics are scraped (ms;
//	                              # 0: read live); >= 0; default 50
//	approx_lru_tokens = 500000    # llmd_approximate: tokens of routed prefixes remembered per instance, least recent dropped (31250 blocks of 16);
//	                              # >= 1; default 500000
//	approx_max_tokens = 4096      # llmd_approximate: the longest prefix matched, in tokens (256 blocks of 16);
//	                              # >= 1; default 4096
//	approx_bytes_per_token = 4    # llmd_approximate: the prompt text's bytes per token;
//	                              # the scorer counts 4 a token, so its LRU and match limit cover approx_*_tokens x 4 / this tokens;
//	                              # > 0; default 4
//	nic_bandwidth = "25GB/s"      # each node's NIC, each direction, full duplex (25GB/s = 200 Gbit/s): the pool's
//	                              # cross-node reads and writes and disaggregation's KV transfers pass both ends';
//	                              # > 0; default "25GB/s"
//	nic_latency = "5us"           # one way, per transfer; >= 0; default "5us"
//	nic_lanes = 8                 # transfers a NIC has in flight per direction: they hide latency, not add bandwidth;
//	                              # 1..1024; default 8
//	peer_fetch = false            # a block in no tier of an instance's own nor the pool is read over both NICs from another
//	                              # instance's node-scoped pinned or dram tier, if one holds it, rather than computed (docs/cluster.md);
//	                              # default false
//	peer_stage = "direct"         # with peer_fetch: "direct": a peer's block crosses the NICs into HBM;
//	                              # "host": it lands in the reader's own host tier (a copy kept there), then crosses its local link to HBM;
//	                              # direct | host; default "direct"
//	view_delay = "0s"             # the router sees the cluster this late: cached blocks by event, load by report (docs/routers.md);
//	                              # >= 0; default "0ns"
//	events = "tcp://*:5557"       # kvsim run publishes each instance's KV events in vLLM's format, instance i at PORT+i,
//	                              # its replay socket at PORT+instances+i (as --publish-events;
//	                              # docs/events.md); default none
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
// Presets (presets.go, with their sources): a [model] preset gives layers,
// heads, kv_heads, head_dim and params from the model's config.json, a
// [gpu] preset the dense bf16 FLOP/s, HBM bandwidth and memory of one GPU
// from its data sheet; every value is overridable by its key. With the
// GPU's memory known and no hbm capacity given, the hbm tier gets what
// vLLM leaves for KV: GPUMemoryUtilization x memory x tp minus the weights.
//
// A scenario written for the rate engine (only prefill_tokens_per_s and
// decode_tokens_per_s) keeps loading: its step_model is "linear" with
// GPU.LegacyStep set, and the simulator derives the step from the rates
// (sim.LegacyStep: c0 = 1s / decode rate, c_prefill = 1s / prefill rate).
//
// eviction is one policy name for every tier or an inline table by tier
// name (with an optional "default"); Policy.Evictions holds each tier's,
// Policy.Eviction the name shown in results.
//
// Errors are one line: "FILE:LINE: table: key: problem", the line omitted
// where it cannot be known (see Error).
package scenario
