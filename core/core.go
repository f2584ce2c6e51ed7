package core

import (
	"errors"
	"fmt"
	"math/bits"

	"kvsim/policy"
)

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
	PeakUsed         []int64 // bytes
}

type reqState struct {
	Request
	src        []int8 // per block: tier found in (-1 miss), decided at admission
	produced   []Block
	prefetched []Block
	waiters    []ReqID
	deps       int32
	pf         int32 // prefetches still in flight
	queuedAt   int64
	scratch    int64 // HBM bytes for the KV of generated tokens
	rec        Record
	hitBlocks  []int64
}

// Core is the hierarchy state machine. Not safe for concurrent use: the body
// calls it from one goroutine.
type Core struct {
	cfg   Config
	st    Strategy
	mv    Mover
	obs   Observer
	pol   []policy.Policy
	hold  policy.Holder // HBM's policy, if it sets blocks in use aside
	nt    int
	cap   []int64
	used  []int64
	pinnd int64 // HBM bytes not evictable: pinned blocks + scratch

	// per block
	size      []int64
	where     []uint8 // bitmask of tiers holding a copy
	pins      []int32 // running requests using the block
	pfpins    []int32 // queued requests prefetching it (holds lower-tier copies only)
	views     []tierPins
	producer  []ReqID // request computing or loading it into HBM, or -1
	refs      []int32 // requests that referenced it so far
	lowHits   []uint8 // hits served from a lower tier (saturating)
	transient []bool  // HBM copy to drop when unpinned (promotion policy)
	inflight  []bool  // tier-1 copy still arriving (prefetch)
	pfOwner   []ReqID // queued request waiting for that prefetch, or -1
	mark      []uint32
	stamp     uint32

	reqs  []reqState
	free  []ReqID
	queue []ReqID // requests waiting for HBM, in arrival order, from qh on
	qh    int

	Stats Stats
}

// New builds a core over cfg whose commands go to mv and whose finished
// requests go to obs (which may be nil).
func New(cfg Config, mv Mover, obs Observer) (*Core, error) {
	nt := len(cfg.Tiers)
	if nt == 0 || nt > MaxTiers {
		return nil, fmt.Errorf("core: need 1..%d tiers, got %d", MaxTiers, nt)
	}
	if cfg.BytesPerToken <= 0 || cfg.BlockTokens <= 0 {
		return nil, errors.New("core: bytes per token and block tokens must be > 0")
	}
	c := &Core{cfg: cfg, st: cfg.Strategy, mv: mv, obs: obs, nt: nt}
	for i, t := range cfg.Tiers {
		if t.Capacity <= 0 {
			return nil, fmt.Errorf("core: tier %q: capacity must be > 0", t.Name)
		}
		p, err := cfg.NewPolicy(i, t.Capacity)
		if err != nil {
			return nil, fmt.Errorf("tier %q: %w", t.Name, err)
		}
		c.pol = append(c.pol, p)
		c.cap = append(c.cap, t.Capacity)
	}
	c.used = make([]int64, nt)
	c.hold, _ = c.pol[0].(policy.Holder)
	for t := range nt {
		c.views = append(c.views, tierPins{c: c, tier: t})
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

// tierPins is what one tier's policy sees as pinned: blocks in use, and in
// lower tiers also the copies a queued request's prefetch holds (HBM is
// never held for a request that is not running, or queued requests could
// starve the running ones of HBM).
type tierPins struct {
	c    *Core
	tier int
}

func (p *tierPins) Pinned(b Block) bool {
	return p.c.pins[b] > 0 || (p.tier > 0 && p.c.pfpins[b] > 0)
}

// BlockBytes is the size of block b (fixed when it was first seen).
func (c *Core) BlockBytes(b Block) int64 { return c.size[b] }

// Used returns the bytes resident in a tier.
func (c *Core) Used(tier int) int64 { return c.used[tier] }

// Capacity returns a tier's capacity in bytes.
func (c *Core) Capacity(tier int) int64 { return c.cap[tier] }

// Resident reports whether tier holds a copy of b.
func (c *Core) Resident(b Block, tier int) bool {
	return int(b) < len(c.where) && c.where[b]&(1<<tier) != 0
}

// Preload makes tier t (not HBM) hold b, of the given size, before the
// first request arrives: a warm start from storage that kept its blocks.
// The tier's policy sees b inserted at time 0, in call order. It returns
// false, changing nothing, once a request has arrived, for tier 0, when b
// is already there, when bytes is not positive or contradicts b's size as
// already known, or when b does not fit in what is left of the tier.
func (c *Core) Preload(t int, b Block, bytes int64) bool {
	if len(c.reqs) > 0 || t <= 0 || t >= c.nt || b < 0 || bytes <= 0 {
		return false
	}
	c.growBlocks(b)
	if c.where[b]&(1<<t) != 0 || (c.size[b] != 0 && c.size[b] != bytes) || c.used[t]+bytes > c.cap[t] {
		return false
	}
	c.size[b] = bytes
	c.insert(0, t, b)
	return true
}

// Queued is the number of requests waiting for HBM.
func (c *Core) Queued() int { return len(c.queue) - c.qh }

// Running is the number of admitted, unfinished requests.
func (c *Core) Running() int { return len(c.reqs) - len(c.free) - c.Queued() }

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
	c.pfpins = grown(c.pfpins, n, 0)
	c.producer = grown(c.producer, n, -1)
	c.refs = grown(c.refs, n, 0)
	c.lowHits = grown(c.lowHits, n, 0)
	c.transient = grown(c.transient, n, false)
	c.inflight = grown(c.inflight, n, false)
	c.pfOwner = grown(c.pfOwner, n, -1)
	c.mark = grown(c.mark, n, 0)
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

func (c *Core) tokens(r *Request, i int) int {
	bt := c.cfg.BlockTokens
	if rest := r.InputTokens - i*bt; rest < bt {
		return max(rest, 1)
	}
	return bt
}

func (c *Core) newStamp() uint32 {
	c.stamp++
	if c.stamp == 0 { // wrapped: forget all marks
		clear(c.mark)
		c.stamp = 1
	}
	return c.stamp
}

// pin and unpin keep pinnd equal to the bytes of pinned HBM-resident blocks
// plus the scratch of running requests.
func (c *Core) pin(b Block) {
	if c.pins[b] == 0 && c.where[b]&1 != 0 {
		c.pinnd += c.size[b]
		if c.hold != nil {
			c.hold.Acquire(b)
		}
	}
	c.pins[b]++
}

func (c *Core) unpin(now int64, b Block) {
	if c.pins[b]--; c.pins[b] > 0 {
		return
	}
	if c.where[b]&1 == 0 {
		return
	}
	c.pinnd -= c.size[b]
	if c.transient[b] { // served from HBM, not kept there
		c.transient[b] = false
		c.pol[0].Remove(b)
		c.remove(0, b)
		c.mv.Drop(now, b, 0)
		return
	}
	if c.hold != nil {
		c.hold.Release(b, now)
	}
}

// insert makes b resident in tier t; the caller has made room.
func (c *Core) insert(now int64, t int, b Block) {
	c.where[b] |= 1 << t
	c.used[t] += c.size[b]
	c.pol[t].Insert(b, c.size[b], now)
	if t == 0 && c.pins[b] > 0 {
		c.pinnd += c.size[b]
		if c.hold != nil {
			c.hold.Acquire(b)
		}
	}
	c.peak(t)
}

// remove forgets b's copy in tier t (the policy already let go of it).
func (c *Core) remove(t int, b Block) {
	c.where[b] &^= 1 << t
	c.used[t] -= c.size[b]
}

func (c *Core) peak(t int) {
	if c.used[t] > c.Stats.PeakUsed[t] {
		c.Stats.PeakUsed[t] = c.used[t]
	}
	if c.used[t] > c.cap[t] {
		panic(fmt.Sprintf("core: tier %d over capacity: %d > %d", t, c.used[t], c.cap[t]))
	}
}

// Arrive hands the core a new request at time now.
func (c *Core) Arrive(now int64, in *Request) {
	var id ReqID
	if n := len(c.free); n > 0 {
		id = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		c.reqs = append(c.reqs, reqState{})
		id = ReqID(len(c.reqs) - 1)
	}
	r := &c.reqs[id]
	blocks := append(r.Blocks[:0], in.Blocks...)
	r.Request = *in
	r.Blocks = blocks
	r.produced, r.prefetched, r.waiters, r.deps, r.pf = r.produced[:0], r.prefetched[:0], r.waiters[:0], 0, 0
	r.scratch = int64(in.OutputTokens) * c.cfg.BytesPerToken
	st := c.newStamp()
	for i, b := range r.Blocks {
		c.growBlocks(b)
		if c.size[b] == 0 { // a block's size is fixed when first seen
			c.size[b] = int64(c.tokens(&r.Request, i)) * c.cfg.BytesPerToken
		}
		if c.mark[b] != st {
			c.mark[b] = st
			c.refs[b]++
		}
	}
	if c.Queued() == 0 && c.tryAdmit(now, id) {
		return
	}
	if c.footprint(r) > c.cap[0] {
		c.reject(now, id)
		return
	}
	r.queuedAt = now
	c.queue = append(c.queue, id)
	c.prefetch(now, id)
	if c.Queued() > 1 {
		c.drainQueue(now) // requests ahead may be waiting on prefetches
	}
}

// footprint is the HBM a request needs with nothing else resident.
func (c *Core) footprint(r *reqState) int64 {
	st := c.newStamp()
	n := r.scratch
	for _, b := range r.Blocks {
		if c.mark[b] != st {
			c.mark[b] = st
			n += c.size[b]
		}
	}
	return n
}

func (c *Core) reject(now int64, id ReqID) {
	r := &c.reqs[id]
	c.Stats.Rejected++
	r.rec = Record{Seq: r.Seq, Arrival: r.Arrival, Admitted: now, PrefillStart: now, FirstToken: now, Done: now,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Blocks: len(r.Blocks), Rejected: true,
		HitBlocks: c.hitSlice(r)}
	if c.obs != nil {
		c.obs(&r.rec)
	}
	c.free = append(c.free, id)
}

func (c *Core) hitSlice(r *reqState) []int64 {
	if len(r.hitBlocks) != c.nt {
		r.hitBlocks = make([]int64, c.nt)
	}
	clear(r.hitBlocks)
	return r.hitBlocks
}

// visible is the residency admission may use: a tier-1 copy still being
// prefetched does not count until it lands.
func (c *Core) visible(b Block) uint8 {
	w := c.where[b]
	if c.inflight[b] {
		w &^= 2
	}
	return w
}

// keepPromoted says whether a lower-tier hit stays cached in HBM.
func (c *Core) keepPromoted(b Block) bool {
	switch c.st.Promotion {
	case PromoteNever:
		return false
	case PromoteSecondHit:
		return c.lowHits[b] >= 2
	}
	return true
}

// tryAdmit admits request id if HBM can hold it now, evicting as needed.
func (c *Core) tryAdmit(now int64, id ReqID) bool {
	r := &c.reqs[id]
	// Plan: bytes to bring into HBM, and HBM bytes this request will pin.
	st := c.newStamp()
	need := r.scratch
	var pinNow int64
	for _, b := range r.Blocks {
		if c.mark[b] == st {
			continue
		}
		c.mark[b] = st
		if c.where[b]&1 != 0 {
			if c.pins[b] == 0 {
				pinNow += c.size[b]
			}
		} else {
			need += c.size[b]
		}
	}
	if c.cap[0]-c.pinnd-pinNow < need {
		return false
	}

	cut := len(r.Blocks)
	if c.st.RecomputeWhenCheaper && c.cfg.Cost != nil {
		cut = c.cheapestCut(now, r)
	}

	// Decide sources and pin every distinct block before evicting, so the
	// eviction cascade can take none of them from any tier.
	r.src = r.src[:0]
	prefix := true
	st = c.newStamp()
	for i, b := range r.Blocks {
		if i == cut && prefix {
			prefix = false
			c.Stats.RecomputeCuts++
		}
		if c.mark[b] == st { // repeated id inside one request
			if prefix {
				r.src = append(r.src, -2)
			} else {
				r.src = append(r.src, -3)
			}
			continue
		}
		c.mark[b] = st
		src := int8(-1)
		if w := c.visible(b); w != 0 {
			src = int8(bits.TrailingZeros8(w))
		}
		if src < 0 {
			prefix = false
		}
		if !prefix && src >= 0 {
			src = -4 - src // resident but past the usable prefix: recomputed
		}
		r.src = append(r.src, src)
		c.pin(b)
	}
	// The request's own pins now hold its prefetched blocks.
	for _, b := range r.prefetched {
		if c.pfOwner[b] == id {
			c.pfOwner[b] = -1
			if c.inflight[b] {
				c.Stats.PrefetchLate++
			}
		}
		c.pfpins[b]--
	}
	r.prefetched, r.pf = r.prefetched[:0], 0
	for c.cap[0]-c.used[0] < need {
		v, ok := c.pol[0].Evict(now, &c.views[0])
		if !ok {
			panic("core: HBM accounting out of step with the policy")
		}
		c.evicted(now, 0, v)
	}

	// Apply.
	rec := &r.rec
	*rec = Record{Seq: r.Seq, Arrival: r.Arrival, Admitted: now, InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, Blocks: len(r.Blocks), HitBlocks: c.hitSlice(r)}
	for i, b := range r.Blocks {
		tok := c.tokens(&r.Request, i)
		src := r.src[i]
		switch {
		case src == -2: // repeat inside the prefix: in HBM by now
			rec.HitBlocks[0]++
			rec.BlockHits++
		case src == -3:
			rec.BlockHits++
			rec.RecomputedTokens += tok
		case src == 0:
			rec.HitBlocks[0]++
			rec.BlockHits++
			c.pol[0].Access(b, now)
			if p := c.producer[b]; p >= 0 && p != id {
				c.addDep(id, p)
			}
			if c.transient[b] && c.keepPromoted(b) {
				c.transient[b] = false
			}
		case src > 0:
			t := int(src)
			if c.lowHits[b] < 255 {
				c.lowHits[b]++
			}
			rec.HitBlocks[t]++
			rec.BlockHits++
			c.pol[t].Access(b, now)
			c.insert(now, 0, b)
			c.producer[b] = id
			r.produced = append(r.produced, b)
			c.Stats.Promotions[t]++
			if !c.keepPromoted(b) {
				c.transient[b] = true
				c.Stats.TransientLoads++
			}
			c.mv.Move(now, id, b, c.size[b], t, 0, Load)
		default: // -1 miss, or <= -4 resident past the prefix
			if src <= -4 {
				rec.BlockHits++
			}
			rec.RecomputedTokens += tok
			if c.where[b]&1 != 0 {
				c.pol[0].Access(b, now)
			} else {
				c.insert(now, 0, b)
				c.producer[b] = id
				r.produced = append(r.produced, b)
			}
		}
	}
	// The engine computes at least the last prompt token, whose logits give
	// the first output token: a fully cached prompt still runs one (vLLM v1
	// caps a prefix hit at prompt length - 1 for this reason).
	rec.RecomputedTokens = max(rec.RecomputedTokens, 1)
	c.used[0] += r.scratch
	c.pinnd += r.scratch
	c.peak(0)
	if r.deps == 0 {
		c.startPrefill(now, id)
	}
	return true
}

// cheapestCut returns how many leading blocks of r to take from the cache
// so that loading them and computing the rest finishes first, by the cost
// model's estimate (overlapped: the longer of the two; serial: their sum).
// Loads from different tiers run on different links, in parallel.
func (c *Core) cheapestCut(now int64, r *reqState) int {
	cm := c.cfg.Cost
	var backlog, busy [MaxTiers]int64
	var seen [MaxTiers]bool
	st := c.newStamp()
	best, bestK := int64(-1), 0
	cached := 0
	for k := 0; ; k++ {
		var load int64
		for t := 1; t < c.nt; t++ {
			if seen[t] {
				load = max(load, AddTime(backlog[t], busy[t]))
			}
		}
		n := max(r.InputTokens-cached, 1) // at least the last token
		cost := cm.EstimateCompute(max(r.InputTokens-n, 0), n)
		if cm.Overlapped() {
			cost = max(cost, load)
		} else {
			cost = AddTime(cost, load) // estimates saturate past MaxTime
		}
		if best < 0 || cost <= best { // ties keep more of the cache
			best, bestK = cost, k
		}
		if k == len(r.Blocks) {
			break
		}
		b := r.Blocks[k]
		if c.mark[b] != st {
			c.mark[b] = st
			w := c.visible(b)
			if w == 0 {
				if bestK == k {
					return len(r.Blocks) // the prefix ends here anyway: no cut
				}
				break
			}
			if t := bits.TrailingZeros8(w); t > 0 {
				bl, sv := cm.EstimateLoad(now, t, c.size[b])
				if !seen[t] {
					seen[t], backlog[t] = true, bl
				}
				busy[t] = AddTime(busy[t], sv)
			}
		}
		cached += c.tokens(&r.Request, k)
	}
	return bestK
}

func (c *Core) addDep(id, on ReqID) {
	p := &c.reqs[on]
	for _, w := range p.waiters {
		if w == id {
			return
		}
	}
	p.waiters = append(p.waiters, id)
	c.reqs[id].deps++
}

func (c *Core) startPrefill(now int64, id ReqID) {
	r := &c.reqs[id]
	r.rec.PrefillStart = now
	cached := max(r.InputTokens-r.rec.RecomputedTokens, 0) // an empty prompt still computes one token
	c.mv.Prefill(now, id, cached, r.rec.RecomputedTokens)
}

// makeRoom evicts from tier t until need bytes are free.
func (c *Core) makeRoom(now int64, t int, need int64) bool {
	if need > c.cap[t] {
		return false
	}
	for c.cap[t]-c.used[t] < need {
		v, ok := c.pol[t].Evict(now, &c.views[t])
		if !ok {
			return false
		}
		c.evicted(now, t, v)
	}
	return true
}

// admits applies the admission policy to a block entering lower tier t.
func (c *Core) admits(t int, b Block) bool {
	if c.st.AdmitAfter > 1 && int(c.refs[b]) < c.st.AdmitAfter {
		c.Stats.AdmissionDenied[t]++
		return false
	}
	return true
}

// evicted handles a victim the policy of tier t gave up: demote it to the
// next tier down unless a copy is already there, else drop it.
func (c *Core) evicted(now int64, t int, b Block) {
	c.remove(t, b)
	c.Stats.Evictions[t]++
	n := t + 1
	if n < c.nt {
		if c.where[b]&(1<<n) != 0 {
			c.mv.Drop(now, b, t) // clean: the copy below is current
			return
		}
		if c.admits(n, b) && c.makeRoom(now, n, c.size[b]) {
			c.insert(now, n, b)
			c.Stats.Demotions[t]++
			c.mv.Move(now, Background, b, c.size[b], t, n, Demote)
			c.mv.Drop(now, b, t)
			return
		}
	}
	c.Stats.Drops[t]++
	c.mv.Drop(now, b, t)
}

// prefetch starts copying the storage-tier part of a queued request's
// usable prefix into tier 1, so that admission later loads it from there.
func (c *Core) prefetch(now int64, id ReqID) {
	if c.st.Prefetch == PrefetchOff || c.nt < 3 {
		return
	}
	r := &c.reqs[id]
	st := c.newStamp()
	for _, b := range r.Blocks {
		if c.mark[b] == st {
			continue
		}
		c.mark[b] = st
		w := c.where[b]
		if w == 0 {
			break // the usable prefix ends here
		}
		if w&3 != 0 {
			continue // already in HBM or tier 1
		}
		src := bits.TrailingZeros8(w)
		c.pfpins[b]++ // so making room in tier 1 cannot evict the source
		if !c.admits(1, b) || !c.makeRoom(now, 1, c.size[b]) {
			c.pfpins[b]--
			break
		}
		c.insert(now, 1, b)
		c.inflight[b], c.pfOwner[b] = true, id
		r.prefetched = append(r.prefetched, b)
		r.pf++
		c.Stats.Prefetches++
		c.mv.Move(now, id, b, c.size[b], src, 1, PrefetchMove)
	}
	if r.pf > 0 && c.st.Prefetch == PrefetchTimeout {
		c.mv.Wake(now+c.st.PrefetchTimeout, id)
	}
}

// MoveDone reports that a PrefetchMove of b for req has landed.
func (c *Core) MoveDone(now int64, req ReqID, b Block) {
	c.inflight[b] = false
	if c.pfOwner[b] != req {
		return // its request was admitted before it landed
	}
	c.pfOwner[b] = -1
	if r := &c.reqs[req]; r.pf > 0 {
		if r.pf--; r.pf == 0 {
			c.drainQueue(now)
		}
	}
}

// Lost reports that a body could not keep tier's copy of b (a write failed
// with ENOSPC or EIO, a read found it corrupt, the store evicted it). The
// core forgets that copy, so it is never served; HBM copies cannot be lost.
func (c *Core) Lost(now int64, b Block, tier int) {
	if tier <= 0 || int(b) >= len(c.where) || c.where[b]&(1<<tier) == 0 {
		return
	}
	c.pol[tier].Remove(b)
	c.remove(tier, b)
	c.inflight[b] = c.inflight[b] && tier != 1
	c.Stats.Lost[tier]++
}

// Wake is the body's answer to Mover.Wake.
func (c *Core) Wake(now int64, _ ReqID) { c.drainQueue(now) }

// ready says whether a queued request may be admitted as far as its
// prefetch is concerned.
func (c *Core) ready(now int64, r *reqState) bool {
	if r.pf == 0 {
		return true
	}
	switch c.st.Prefetch {
	case PrefetchWaitComplete:
		return false
	case PrefetchTimeout:
		return now >= r.queuedAt+c.st.PrefetchTimeout
	}
	return true
}

// PrefillDone reports that request id's prefill finished: its first token
// is out and the blocks it produced are usable by others.
func (c *Core) PrefillDone(now int64, id ReqID, t Timing) {
	r := &c.reqs[id]
	r.rec.FirstToken = now
	r.rec.LoadNs, r.rec.ComputeNs = t.LoadNs, t.ComputeNs
	for _, b := range r.produced {
		if c.producer[b] == id {
			c.producer[b] = -1
		}
		if c.st.WriteThrough && c.nt > 1 && c.where[b] == 1 && c.admits(1, b) && c.makeRoom(now, 1, c.size[b]) {
			c.insert(now, 1, b)
			c.Stats.WriteThroughs++
			c.mv.Move(now, Background, b, c.size[b], 0, 1, WriteThrough)
		}
	}
	for _, w := range r.waiters {
		wr := &c.reqs[w]
		if wr.deps--; wr.deps == 0 {
			c.Stats.DepWaits++
			c.startPrefill(now, w)
		}
	}
	r.waiters = r.waiters[:0]
	c.mv.Decode(now, id, r.OutputTokens)
}

// DecodeDone reports that request id finished generating: its blocks stay
// cached but become evictable, and queued requests may now fit.
func (c *Core) DecodeDone(now int64, id ReqID) {
	r := &c.reqs[id]
	st := c.newStamp()
	for _, b := range r.Blocks {
		if c.mark[b] != st {
			c.mark[b] = st
			c.unpin(now, b)
		}
	}
	c.used[0] -= r.scratch
	c.pinnd -= r.scratch
	rec := &r.rec
	rec.Done = now
	s := &c.Stats
	s.Requests++
	s.BlockAccesses += int64(len(r.Blocks))
	for t, h := range rec.HitBlocks {
		s.Hits[t] += h
	}
	s.Misses += int64(len(r.Blocks)) - sum(rec.HitBlocks)
	s.BlockHits += int64(rec.BlockHits)
	s.RecomputedTokens += int64(rec.RecomputedTokens)
	if c.obs != nil {
		c.obs(rec)
	}
	c.free = append(c.free, id)
	c.drainQueue(now)
}

// drainQueue admits queued requests in arrival order. A request still
// waiting for its prefetch is passed over; the first ready one that does
// not fit stops the scan (first come, first served for HBM).
func (c *Core) drainQueue(now int64) {
	// Admit from the front: the common case, and O(admitted) so a long
	// queue costs nothing per completion.
	for c.qh < len(c.queue) && c.ready(now, &c.reqs[c.queue[c.qh]]) && c.tryAdmit(now, c.queue[c.qh]) {
		c.qh++
	}
	switch {
	case c.qh == len(c.queue): // empty: reuse the whole array
		c.queue, c.qh = c.queue[:0], 0
		return
	case c.qh > len(c.queue)/2: // mostly consumed: slide down, O(1) amortized
		c.queue = c.queue[:copy(c.queue, c.queue[c.qh:])]
		c.qh = 0
	}
	q := c.queue[c.qh:]
	if c.ready(now, &c.reqs[q[0]]) {
		return // the head is ready and does not fit
	}
	// The head waits for its prefetch: requests behind it may go.
	k := 1
	for j := 1; j < len(q); j++ {
		id := q[j]
		if c.ready(now, &c.reqs[id]) {
			if c.tryAdmit(now, id) {
				continue
			}
			k += copy(q[k:], q[j:])
			break
		}
		q[k] = id
		k++
	}
	c.queue = c.queue[:c.qh+k]
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// Check verifies internal accounting (tests call it between events).
func (c *Core) Check() error {
	used := make([]int64, c.nt)
	var pinnd int64
	for b, w := range c.where {
		for t := 0; t < c.nt; t++ {
			if w&(1<<t) != 0 {
				used[t] += c.size[b]
			}
		}
		if w&1 != 0 && c.pins[b] > 0 {
			pinnd += c.size[b]
		}
	}
	for _, id := range c.running() {
		used[0] += c.reqs[id].scratch
		pinnd += c.reqs[id].scratch
	}
	if pinnd != c.pinnd {
		return fmt.Errorf("pinned HBM bytes %d, blocks add to %d", c.pinnd, pinnd)
	}
	for t := range used {
		if used[t] != c.used[t] {
			return fmt.Errorf("tier %d: used %d, blocks add to %d", t, c.used[t], used[t])
		}
		if used[t] > c.cap[t] {
			return fmt.Errorf("tier %d: used %d over capacity %d", t, used[t], c.cap[t])
		}
	}
	for t, p := range c.pol {
		n := 0
		for _, w := range c.where {
			if w&(1<<t) != 0 {
				n++
			}
		}
		if p.Len() != n {
			return fmt.Errorf("tier %d: policy holds %d blocks, tier %d", t, p.Len(), n)
		}
	}
	return nil
}

func (c *Core) running() []ReqID {
	idle := make(map[ReqID]bool)
	for _, id := range c.free {
		idle[id] = true
	}
	for _, id := range c.queue[c.qh:] {
		idle[id] = true
	}
	var out []ReqID
	for id := range c.reqs {
		if !idle[ReqID(id)] {
			out = append(out, ReqID(id))
		}
	}
	return out
}
