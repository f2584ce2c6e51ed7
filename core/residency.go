package core

import "fmt"

// tierPins is what one tier's policy sees as pinned: blocks in use, and in
// lower tiers also the copies a queued request's prefetch holds (HBM is
// never held for a request that is not running, or queued requests could
// starve the running ones of HBM).
type tierPins struct {
	c    *Core
	tier int
}

func (p *tierPins) Pinned(b Block) bool {
	if p.tier == p.c.pt {
		return p.c.pool.pins.Pinned(b)
	}
	return p.c.pins[b] > 0 || p.c.shield[b] || (p.tier > 0 && p.c.prefetchPins[b] > 0)
}

// Preload makes tier t (not HBM) hold b, of the given size, before the
// first request arrives: a warm start from storage that kept its blocks.
// The tier's policy sees b inserted at time 0, in call order. It returns
// false, changing nothing, once a request has arrived, for tier 0, when b
// is already there, when bytes is not positive or contradicts b's size as
// already known, or when b does not fit in what is left of the tier.
func (c *Core) Preload(t int, b Block, bytes int64) bool {
	if len(c.reqs) > 0 || t <= 0 || t >= c.nt || t == c.pt || b < 0 || bytes <= 0 {
		return false
	}
	c.growBlocks(b)
	if c.where[b]&(1<<t) != 0 || (c.size[b] != 0 && c.size[b] != bytes) || c.used[t]+bytes > c.capacity[t] || c.full(t) {
		return false
	}
	c.size[b] = bytes
	c.insert(0, t, b)
	return true
}

// pin and unpin keep pinnedHBM equal to the bytes of pinned HBM-resident
// blocks plus the scratch of running requests.
func (c *Core) pin(b Block) {
	if c.pins[b] == 0 && c.where[b]&1 != 0 {
		c.pinnedHBM += c.size[b]
		if c.holder != nil {
			c.holder.Acquire(b)
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
	c.pinnedHBM -= c.size[b]
	if c.transient[b] { // served from HBM, not kept there
		c.transient[b] = false
		c.policies[0].Remove(b)
		c.remove(0, b)
		c.holdLeaving(b)
		c.mover.Drop(now, b, 0)
		return
	}
	if c.holder != nil {
		c.holder.Release(b, now)
	}
}

// insert makes b resident in tier t; the caller has made room.
func (c *Core) insert(now int64, t int, b Block) {
	if t == c.pt {
		c.pool.add(now, c, b, c.placeAt)
		c.changed(b)
		c.peak(t)
		c.evictAhead(now, t, b)
		return
	}
	c.where[b] |= 1 << t
	c.changed(b)
	c.used[t] += c.size[b]
	c.count[t]++
	c.policies[t].Insert(b, c.size[b], now)
	if t == 0 && c.pins[b] > 0 {
		c.pinnedHBM += c.size[b]
		if c.holder != nil {
			c.holder.Acquire(b)
		}
	}
	c.peak(t)
	c.evictAhead(now, t, b)
}

// remove forgets b's copy in tier t (the policy already let go of it).
func (c *Core) remove(t int, b Block) {
	if t == c.pt {
		c.pool.drop(b)
		return
	}
	c.where[b] &^= 1 << t
	c.changed(b)
	c.used[t] -= c.size[b]
	c.count[t]--
}

// full reports whether tier t holds as many blocks as its MaxBlocks.
func (c *Core) full(t int) bool { return c.maxBlocks[t] > 0 && c.count[t] >= c.maxBlocks[t] }

// changed tells Config.OnResidency that b's residency changed.
func (c *Core) changed(b Block) {
	if c.cfg.OnResidency != nil {
		c.cfg.OnResidency(b, c.where[b])
	}
}

func (c *Core) peak(t int) {
	if t == c.pt {
		c.Stats.PeakUsed[t] = max(c.Stats.PeakUsed[t], c.pool.used)
		return
	}
	if c.used[t] > c.Stats.PeakUsed[t] {
		c.Stats.PeakUsed[t] = c.used[t]
	}
	if c.used[t] > c.capacity[t] || (t == 0 && c.used[0]+c.draining > c.capacity[0]) {
		panic(fmt.Sprintf("core: tier %d over capacity: %d (+ %d draining) > %d", t, c.used[t], c.draining, c.capacity[t]))
	}
	if c.maxBlocks[t] > 0 && c.count[t] > c.maxBlocks[t] {
		panic(fmt.Sprintf("core: tier %d holds %d blocks, more than its %d", t, c.count[t], c.maxBlocks[t]))
	}
}

// freeNow is the HBM free at once: neither resident nor draining.
func (c *Core) freeNow() int64 { return c.capacity[0] - c.used[0] - c.draining }

// moveOut issues a move of b out of tier from; with HoldEvicted, one out
// of HBM is counted until the body reports it Drained.
func (c *Core) moveOut(now int64, b Block, from, to int, kind MoveKind) {
	if from == 0 && c.cfg.HoldEvicted {
		c.outbound[b]++
	}
	c.mover.Move(now, Background, b, c.size[b], from, to, kind)
}

// holdLeaving keeps the HBM of b, just evicted, allocated while a copy of
// it is still leaving HBM. A block back in HBM and evicted again before
// that copy left is held once: its second copy needs no copying out.
func (c *Core) holdLeaving(b Block) {
	if c.outbound[b] > 0 && !c.heldHBM[b] {
		c.heldHBM[b] = true
		c.draining += c.size[b]
		c.Stats.PeakDraining = max(c.Stats.PeakDraining, c.draining)
	}
}

// Drained reports that a move of b out of HBM (a demotion or a write-
// through the core issued) has left HBM: with Config.HoldEvicted, the HBM
// an evicted copy held is free once the last such move has, and the queue
// is retried. Without HoldEvicted it does nothing.
func (c *Core) Drained(now int64, b Block) {
	if !c.cfg.HoldEvicted || int(b) >= len(c.outbound) || c.outbound[b] == 0 {
		return
	}
	if c.outbound[b]--; c.outbound[b] > 0 || !c.heldHBM[b] {
		return
	}
	c.heldHBM[b] = false
	c.draining -= c.size[b]
	c.drainQueue(now)
}

// visible is the residency admission may use: every copy, a tier-1 copy
// still being prefetched included. Loading such a block from tier 1 waits
// for the copy to land (the body starts a move once its source landed),
// which is sooner than reading storage a second time.
func (c *Core) visible(b Block) uint8 { return c.where[b] }

// makeRoom evicts from tier t until need bytes are free.
func (c *Core) makeRoom(now int64, t int, need int64) bool {
	if t == c.pt {
		c.placeAt = c.pool.room(now, c, need)
		return c.placeAt >= 0
	}
	if need > c.capacity[t] {
		return false
	}
	for c.capacity[t]-c.used[t] < need || c.full(t) {
		v, ok := c.policies[t].Evict(now, &c.pinViews[t])
		if !ok {
			return false
		}
		c.evicted(now, t, v)
		c.takeBatch(now, t)
	}
	return true
}

// admits applies the admission policy to a block entering lower tier t.
func (c *Core) admits(t int, b Block) bool {
	if c.strategy.AdmitAfter > 1 && int(c.refs[b]) < c.strategy.AdmitAfter {
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
		if c.has(n, b) {
			if t == 0 {
				c.holdLeaving(b) // its write-through may still be copying it out
			}
			c.mover.Drop(now, b, t) // clean: the copy below is current
			return
		}
		if c.admits(n, b) && c.makeRoom(now, n, c.size[b]) {
			c.insert(now, n, b)
			c.Stats.Demotions[t]++
			c.moveOut(now, b, t, n, Demote)
			if t == 0 {
				c.holdLeaving(b)
			}
			c.mover.Drop(now, b, t)
			return
		}
	}
	c.Stats.Drops[t]++
	if t == 0 {
		c.holdLeaving(b) // a write-through may still be copying it out
	}
	c.mover.Drop(now, b, t)
}

// Lost reports that a body could not keep tier's copy of b (a write failed
// with ENOSPC or EIO, a read found it corrupt, the store evicted it). The
// core forgets that copy, so it is never served; HBM copies cannot be lost.
func (c *Core) Lost(now int64, b Block, tier int) {
	if tier <= 0 || tier >= c.nt || int(b) >= len(c.where) || !c.has(tier, b) {
		return
	}
	c.policies[tier].Remove(b)
	c.remove(tier, b)
	c.arriving[b] = c.arriving[b] && tier != 1
	c.Stats.Lost[tier]++
}
