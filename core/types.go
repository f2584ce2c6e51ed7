package core

import "kvsim/policy"

// Block is a dense block index (see policy.Block).
type Block = policy.Block

// Tier is one level of the hierarchy as the core sees it: a name and a byte
// capacity. Tier 0 is GPU HBM, where a request's KV must be to run.
type Tier struct {
	Name     string
	Capacity int64
	// MaxBlocks, if > 0, also bounds the blocks a lower tier holds,
	// whatever their sizes: a real store of fixed slots (a block device)
	// holds a slot per block, a short block included. Not for tier 0 or a
	// pool.
	MaxBlocks int
}

// Config is what the core needs; bodies add their own timing models.
type Config struct {
	Tiers         []Tier
	BytesPerToken int64
	BlockTokens   int
	// NewPolicy builds the eviction policy of one tier.
	NewPolicy func(tier int, capacity int64) (policy.Policy, error)
	// Strategy: admission, write, promotion and prefetch.
	Strategy Strategy
	// Cost estimates loads and compute for Strategy.RecomputeWhenCheaper;
	// bodies that can estimate set it (the simulator does).
	Cost CostModel
	// MaxRunning bounds the admitted, unfinished requests (vLLM's
	// max_num_seqs); 0: no limit.
	MaxRunning int
	// PageTokens is the engine's KV page: the KV of generated tokens is
	// allocated in pages of this many tokens (vLLM's block_size, 16 by
	// default), apart from BlockTokens, the cache's unit of reuse. 0: BlockTokens.
	PageTokens int
	// Pool, if set, is the last tier, shared with other cores (a
	// cluster's pooled tier); its Tiers entry names it, and its capacity
	// and policy are the pool's. Node is this core's node in the pool.
	Pool *Pool
	Node int
	// Peers, if set, lets this core read a block it holds in no tier from
	// another member's private host tier over the NICs (peer fetch), before
	// computing it; Node is its node there too.
	Peers *Peers
	// OnResidency, if set, hears every change of which tiers hold a
	// block (bit t: tier t), as the change happens: what a worker's KV
	// events tell a router's index (Dynamo's stored/removed events).
	OnResidency func(b Block, where uint8)
	// HoldEvicted keeps an evicted block's HBM allocated, unusable, until
	// every copy out of HBM that was in flight when it was evicted has left
	// HBM (Core.Drained), as vLLM's offloading connector keeps a request's
	// GPU blocks until their store completes. The body must then report
	// Drained for every move out of HBM. false: evicted HBM is free at once.
	HoldEvicted bool
}

// CostModel is a body's estimate of what loading and computing cost now.
type CostModel interface {
	// EstimateLoad is the wait before a transfer of bytes from tier into
	// HBM could start (the link's backlog) and how long it then takes.
	EstimateLoad(now int64, tier int, bytes int64) (backlog, service int64)
	// EstimateCompute is the prefill time of compute tokens after cached ones.
	EstimateCompute(cached, compute int) int64
	// Overlapped says whether loads overlap compute (layer-wise) or
	// precede it.
	Overlapped() bool
}

// MaxTime is the latest simulated time, in ns (2^62-1, about 146 years):
// bodies check every arrival, duration and event time against it, and the
// sum of two in-range times cannot wrap an int64.
const MaxTime int64 = 1<<62 - 1

// AddTime adds two durations or times, saturating at MaxTime+1: "past the
// limit", which still adds to another in-range time without wrapping.
func AddTime(a, b int64) int64 {
	if a > MaxTime || b > MaxTime || a+b > MaxTime {
		return MaxTime + 1
	}
	return a + b
}

// Request is one arrival. Blocks holds dense ids of the request's prefix
// blocks in order; the core copies what it keeps.
type Request struct {
	Seq          int64 // position in the trace
	Line         int   // trace line, for messages (0: none)
	Arrival      int64 // ns, 0..MaxTime
	InputTokens  int
	OutputTokens int
	Blocks       []Block
	// RemoteKV, in a disaggregated cluster's decode instance, is 1 + the
	// node whose HBM holds the KV of the whole prompt (its prefill ran
	// there): blocks in no tier here come from it (Move from Remote);
	// 0: none.
	RemoteKV int
	// IdleNs, if > 0, is how long after this request finishes its session
	// is expected to send its next call (an agent's tool wait): the core
	// then marks its blocks idle, back at that time, in every tier whose
	// policy is a policy.Idler. 0: no estimate.
	IdleNs int64
}

// Remote is the source tier of a move from another node's HBM (a
// disaggregated prefill's KV, Request.RemoteKV).
const Remote = -1

// ReqID names a request admitted or queued in the core (a slot index).
type ReqID = int32

// Background is the ReqID of moves no request waits for.
const Background ReqID = -1

// MoveKind says why a block moves.
type MoveKind uint8

const (
	Load         MoveKind = iota // lower tier -> HBM for a request's prefill
	Demote                       // eviction to the next tier down
	WriteThrough                 // copy down on creation
	PrefetchMove                 // a queued request's prefix toward HBM
)

// Mover carries out the core's commands. Implementations must not call back
// into the core from inside these methods; they report completions later
// through Core.PrefillDone, Core.DecodeDone, Core.MoveDone (prefetch moves
// only), Core.Drained (moves out of HBM, with Config.HoldEvicted) and
// Core.Wake.
type Mover interface {
	// Move copies a block between tiers. req is the request whose prefill
	// needs it (Load, PrefetchMove), or Background.
	Move(now int64, req ReqID, b Block, bytes int64, from, to int, kind MoveKind)
	// Drop discards a block's copy in a tier.
	Drop(now int64, b Block, tier int)
	// Prefill computes computeTokens uncached tokens of req after
	// cachedTokens cached ones. It is issued after every Move of req and
	// must complete no earlier than they do. For a request resumed after a
	// preemption the body also recomputes the tokens it had generated
	// (reporting them in Timing.ResumeTokens).
	Prefill(now int64, req ReqID, cachedTokens, computeTokens int)
	// Decode generates the request's output tokens: tokens is its whole
	// OutputTokens; the body keeps count of those already generated
	// (across a preemption) and goes on from there, calling Core.Grow
	// before each token that needs a new block, then Core.DecodeDone.
	Decode(now int64, req ReqID, tokens int)
	// Wake asks for Core.Wake(at, req) at time at (prefetch timeouts).
	Wake(at int64, req ReqID)
	// Preempted tells the body that running request req lost its HBM
	// (Core.Grow found no room): forget its pending decode work but keep
	// the count of tokens it generated; the core re-queues it and later
	// issues Prefill for it again.
	Preempted(now int64, req ReqID)
}

// Timing is what a body reports about a finished prefill.
type Timing struct {
	LoadNs     int64 // time spent bringing cached KV into HBM
	ComputeNs  int64 // time spent computing the uncached tokens
	LoadWaitNs int64 // from Prefill issued until the request's loads had landed
	// ResumeTokens is the generated tokens a resumed (preempted) request
	// recomputed in this prefill, beside the prompt tokens the core asked for.
	ResumeTokens int
}

// Record describes one finished (or rejected) request. Slices are owned by
// the core and valid only during the Observer call.
type Record struct {
	Seq          int64
	Arrival      int64
	Admitted     int64 // left the queue, HBM reserved
	PrefillStart int64 // prefill issued (after waiting for blocks other requests produce)
	FirstToken   int64 // end of the first prefill
	Done         int64
	LoadNs       int64 // summed over its prefills (a preempted request prefills again)
	ComputeNs    int64 // summed over its prefills
	InputTokens  int
	OutputTokens int
	Blocks       int
	// Admission, hits and recomputed tokens are those of the first
	// admission: a preempted request's later ones do not count again.
	HitBlocks        []int64 // usable-prefix hits per tier
	PoolRemote       int     // of the pooled tier's hits, those whose copy lives on another node
	Transferred      int     // blocks received from the prefill node (RemoteKV)
	Peer             int     // blocks read from another node's host tier (Config.Peers)
	BlockHits        int     // blocks resident anywhere, prefix or not
	RecomputedTokens int
	Rejected         bool  // larger than HBM: never runs
	Preemptions      int   // times it lost its HBM and was re-queued
	LoadWaitNs       int64 // summed over its prefills: issued until its loads landed
}

// QueueNs is the wait for HBM space.
func (r *Record) QueueNs() int64 { return r.Admitted - r.Arrival }

// DepWaitNs is the wait for blocks that other running requests were producing.
func (r *Record) DepWaitNs() int64 { return r.PrefillStart - r.Admitted }

// TTFT is the time to first token.
func (r *Record) TTFT() int64 { return r.FirstToken - r.Arrival }

// Observer receives each request's record when it finishes.
type Observer func(r *Record)

// Source yields requests in arrival order; io.EOF ends the stream. The
// Request (and its Blocks slice) may be reused by the next call.
type Source interface {
	Next(r *Request) error
}

// Sessions is a Source for closed-loop replay: Next yields the requests
// that arrive at their own times (a session's first turn), and a turn that
// follows another arrives only once that one has finished, a think time
// later.
type Sessions interface {
	Source
	// Follow reports that request seq finished (or was turned away) at
	// done and returns the requests that follow it, their Arrival set;
	// the slice and its requests are valid until the next call.
	Follow(seq int64, done int64) ([]Request, error)
}
