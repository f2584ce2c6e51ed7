package core

import (
	"errors"
	"fmt"
	"iter"
	"reflect"

	"kvsim/policy"
)

// The core's code is split by concern: residency.go (which tier holds
// what, pins, eviction and demotion), admit.go (arrival, queueing and
// admission into HBM), prefetch.go (queued requests' prefixes moved up
// early), complete.go (prefill and decode completions), check.go (the
// accounting check tests run).

// MaxTiers bounds the hierarchy depth (residency is a bitmask).
const MaxTiers = 8

// Stats are the core's running totals. Per-tier slices are indexed by tier.
type Stats struct {
	Requests         int64 // finished (not rejected)
	Rejected         int64
	BlockAccesses    int64 // of finished requests
	Hits             []int64
	Misses           int64
	BlockHits        int64
	RecomputedTokens int64
	DepWaits         int64 // requests that waited for another's blocks
	Evictions        []int64
	Demotions        []int64 // by source tier
	Drops            []int64
	Promotions       []int64 // by source tier (lower-tier hits copied to HBM)
	AdmissionDenied  []int64 // by the tier that refused the block
	WriteThroughs    int64
	TransientLoads   int64   // lower-tier hits not kept in HBM (promotion policy)
	Prefetches       int64   // blocks prefetched for queued requests
	PrefetchLate     int64   // still in flight when their request was admitted
	Lost             []int64 // copies a body reported unusable (failed write, corrupt read), by tier
	RecomputeCuts    int64   // requests that recomputed part of their prefix rather than load it
	PeakUsed         []int64 // bytes (a pooled tier: the pool's, as this core saw it)
	PoolRemoteHits   int64   // hits on the pool whose copy lives on another node
	Transferred      int64   // blocks received from a prefill node (disaggregated decode)
	PeerFetched      int64   // blocks read from another node's host tier (Config.Peers)
	PeerStaged       int64   // of those, the ones that landed in this node's host tier too (Peers.Stage)
	Preemptions      int64   // running requests that lost their HBM (recompute)
	ResumeTokens     int64   // generated tokens recomputed when preempted requests resumed
	Staged           int64   // lower-tier hits left in tier 1 on their way up (stage copy)
	// HoldEvicted only: PeakDraining is the most HBM evicted blocks held at
	// once while their copies left it; DrainWaits counts admissions put off
	// because HBM only draining stood in the way.
	// GrowWaits counts decodes that waited for draining HBM to grow.
	PeakDraining int64
	DrainWaits   int64
	GrowWaits    int64
}

// reqState is a request slot: queued, running, or free for reuse (its
// slices keep their arrays).
type reqState struct {
	Request
	sources     []blockSource // per block: where admission takes it from
	produced    []Block       // blocks this request brings into HBM (computes or loads)
	prefetched  []Block       // blocks prefetched for it while queued
	waiters     []ReqID       // requests waiting for blocks this one produces
	waitingOn   int32         // requests whose blocks this one waits for
	prefetching int32         // its prefetches still in flight
	queuedAt    int64
	scratch     int64 // HBM bytes held for the KV of generated tokens (whole blocks, grown by Grow)
	held        int64 // output KV bytes to reserve again at re-admission (a preempted request)
	compute     int   // prompt tokens the current admission's prefill computes
	admitted    int64 // admission (or Started) order, from c.admissions: preemption takes the latest
	decoding    bool  // prefill done, not finished: a possible preemption victim
	decoderAt   int32 // its index in Core.decoders while decoding
	prefilled   bool  // its first prefill finished (FirstToken set)
	resumed     bool  // re-admitted after a preemption: its record counts the first admission only
	growWait    bool  // decoding, its Grow waits for draining HBM (HoldEvicted)
	rec         Record
	hitBlocks   []int64 // the array behind rec.HitBlocks
}

// Core is the hierarchy state machine. Not safe for concurrent use: the body
// calls it from one goroutine.
type Core struct {
	cfg       Config
	strategy  Strategy
	mover     Mover
	observer  Observer
	policies  []policy.Policy // per tier
	holder    policy.Holder   // HBM's policy, if it sets blocks in use aside
	nt        int             // tiers
	capacity  []int64         // per tier, bytes
	used      []int64         // per tier, bytes
	maxBlocks []int           // per tier: Tier.MaxBlocks (0: no limit)
	count     []int           // per tier, blocks held
	pinnedHBM int64           // HBM bytes not evictable: pinned blocks + scratch
	draining  int64           // HoldEvicted: HBM bytes of evicted blocks still being copied out
	pinViews  []tierPins      // per tier: what its policy sees as pinned
	phooks    policyHooks     // batches and request order for policies that want them (offline.go)
	pool      *Pool           // the shared last tier, or nil (pool.go)
	pt        int             // its index; -1 without a pool
	node      int             // this core's node in the pool
	placeAt   int             // the pool node makeRoom chose for the next insert
	peers     *Peers          // other nodes' host tiers this core may read, or nil (peer.go)
	idlers    []policy.Idler  // per tier: its policy if a private tier's is an Idler; nil if none is

	// per block
	size         []int64
	where        []uint8 // bitmask of tiers holding a copy
	pins         []int32 // running requests using the block
	prefetchPins []int32 // queued requests prefetching it (holds lower-tier copies only)
	producer     []ReqID // request computing or loading it into HBM, or -1
	refs         []int32 // requests that referenced it so far
	lowHits      []uint8 // hits served from a lower tier (saturating)
	transient    []bool  // HBM copy to drop when unpinned (promotion policy)
	arriving     []bool  // tier-1 copy still arriving (prefetch)
	prefetchFor  []ReqID // queued request waiting for that prefetch, or -1
	seen         []pass  // the last pass that visited the block
	outbound     []int32 // HoldEvicted: moves out of HBM whose bytes have not all left it
	heldHBM      []bool  // HoldEvicted: its evicted HBM copy is held (counted in draining)
	shield       []bool  // blocks of the request being admitted: no eviction takes them
	peerAt       []int16 // the peer node a srcPeer block is read from (Peers)
	lastPass     pass

	reqs  []reqState // by ReqID
	free  []ReqID
	queue []ReqID // requests waiting for HBM, in arrival order, from qh on
	qh    int

	nrun       int     // admitted, unfinished requests
	queuedToks int64   // prompt tokens of the queued requests (routers read it)
	runToks    int64   // prompt tokens of the running requests
	outHeld    int64   // output KV bytes the running requests hold
	decoders   []ReqID // the decoding requests (preemption victims), in no order
	admissions int64   // admissions and Started calls so far: the preemption order
	growWaits  int     // decoding requests whose Grow waits for draining HBM
	heldBack   bool    // an admission was refused while a Grow waited

	Stats Stats
}

// New builds a core over cfg whose commands go to mv and whose finished
// requests go to obs (which may be nil).
func New(cfg Config, mv Mover, obs Observer) (*Core, error) {
	nt := len(cfg.Tiers)
	if nt == 0 || nt > MaxTiers {
		return nil, fmt.Errorf("core: need 1..%d tiers, got %d", MaxTiers, nt)
	}
	if cfg.BytesPerToken <= 0 || cfg.BlockTokens <= 0 || cfg.PageTokens < 0 {
		return nil, errors.New("core: bytes per token and block tokens must be > 0, page tokens >= 0")
	}
	c := &Core{cfg: cfg, strategy: cfg.Strategy, mover: mv, observer: obs, nt: nt, pt: -1, node: cfg.Node}
	if cfg.Pool != nil {
		if nt < 2 {
			return nil, errors.New("core: a pool must be a tier below hbm")
		}
		if err := cfg.Pool.join(c, cfg.Node, nt-1); err != nil {
			return nil, err
		}
		c.pool, c.pt = cfg.Pool, nt-1
	}
	if cfg.Peers != nil {
		if err := cfg.Peers.join(c, cfg.Node); err != nil {
			return nil, err
		}
		c.peers = cfg.Peers
	}
	for i, t := range cfg.Tiers {
		if i == c.pt {
			c.policies = append(c.policies, c.pool.policy)
			c.capacity = append(c.capacity, c.pool.Capacity())
			continue
		}
		if t.Capacity <= 0 {
			return nil, fmt.Errorf("core: tier %q: capacity must be > 0", t.Name)
		}
		p, err := cfg.NewPolicy(i, t.Capacity)
		if err != nil {
			return nil, fmt.Errorf("tier %q: %w", t.Name, err)
		}
		c.policies = append(c.policies, p)
		c.capacity = append(c.capacity, t.Capacity)
	}
	c.maxBlocks, c.count = make([]int, nt), make([]int, nt)
	for i, t := range cfg.Tiers {
		if t.MaxBlocks < 0 || (t.MaxBlocks > 0 && (i == 0 || i == c.pt)) {
			return nil, fmt.Errorf("core: tier %q: a block limit (%d) needs a private lower tier", t.Name, t.MaxBlocks)
		}
		c.maxBlocks[i] = t.MaxBlocks
	}
	c.used = make([]int64, nt)
	c.holder, _ = c.policies[0].(policy.Holder)
	for t, p := range c.policies {
		if id, ok := p.(policy.Idler); ok && t != c.pt {
			if c.idlers == nil {
				c.idlers = make([]policy.Idler, nt)
			}
			c.idlers[t] = id
		}
	}
	for t := range nt {
		c.pinViews = append(c.pinViews, tierPins{c: c, tier: t})
	}
	s := &c.Stats
	for _, p := range []*[]int64{&s.Hits, &s.Evictions, &s.Demotions, &s.Drops, &s.Promotions, &s.AdmissionDenied, &s.Lost, &s.PeakUsed} {
		*p = make([]int64, nt)
	}
	return c, nil
}

// Pinned reports whether a running request uses b: such blocks stay put in
// every tier holding them.
func (c *Core) Pinned(b Block) bool { return c.pins[b] > 0 }

// BlockBytes is the size of block b (fixed when it was first seen).
func (c *Core) BlockBytes(b Block) int64 { return c.size[b] }

// Draining is the HBM bytes that evicted blocks still hold while their
// copies leave HBM (Config.HoldEvicted; else 0): neither resident nor free.
func (c *Core) Draining() int64 { return c.draining }

// Used returns the bytes resident in a tier.
func (c *Core) Used(tier int) int64 { return c.usedOf(tier) }

// usedOf is tier t's resident bytes: a pool's, for the pooled tier.
func (c *Core) usedOf(t int) int64 {
	if t == c.pt {
		return c.pool.used
	}
	return c.used[t]
}

// has reports whether tier t holds b: for the pool, whether any node
// holds it, published to this core or not.
func (c *Core) has(t int, b Block) bool {
	if t == c.pt {
		return c.pool.Has(b)
	}
	return c.where[b]&(1<<t) != 0
}

// Pool is the core's pooled tier, or nil.
func (c *Core) Pool() *Pool { return c.pool }

// Node is the core's node in its pool.
func (c *Core) Node() int { return c.node }

// Capacity returns a tier's capacity in bytes.
func (c *Core) Capacity(tier int) int64 { return c.capacity[tier] }

// Resident reports whether tier holds a copy of b.
func (c *Core) Resident(b Block, tier int) bool {
	return int(b) < len(c.where) && c.where[b]&(1<<tier) != 0
}

// Where is the set of tiers holding b (bit t: tier t).
func (c *Core) Where(b Block) uint8 {
	if int(b) >= len(c.where) {
		return 0
	}
	return c.where[b]
}

// Queued is the number of requests waiting for HBM.
func (c *Core) Queued() int { return len(c.queue) - c.qh }

// Running is the number of admitted, unfinished requests.
func (c *Core) Running() int { return c.nrun }

// QueuedTokens is the prompt tokens of the requests waiting for HBM.
func (c *Core) QueuedTokens() int64 { return c.queuedToks }

// RunningTokens estimates the tokens of the running requests' KV: their
// prompts and the output tokens whose KV they hold (whole pages, so it
// runs ahead of the tokens generated by less than a page each).
func (c *Core) RunningTokens() int64 { return c.runToks + c.outHeld/c.cfg.BytesPerToken }

// Tiers is the number of tiers.
func (c *Core) Tiers() int { return c.nt }

// Cached reports whether any tier holds a copy of b.
func (c *Core) Cached(b Block) bool { return int(b) < len(c.where) && c.where[b] != 0 }

// Request returns a live request's data (valid until it finishes).
func (c *Core) Request(id ReqID) *Request { return &c.reqs[id].Request }

func (c *Core) growBlocks(b Block) {
	if int(b) < len(c.size) {
		return
	}
	n := max(int(b)+1, 2*len(c.size), 1024)
	c.size = grown(c.size, n, 0)
	c.where = grown(c.where, n, 0)
	c.pins = grown(c.pins, n, 0)
	c.prefetchPins = grown(c.prefetchPins, n, 0)
	c.producer = grown(c.producer, n, -1)
	c.refs = grown(c.refs, n, 0)
	c.lowHits = grown(c.lowHits, n, 0)
	c.transient = grown(c.transient, n, false)
	c.arriving = grown(c.arriving, n, false)
	c.prefetchFor = grown(c.prefetchFor, n, -1)
	c.seen = grown(c.seen, n, 0)
	c.outbound = grown(c.outbound, n, 0)
	c.heldHBM = grown(c.heldHBM, n, false)
	c.shield = grown(c.shield, n, false)
	c.peerAt = grown(c.peerAt, n, -1)
}

// grown is s at length n, new slots set to fill, in one exact allocation:
// appending slot by slot would copy it many times over.
func grown[T comparable](s []T, n int, fill T) []T {
	t := make([]T, n)
	copy(t, s)
	var zero T
	if fill != zero {
		for i := len(s); i < n; i++ {
			t[i] = fill
		}
	}
	return t
}

// tokens is the number of prompt tokens in block i of r (the last block
// may be partial).
func (c *Core) tokens(r *Request, i int) int {
	bt := c.cfg.BlockTokens
	if rest := r.InputTokens - i*bt; rest < bt {
		return max(rest, 1)
	}
	return bt
}

// A pass is one walk over a request's blocks: seen[b] == p marks b as
// visited by walk p, so a block id repeated inside one request is handled
// once, without clearing anything between walks.
type pass uint32

func (c *Core) newPass() pass {
	c.lastPass++
	if c.lastPass == 0 { // wrapped: forget all marks
		clear(c.seen)
		c.lastPass = 1
	}
	return c.lastPass
}

// first reports whether pass p meets b for the first time, and marks it.
func (c *Core) first(p pass, b Block) bool {
	if c.seen[b] == p {
		return false
	}
	c.seen[b] = p
	return true
}

// distinct yields each distinct block of blocks once, in order of first
// appearance. It starts its pass when called.
func (c *Core) distinct(blocks []Block) iter.Seq[Block] {
	p := c.newPass()
	return func(yield func(Block) bool) {
		for _, b := range blocks {
			if c.first(p, b) && !yield(b) {
				return
			}
		}
	}
}

// outBytes is the HBM that the KV of tokens generated tokens takes: whole
// pages, as engines allocate it.
func (c *Core) outBytes(tokens int) int64 {
	pt := c.PageTokens()
	return int64((tokens+pt-1)/pt) * int64(pt) * c.cfg.BytesPerToken
}

// PageTokens is the unit in which generated tokens' KV is allocated
// (Config.PageTokens, or BlockTokens where that is 0).
func (c *Core) PageTokens() int {
	if c.cfg.PageTokens > 0 {
		return c.cfg.PageTokens
	}
	return c.cfg.BlockTokens
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// Add adds o's counters to s, element by element for per-tier ones (up to
// the shorter length); a peak adds up too (the sum of parts' peaks: an
// upper bound of the whole's). Every field is found by reflection, so a
// counter added to Stats cannot be left out of a cluster's totals; a field
// of another type panics (TestStatsAdd reaches every field).
func (s *Stats) Add(o *Stats) {
	sv, ov := reflect.ValueOf(s).Elem(), reflect.ValueOf(o).Elem()
	for i := range sv.NumField() {
		f, g := sv.Field(i), ov.Field(i)
		switch f.Kind() {
		case reflect.Int64:
			f.SetInt(f.Int() + g.Int())
		case reflect.Slice:
			a, b := f.Interface().([]int64), g.Interface().([]int64)
			for k := range min(len(a), len(b)) {
				a[k] += b[k]
			}
		default:
			panic("core: Stats.Add: field " + sv.Type().Field(i).Name + " of kind " + f.Kind().String())
		}
	}
}
