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
	PeakUsed         []int64 // bytes
}

type reqState struct {
	Request
	src       []int8 // per block: tier found in (-1 miss), decided at admission
	produced  []Block
	waiters   []ReqID
	deps      int32
	scratch   int64 // HBM bytes for the KV of generated tokens
	rec       Record
	hitBlocks []int64
}

// Core is the hierarchy state machine. Not safe for concurrent use: the body
// calls it from one goroutine.
type Core struct {
	cfg   Config
	mv    Mover
	obs   Observer
	pol   []policy.Policy
	nt    int
	cap   []int64
	used  []int64
	pinnd int64 // HBM bytes not evictable: pinned blocks + scratch

	// per block
	size     []int64
	where    []uint8 // bitmask of tiers holding a copy
	pins     []int32 // running requests using the block
	producer []ReqID // request computing or loading it into HBM, or -1
	mark     []uint32
	stamp    uint32

	reqs  []reqState
	free  []ReqID
	queue []ReqID // FIFO of requests waiting for HBM; head at qh
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
	c := &Core{cfg: cfg, mv: mv, obs: obs, nt: nt}
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
	s := &c.Stats
	s.Hits, s.Evictions, s.Demotions = make([]int64, nt), make([]int64, nt), make([]int64, nt)
	s.Drops, s.Promotions, s.PeakUsed = make([]int64, nt), make([]int64, nt), make([]int64, nt)
	return c, nil
}

// Pinned implements policy.Pinned: blocks used by a running request stay
// put in every tier that holds them.
func (c *Core) Pinned(b Block) bool { return c.pins[b] > 0 }

// Used returns the bytes resident in a tier.
func (c *Core) Used(tier int) int64 { return c.used[tier] }

// Resident reports whether tier holds a copy of b.
func (c *Core) Resident(b Block, tier int) bool {
	return int(b) < len(c.where) && c.where[b]&(1<<tier) != 0
}

// Queued is the number of requests waiting for HBM.
func (c *Core) Queued() int { return len(c.queue) - c.qh }

// Running is the number of admitted, unfinished requests.
func (c *Core) Running() int { return len(c.reqs) - len(c.free) - c.Queued() }

// Request returns a live request's data (valid until it finishes).
func (c *Core) Request(id ReqID) *Request { return &c.reqs[id].Request }

func (c *Core) growBlocks(b Block) {
	for int(b) >= len(c.size) {
		n := max(2*len(c.size), 1024)
		for len(c.size) < n {
			c.size = append(c.size, 0)
			c.where = append(c.where, 0)
			c.pins = append(c.pins, 0)
			c.producer = append(c.producer, -1)
			c.mark = append(c.mark, 0)
		}
	}
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
	r.produced, r.waiters, r.deps = r.produced[:0], r.waiters[:0], 0
	r.scratch = int64(in.OutputTokens) * c.cfg.BytesPerToken
	for i, b := range r.Blocks {
		c.growBlocks(b)
		if c.size[b] == 0 { // a block's size is fixed when first seen
			c.size[b] = int64(c.tokens(&r.Request, i)) * c.cfg.BytesPerToken
		}
	}
	if c.Queued() == 0 && c.tryAdmit(now, id) {
		return
	}
	if c.footprint(r) > c.cap[0] {
		c.reject(now, id)
		return
	}
	c.queue = append(c.queue, id)
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

	// Decide sources and pin every distinct block before evicting, so the
	// eviction cascade can take none of them from any tier.
	r.src = r.src[:0]
	prefix := true
	st = c.newStamp()
	for _, b := range r.Blocks {
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
		if w := c.where[b]; w != 0 {
			src = int8(bits.TrailingZeros8(w))
		}
		if src < 0 {
			prefix = false
		}
		if !prefix && src >= 0 {
			src = -4 - src // resident but past the usable prefix: recomputed
		}
		r.src = append(r.src, src)
		if c.pins[b] == 0 && c.where[b]&1 != 0 {
			c.pinnd += c.size[b]
		}
		c.pins[b]++
	}
	for c.cap[0]-c.used[0] < need {
		v, ok := c.pol[0].Evict(now, c)
		if !ok {
			panic("core: HBM accounting out of step with the policy")
		}
		c.evicted(now, 0, v)
	}

	// Apply.
	rec := &r.rec
	*rec = Record{Seq: r.Seq, Arrival: r.Arrival, Admitted: now, InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, Blocks: len(r.Blocks), HitBlocks: c.hitSlice(r)}
	cached := 0
	for i, b := range r.Blocks {
		tok := c.tokens(&r.Request, i)
		src := r.src[i]
		switch {
		case src == -2: // repeat inside the prefix: already counted, in HBM by now
			rec.HitBlocks[0]++
			rec.BlockHits++
			cached += tok
		case src == -3:
			rec.BlockHits++
			rec.RecomputedTokens += tok
		case src == 0:
			rec.HitBlocks[0]++
			rec.BlockHits++
			cached += tok
			c.pol[0].Access(b, now)
			if p := c.producer[b]; p >= 0 && p != id {
				c.addDep(id, p)
			}
		case src > 0:
			t := int(src)
			rec.HitBlocks[t]++
			rec.BlockHits++
			cached += tok
			c.pol[t].Access(b, now)
			c.insert(now, 0, b)
			c.pinnd += c.size[b]
			c.producer[b] = id
			r.produced = append(r.produced, b)
			c.Stats.Promotions[t]++
			c.mv.Move(now, id, b, c.size[b], t, 0)
		default: // -1 miss, or <= -4 resident past the prefix
			if src <= -4 {
				rec.BlockHits++
			}
			rec.RecomputedTokens += tok
			if c.where[b]&1 != 0 {
				c.pol[0].Access(b, now)
			} else {
				c.insert(now, 0, b)
				c.pinnd += c.size[b]
				c.producer[b] = id
				r.produced = append(r.produced, b)
			}
		}
	}
	c.used[0] += r.scratch
	c.pinnd += r.scratch
	c.peak(0)
	if r.deps == 0 {
		c.startPrefill(now, id)
	}
	return true
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
	cached := r.InputTokens - r.rec.RecomputedTokens
	c.mv.Prefill(now, id, cached, r.rec.RecomputedTokens)
}

// insert makes b resident in tier t; the caller has made room.
func (c *Core) insert(now int64, t int, b Block) {
	c.where[b] |= 1 << t
	c.used[t] += c.size[b]
	c.pol[t].Insert(b, c.size[b], now)
	c.peak(t)
}

func (c *Core) peak(t int) {
	if c.used[t] > c.Stats.PeakUsed[t] {
		c.Stats.PeakUsed[t] = c.used[t]
	}
	if c.used[t] > c.cap[t] {
		panic(fmt.Sprintf("core: tier %d over capacity: %d > %d", t, c.used[t], c.cap[t]))
	}
}

// makeRoom evicts from tier t until need bytes are free.
func (c *Core) makeRoom(now int64, t int, need int64) bool {
	if need > c.cap[t] {
		return false
	}
	for c.cap[t]-c.used[t] < need {
		v, ok := c.pol[t].Evict(now, c)
		if !ok {
			return false
		}
		c.evicted(now, t, v)
	}
	return true
}

// evicted handles a victim the policy of tier t gave up: demote it to the
// next tier down unless a copy is already there, else drop it.
func (c *Core) evicted(now int64, t int, b Block) {
	sz := c.size[b]
	c.where[b] &^= 1 << t
	c.used[t] -= sz
	c.Stats.Evictions[t]++
	n := t + 1
	if n < c.nt {
		if c.where[b]&(1<<n) != 0 {
			c.mv.Drop(now, b, t) // clean: the copy below is current
			return
		}
		if c.makeRoom(now, n, sz) {
			c.insert(now, n, b)
			c.Stats.Demotions[t]++
			c.mv.Move(now, Background, b, sz, t, n)
			c.mv.Drop(now, b, t)
			return
		}
	}
	c.Stats.Drops[t]++
	c.mv.Drop(now, b, t)
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
		if c.mark[b] == st {
			continue
		}
		c.mark[b] = st
		if c.pins[b]--; c.pins[b] == 0 && c.where[b]&1 != 0 {
			c.pinnd -= c.size[b]
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

func (c *Core) drainQueue(now int64) {
	for c.qh < len(c.queue) {
		id := c.queue[c.qh]
		if !c.tryAdmit(now, id) {
			return
		}
		c.qh++
	}
	c.queue, c.qh = c.queue[:0], 0
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// Check verifies internal accounting (tests and debug builds call it).
func (c *Core) Check() error {
	used := make([]int64, c.nt)
	for b, w := range c.where {
		for t := 0; t < c.nt; t++ {
			if w&(1<<t) != 0 {
				used[t] += c.size[b]
			}
		}
	}
	for _, id := range c.running() {
		used[0] += c.reqs[id].scratch
	}
	for t := range used {
		if used[t] != c.used[t] {
			return fmt.Errorf("tier %d: used %d, blocks add to %d", t, c.used[t], used[t])
		}
		if used[t] > c.cap[t] {
			return fmt.Errorf("tier %d: used %d over capacity %d", t, used[t], c.cap[t])
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
