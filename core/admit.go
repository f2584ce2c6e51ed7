package core

import "math/bits"

// blockSource is where admission takes one block of a request from: a tier
// holding it (a hit in the usable prefix), or one of the kinds below.
type blockSource int8

const (
	srcCompute       blockSource = -1 - iota // in no tier, or after such a block: computed
	srcRepeatHit                             // an earlier block of the usable prefix again: in HBM by then
	srcRepeatCompute                         // an earlier block past the usable prefix again: computed
	srcUnusedCopy                            // resident, but past the usable prefix: computed
	srcRemote                                // in no tier here: from the HBM of the node that prefilled it (RemoteKV)
	srcPeer                                  // in no tier here: from another node's host tier (peerAt)
)

// srcTier is a hit on tier t's copy.
func srcTier(t int) blockSource { return blockSource(t) }

// tier is the tier a hit comes from; ok is false for the kinds above.
func (s blockSource) tier() (t int, ok bool) { return int(s), s >= 0 }

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
	r.produced, r.prefetched, r.waiters, r.waitingOn, r.prefetching = r.produced[:0], r.prefetched[:0], r.waiters[:0], 0, 0
	r.scratch, r.held, r.decoding, r.prefilled, r.resumed, r.growWait = 0, 0, false, false, false, false
	p := c.newPass()
	for i, b := range r.Blocks {
		c.growBlocks(b)
		if c.size[b] == 0 { // a block's size is fixed when first seen
			c.size[b] = int64(c.tokens(&r.Request, i)) * c.cfg.BytesPerToken
		}
		if c.first(p, b) {
			c.refs[b]++
		}
		for _, id := range c.idlers { // its session is back, if it was idle
			if id != nil {
				id.Busy(b)
			}
		}
	}
	// A request that could never finish (its prompt and whole output do not
	// fit an empty HBM) is rejected, though its prompt alone might fit.
	if c.footprint(r) > c.capacity[0] {
		c.reject(now, id)
		return
	}
	c.queuedToks += int64(r.InputTokens) // tryAdmit takes it off
	if c.Queued() == 0 && c.tryAdmit(now, id) {
		return
	}
	r.queuedAt = now
	c.queue = append(c.queue, id)
	c.prefetch(now, id)
	if c.Queued() > 1 {
		c.drainQueue(now) // requests ahead may be waiting on prefetches
	}
}

// footprint is the HBM a request needs with nothing else resident: its
// prompt and the KV of its whole output, which it holds by its last token.
func (c *Core) footprint(r *reqState) int64 {
	n := c.outBytes(r.OutputTokens)
	for b := range c.distinct(r.Blocks) {
		n += c.size[b]
	}
	return n
}

func (c *Core) reject(now int64, id ReqID) {
	r := &c.reqs[id]
	c.Stats.Rejected++
	r.rec = Record{Seq: r.Seq, Arrival: r.Arrival, Admitted: now, PrefillStart: now, FirstToken: now, Done: now,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Blocks: len(r.Blocks), Rejected: true,
		HitBlocks: c.hitSlice(r)}
	if c.observer != nil {
		c.observer(&r.rec)
	}
	c.free = append(c.free, id)
}

// hitSlice is r's per-tier hit counts, zeroed, in r's own array.
func (c *Core) hitSlice(r *reqState) []int64 {
	if len(r.hitBlocks) != c.nt {
		r.hitBlocks = make([]int64, c.nt)
	}
	clear(r.hitBlocks)
	return r.hitBlocks
}

// keepPromoted says whether a lower-tier hit stays cached in HBM.
func (c *Core) keepPromoted(b Block) bool {
	switch c.strategy.Promotion {
	case PromoteNever:
		return false
	case PromoteSecondHit:
		return c.lowHits[b] >= 2
	}
	return true
}

// tryAdmit admits request id if HBM can hold it now, evicting as needed,
// and MaxRunning allows one more. HBM is reserved for the prompt only (and,
// for a preempted request, the output KV it had): generated tokens' KV
// comes block by block through Grow.
func (c *Core) tryAdmit(now int64, id ReqID) bool {
	if c.cfg.MaxRunning > 0 && c.nrun >= c.cfg.MaxRunning {
		return false
	}
	if c.growWaits > 0 { // running requests first: Grow retries the queue
		c.heldBack = true
		return false
	}
	r := &c.reqs[id]
	need, fits := c.hbmNeed(r)
	if !fits {
		return false
	}
	c.setSeq(r.Seq) // before any eviction: request-ordered policies choose for r
	if c.cfg.HoldEvicted && c.freeNow() < need && !c.roomNow(now, r, need) {
		c.Stats.DrainWaits++
		return false // it fits once the draining HBM is free: Drained retries
	}
	cut := len(r.Blocks)
	if c.strategy.RecomputeWhenCheaper && c.cfg.Cost != nil && r.RemoteKV == 0 {
		cut = c.cheapestCut(now, r)
	}
	c.chooseSources(r, cut) // pins first: eviction below cannot take r's blocks
	c.endPrefetch(id, r)    // r's pins now hold what was prefetched for it
	c.freeHBM(now, need)
	c.takeBlocks(now, id, r)
	// A resumed request gets back the output KV it held (recomputed).
	r.scratch, r.held = r.held, 0
	c.queuedToks -= int64(r.InputTokens)
	c.runToks += int64(r.InputTokens)
	c.outHeld += r.scratch
	c.used[0] += r.scratch
	c.pinnedHBM += r.scratch
	c.peak(0)
	c.nrun++
	c.admissions++
	r.admitted = c.admissions
	if r.waitingOn == 0 {
		c.startPrefill(now, id)
	}
	return true
}

// hbmNeed is the HBM bytes admitting r brings in (its blocks not there, and
// the output KV a resumed request gets back), and whether they fit beside
// the pinned bytes once r pins its blocks already there.
func (c *Core) hbmNeed(r *reqState) (need int64, fits bool) {
	need = r.held
	var pinNow int64
	for b := range c.distinct(r.Blocks) {
		if c.where[b]&1 != 0 {
			if c.pins[b] == 0 {
				pinNow += c.size[b]
			}
		} else {
			need += c.size[b]
		}
	}
	return need, c.capacity[0]-c.pinnedHBM-pinNow >= need
}

// chooseSources decides where each block of r comes from: the usable prefix
// (blocks before cut, up to the first in no tier) is taken from the highest
// tier holding it, the rest is computed. It pins every distinct block
// before anything is evicted, so the eviction cascade can take none of
// them from any tier.
func (c *Core) chooseSources(r *reqState, cut int) {
	r.sources = r.sources[:0]
	prefix := true
	p := c.newPass()
	for i, b := range r.Blocks {
		if i == cut && prefix {
			prefix = false
			if !r.resumed { // a request counts once
				c.Stats.RecomputeCuts++
			}
		}
		if !c.first(p, b) { // repeated id inside one request
			if prefix {
				r.sources = append(r.sources, srcRepeatHit)
			} else {
				r.sources = append(r.sources, srcRepeatCompute)
			}
			continue
		}
		src := srcCompute
		if w := c.visible(b); w == 0 && r.RemoteKV > 0 {
			src = srcRemote // the prefill node has every block: the prefix goes on
		} else if w == 0 && prefix && c.peerHolder(b) >= 0 {
			src = srcPeer // peerHolder set peerAt[b]
		} else if w == 0 {
			prefix = false
		} else if prefix {
			src = srcTier(bits.TrailingZeros8(w))
		} else {
			src = srcUnusedCopy
		}
		r.sources = append(r.sources, src)
		c.pin(b)
	}
}

// roomNow evicts from HBM, sparing r's blocks, until need bytes are free or
// draining (evicting more would not bring the draining bytes back sooner),
// and says whether need bytes are free now. hbmNeed said they can be.
func (c *Core) roomNow(now int64, r *reqState, need int64) bool {
	for b := range c.distinct(r.Blocks) {
		c.shield[b] = true
	}
	c.freeHBM(now, need)
	for b := range c.distinct(r.Blocks) {
		c.shield[b] = false
	}
	return c.freeNow() >= need
}

// freeHBM evicts from HBM until need bytes are free, or with HoldEvicted
// free or draining; hbmNeed said they can be.
func (c *Core) freeHBM(now int64, need int64) {
	for c.capacity[0]-c.used[0] < need {
		v, ok := c.policies[0].Evict(now, &c.pinViews[0])
		if !ok {
			panic("core: HBM accounting out of step with the policy")
		}
		c.evicted(now, 0, v)
		c.takeBatch(now, 0)
	}
}

// takeBlocks carries out r's sources, in block order, and starts r's
// record: hits count in their tier's policy, lower-tier hits are loaded
// into HBM, the rest is computed there. A resumed request's record keeps
// its first admission's figures; its blocks are taken the same way.
func (c *Core) takeBlocks(now int64, id ReqID, r *reqState) {
	rec := &r.rec
	var scratch Record // a resumed request counts into this, then drops it
	if r.resumed {
		scratch.HitBlocks = make([]int64, c.nt) // rare: preemptions only
		rec = &scratch
	} else {
		*rec = Record{Seq: r.Seq, Arrival: r.Arrival, Admitted: now, InputTokens: r.InputTokens,
			OutputTokens: r.OutputTokens, Blocks: len(r.Blocks), HitBlocks: c.hitSlice(r)}
	}
	for i, b := range r.Blocks {
		src := r.sources[i]
		if t, hit := src.tier(); hit {
			rec.HitBlocks[t]++
			rec.BlockHits++
			if t == c.pt && c.pool.Home(b) != c.node {
				rec.PoolRemote++
			}
			if t == 0 {
				c.hitHBM(now, id, b)
			} else {
				c.load(now, id, r, b, t)
			}
			continue
		}
		switch src {
		case srcRepeatHit: // in HBM by now
			rec.HitBlocks[0]++
			rec.BlockHits++
		case srcRepeatCompute:
			rec.BlockHits++
			rec.RecomputedTokens += c.tokens(&r.Request, i)
		case srcUnusedCopy:
			rec.BlockHits++
			rec.RecomputedTokens += c.tokens(&r.Request, i)
			c.compute(now, id, r, b)
		case srcCompute:
			rec.RecomputedTokens += c.tokens(&r.Request, i)
			c.compute(now, id, r, b)
		case srcRemote:
			rec.Transferred++
			c.insert(now, 0, b)
			c.producer[b] = id
			r.produced = append(r.produced, b)
			c.mover.Move(now, id, b, c.size[b], Remote, 0, Load)
		case srcPeer: // the peer's copy stays; this node's HBM gets one
			rec.Peer++
			c.insert(now, 0, b)
			c.producer[b] = id
			r.produced = append(r.produced, b)
			if t := c.peers.tier; c.peers.Stage && c.admits(t, b) && c.makeRoom(now, t, c.size[b]) {
				c.insert(now, t, b)
				c.Stats.PeerStaged++
				c.mover.Move(now, id, b, c.size[b], Remote, t, Load)
				c.mover.Move(now, id, b, c.size[b], t, 0, Load)
				break
			}
			c.mover.Move(now, id, b, c.size[b], Remote, 0, Load)
		}
	}
	// A prompt the trace names no blocks for (a trace without hash ids)
	// shares nothing: all of it is computed.
	if len(r.Blocks) == 0 {
		rec.RecomputedTokens = r.InputTokens
	}
	// The engine computes at least the last prompt token, whose logits give
	// the first output token: a fully cached prompt still runs one (vLLM v1
	// caps a prefix hit at prompt length - 1 for this reason).
	rec.RecomputedTokens = max(rec.RecomputedTokens, 1)
	r.compute = rec.RecomputedTokens
}

// hitHBM takes b from HBM for request id, which waits for b's producer if
// b is still being computed or loaded.
func (c *Core) hitHBM(now int64, id ReqID, b Block) {
	c.policies[0].Access(b, now)
	if p := c.producer[b]; p >= 0 && p != id {
		c.addDep(id, p)
	}
	if c.transient[b] && c.keepPromoted(b) {
		c.transient[b] = false
	}
}

// load promotes b from tier t into HBM for request id. A hit below tier 1
// goes through tier 1 and stays there (Stage copy) when tier 1 admits it
// and has room; the body starts the second hop when the first landed.
func (c *Core) load(now int64, id ReqID, r *reqState, b Block, t int) {
	if c.lowHits[b] < 255 {
		c.lowHits[b]++
	}
	c.policies[t].Access(b, now)
	c.insert(now, 0, b)
	c.producer[b] = id
	r.produced = append(r.produced, b)
	c.Stats.Promotions[t]++
	if !c.keepPromoted(b) {
		c.transient[b] = true
		c.Stats.TransientLoads++
	}
	if t > 1 && c.strategy.Stage == StageCopy && c.admits(1, b) && c.makeRoom(now, 1, c.size[b]) {
		c.insert(now, 1, b)
		c.Stats.Staged++
		c.mover.Move(now, id, b, c.size[b], t, 1, Load)
		c.mover.Move(now, id, b, c.size[b], 1, 0, Load)
		return
	}
	c.mover.Move(now, id, b, c.size[b], t, 0, Load)
}

// compute has request id compute b into HBM, unless a copy is there.
func (c *Core) compute(now int64, id ReqID, r *reqState, b Block) {
	if c.where[b]&1 != 0 {
		c.policies[0].Access(b, now)
		return
	}
	c.insert(now, 0, b)
	c.producer[b] = id
	r.produced = append(r.produced, b)
}

// cheapestCut returns how many leading blocks of r to take from the cache
// so that loading them and computing the rest finishes first, by the cost
// model's estimate (overlapped: the longer of the two; serial: their sum).
// Loads from different tiers run on different links, in parallel.
func (c *Core) cheapestCut(now int64, r *reqState) int {
	cm := c.cfg.Cost
	// Index 0 (HBM, never loaded from) stands for reads from peers: all
	// of them share this node's NIC.
	var backlog, busy [MaxTiers]int64
	var loading [MaxTiers]bool // tiers r loads from, up to block k
	pc, _ := cm.(PeerCost)
	p := c.newPass()
	best, bestK := int64(-1), 0
	cached := 0
	for k := 0; ; k++ {
		var load int64
		for t := range c.nt {
			if loading[t] {
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
		if c.first(p, b) {
			w := c.visible(b)
			if w == 0 && pc != nil {
				if h := c.peerHolder(b); h >= 0 {
					bl, sv := pc.EstimatePeerLoad(now, h, c.size[b])
					if !loading[0] {
						loading[0], backlog[0] = true, bl
					}
					busy[0] = AddTime(busy[0], sv)
					cached += c.tokens(&r.Request, k)
					continue
				}
			}
			if w == 0 {
				if bestK == k {
					return len(r.Blocks) // the prefix ends here anyway: no cut
				}
				break
			}
			if t := bits.TrailingZeros8(w); t > 0 {
				bl, sv := cm.EstimateLoad(now, t, c.size[b])
				if !loading[t] {
					loading[t], backlog[t] = true, bl
				}
				busy[t] = AddTime(busy[t], sv)
			}
		}
		cached += c.tokens(&r.Request, k)
	}
	return bestK
}

// addDep makes request id wait for request on, which produces a block id
// takes from HBM.
func (c *Core) addDep(id, on ReqID) {
	p := &c.reqs[on]
	for _, w := range p.waiters {
		if w == id {
			return
		}
	}
	p.waiters = append(p.waiters, id)
	c.reqs[id].waitingOn++
}

// startPrefill issues request id's prefill once every block it takes from
// HBM is there.
func (c *Core) startPrefill(now int64, id ReqID) {
	r := &c.reqs[id]
	if !r.resumed {
		r.rec.PrefillStart = now
	}
	cached := max(r.InputTokens-r.compute, 0) // an empty prompt still computes one token
	c.mover.Prefill(now, id, cached, r.compute)
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
