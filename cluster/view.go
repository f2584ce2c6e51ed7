package cluster

import "kvsim/core"

// View is what a router may see of the cluster at a request's arrival.
type View interface {
	Instances() int
	Queued(i int) int          // requests waiting for HBM on instance i
	Running(i int) int         // admitted, unfinished
	QueuedTokens(i int) int64  // prompt tokens of the queued requests
	RunningTokens(i int) int64 // prompt + generated-so-far tokens of the running ones (an estimate is fine: document it)
	// Prefix is how many leading blocks of blocks instance i holds: in its HBM
	// (hbm) and in HBM or any lower tier (any); the longest usable prefix.
	Prefix(i int, blocks []core.Block) (hbm, any int)
	// EstimateTTFT is the instance's own estimate for r now: its queue's
	// prefill work + loading r's cached prefix + computing the rest (ns).
	EstimateTTFT(i int, r *core.Request) int64
	// Tiers appends to out, for each block of the prefix Prefix counts in
	// any tier, the fastest tier of instance i holding it (0: HBM): what
	// KV events tagged with their medium tell a router.
	Tiers(i int, blocks []core.Block, out []uint8) []uint8
	// PoolTier is the tier the instances share as one pool; -1 without one.
	PoolTier() int
	// PeerTier is the private tier an instance may read from another
	// instance with peer fetch ([cluster] peer_fetch); -1 without it.
	PeerTier() int
	// Peers is how many blocks of the usable prefix instance i would read
	// from another instance's PeerTier: of the blocks it holds in no tier,
	// each some other instance holds there, up to the first none does
	// (blocks it holds itself do not end the run). 0 without peer fetch.
	Peers(i int, blocks []core.Block) int
	// KVUsage is the share of instance i's HBM the running requests' KV
	// fills (vLLM's kv_cache_usage_perc, which counts cached free blocks free).
	KVUsage(i int) float64
}
type Router interface {
	Name() string
	// Route picks an instance for r; reject refuses r (counted, never run).
	Route(now int64, r *core.Request, v View) (instance int, reject bool)
}
