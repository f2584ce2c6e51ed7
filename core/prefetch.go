package core

import "math/bits"

// prefetch starts copying the storage-tier part of a queued request's
// usable prefix into tier 1, so that admission later loads it from there.
func (c *Core) prefetch(now int64, id ReqID) {
	if c.strategy.Prefetch == PrefetchOff || c.nt < 3 {
		return
	}
	r := &c.reqs[id]
	for b := range c.distinct(r.Blocks) {
		w := c.where[b]
		if w == 0 {
			break // the usable prefix ends here
		}
		if w&3 != 0 {
			continue // already in HBM or tier 1
		}
		from := bits.TrailingZeros8(w)
		c.prefetchPins[b]++ // so making room in tier 1 cannot evict the source
		if !c.admits(1, b) || !c.makeRoom(now, 1, c.size[b]) {
			c.prefetchPins[b]--
			break
		}
		c.insert(now, 1, b)
		c.arriving[b], c.prefetchFor[b] = true, id
		r.prefetched = append(r.prefetched, b)
		r.prefetching++
		c.Stats.Prefetches++
		c.mover.Move(now, id, b, c.size[b], from, 1, PrefetchMove)
	}
	if r.prefetching > 0 && c.strategy.Prefetch == PrefetchTimeout {
		c.mover.Wake(now+c.strategy.PrefetchTimeout, id)
	}
}

// endPrefetch hands the blocks prefetched for request id, now admitted, over
// to its own pins (taken before this), whether or not they have landed.
func (c *Core) endPrefetch(id ReqID, r *reqState) {
	for _, b := range r.prefetched {
		if c.prefetchFor[b] == id {
			c.prefetchFor[b] = -1
			if c.arriving[b] {
				c.Stats.PrefetchLate++
			}
		}
		c.prefetchPins[b]--
	}
	r.prefetched, r.prefetching = r.prefetched[:0], 0
}

// MoveDone reports that a PrefetchMove of b for req has landed.
func (c *Core) MoveDone(now int64, req ReqID, b Block) {
	c.arriving[b] = false
	if c.prefetchFor[b] != req {
		return // its request was admitted before it landed
	}
	c.prefetchFor[b] = -1
	if r := &c.reqs[req]; r.prefetching > 0 {
		if r.prefetching--; r.prefetching == 0 {
			c.drainQueue(now)
		}
	}
}

// Wake is the body's answer to Mover.Wake.
func (c *Core) Wake(now int64, _ ReqID) { c.drainQueue(now) }

// ready says whether a queued request may be admitted as far as its
// prefetch is concerned.
func (c *Core) ready(now int64, r *reqState) bool {
	if r.prefetching == 0 {
		return true
	}
	switch c.strategy.Prefetch {
	case PrefetchWaitComplete:
		return false
	case PrefetchTimeout:
		return now >= r.queuedAt+c.strategy.PrefetchTimeout
	}
	return true
}
