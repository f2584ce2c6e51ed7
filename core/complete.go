package core

// PrefillDone reports that request id's prefill finished: its first token
// is out and the blocks it produced are usable by others.
func (c *Core) PrefillDone(now int64, id ReqID, t Timing) {
	r := &c.reqs[id]
	if !r.prefilled { // a resumed request's first token came out long ago
		r.rec.FirstToken = now
		r.prefilled = true
	}
	r.rec.LoadNs += t.LoadNs
	r.rec.ComputeNs += t.ComputeNs
	r.rec.LoadWaitNs += t.LoadWaitNs
	c.Stats.ResumeTokens += int64(t.ResumeTokens)
	r.resumed, r.decoding = false, true
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
	r.scratch, r.decoding = 0, false
	c.nrun--
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

// Grow makes request id, decoding, hold HBM for the KV of tokens generated
// tokens (whole pages of PageTokens; at most its OutputTokens). The body
// calls it before a decode step whose new token needs a new page. Cached
// blocks nobody uses are evicted as needed; when pinned bytes leave no room,
// decoding requests are preempted, the most recently admitted first (vLLM
// v1's recompute preemption), each reported through Mover.Preempted. ok is
// false when id itself was preempted.
func (c *Core) Grow(now int64, id ReqID, tokens int) (ok bool) {
	r := &c.reqs[id]
	if !r.decoding {
		panic("core: Grow for a request that is not decoding")
	}
	need := c.outBytes(min(tokens, r.OutputTokens)) - r.scratch
	if need <= 0 {
		return true
	}
	for c.capacity[0]-c.pinnedHBM < need {
		v := c.victim()
		c.preempt(now, v)
		if v == id {
			return false
		}
	}
	c.freeHBM(now, need)
	r.scratch += need
	c.used[0] += need
	c.pinnedHBM += need
	c.peak(0)
	return true
}

// victim is the decoding request admitted last. Grow's caller is one, so
// there always is one. A linear scan: preemptions are rare.
func (c *Core) victim() ReqID {
	v := ReqID(-1)
	for id := range c.reqs {
		r := &c.reqs[id]
		if r.decoding && (v < 0 || r.admitted > c.reqs[v].admitted) {
			v = ReqID(id)
		}
	}
	return v
}

// preempt takes request id's HBM back: its blocks stay cached but become
// evictable, its output KV is freed (it will be recomputed), and it goes
// back to the front of the queue, to be admitted again before anything that
// arrived after it.
func (c *Core) preempt(now int64, id ReqID) {
	r := &c.reqs[id]
	for b := range c.distinct(r.Blocks) {
		c.unpin(now, b)
	}
	c.used[0] -= r.scratch
	c.pinnedHBM -= r.scratch
	r.held, r.scratch = r.scratch, 0
	r.decoding, r.resumed = false, true
	r.produced = r.produced[:0]
	r.queuedAt = now
	r.rec.Preemptions++
	c.Stats.Preemptions++
	c.nrun--
	if c.qh > 0 {
		c.qh--
		c.queue[c.qh] = id
	} else {
		c.queue = append(c.queue, 0)
		copy(c.queue[1:], c.queue)
		c.queue[0] = id
	}
	c.mover.Preempted(now, id)
}
