package core

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
		if c.strategy.WriteThrough && c.nt > 1 && c.where[b] == 1 && c.admits(1, b) && c.makeRoom(now, 1, c.size[b]) {
			c.insert(now, 1, b)
			c.Stats.WriteThroughs++
			c.mover.Move(now, Background, b, c.size[b], 0, 1, WriteThrough)
		}
	}
	for _, w := range r.waiters {
		wr := &c.reqs[w]
		if wr.waitingOn--; wr.waitingOn == 0 {
			c.Stats.DepWaits++
			c.startPrefill(now, w)
		}
	}
	r.waiters = r.waiters[:0]
	c.mover.Decode(now, id, r.OutputTokens)
}

// DecodeDone reports that request id finished generating: its blocks stay
// cached but become evictable, and queued requests may now fit.
func (c *Core) DecodeDone(now int64, id ReqID) {
	r := &c.reqs[id]
	for b := range c.distinct(r.Blocks) {
		c.unpin(now, b)
	}
	c.used[0] -= r.scratch
	c.pinnedHBM -= r.scratch
	c.tally(&r.rec, len(r.Blocks), now)
	c.free = append(c.free, id)
	c.drainQueue(now)
}

// tally adds a finished request's record to the totals and hands it to the
// observer.
func (c *Core) tally(rec *Record, blocks int, now int64) {
	rec.Done = now
	s := &c.Stats
	s.Requests++
	s.BlockAccesses += int64(blocks)
	for t, h := range rec.HitBlocks {
		s.Hits[t] += h
	}
	s.Misses += int64(blocks) - sum(rec.HitBlocks)
	s.BlockHits += int64(rec.BlockHits)
	s.RecomputedTokens += int64(rec.RecomputedTokens)
	if c.observer != nil {
		c.observer(rec)
	}
}

// Grow makes request id hold HBM for the KV of tokens generated tokens
// (whole blocks). The body calls it before a decode step whose new token
// needs a new block. ok is false when id itself was preempted.
func (c *Core) Grow(now int64, id ReqID, tokens int) (ok bool) {
	return true // first version: admission still reserves the whole output
}
