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
	r.resumed = false
	c.startDecoding(id)
	for _, b := range r.produced {
		if c.producer[b] == id {
			c.producer[b] = -1
		}
		if c.strategy.WriteThrough && c.nt > 1 && c.where[b] == 1 && !c.has(1, b) && c.admits(1, b) && c.makeRoom(now, 1, c.size[b]) {
			c.insert(now, 1, b)
			c.Stats.WriteThroughs++
			c.moveOut(now, b, 0, 1, WriteThrough)
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
	if r.IdleNs > 0 && c.idlers != nil {
		c.markIdle(now, r)
	}
	c.used[0] -= r.scratch
	c.pinnedHBM -= r.scratch
	c.outHeld -= r.scratch
	c.runToks -= int64(r.InputTokens)
	r.scratch = 0
	c.stopDecoding(id)
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
	s.PoolRemoteHits += int64(rec.PoolRemote)
	s.Transferred += int64(rec.Transferred)
	s.PeerFetched += int64(rec.Peer)
	s.RecomputedTokens += int64(rec.RecomputedTokens)
	if c.observer != nil {
		c.observer(rec)
	}
}

// Grow makes request id, decoding, hold HBM for the KV of tokens generated
// tokens (whole pages of PageTokens; at most its OutputTokens). The body
// calls it before a decode step whose new token needs a new page. Cached
// blocks nobody uses are evicted as needed; when pinned bytes leave no room,
// decoding requests are preempted, the most recently admitted (or Started)
// first (vLLM v1's recompute preemption), each reported through
// Mover.Preempted. ok is false when id itself was preempted, or
// (HoldEvicted) when only HBM still draining stands in the way: then id
// keeps running but must wait (GrowWaiting reports it) and the body calls
// Grow again once a drain landed. A decode that waits is not preempted: its KV is valid and the
// memory is seconds away at most, and SGLang's write-back eviction likewise
// waits for its copies to leave the GPU. While one waits, no queued request
// is admitted (running requests come first, as in vLLM v1's scheduler).
func (c *Core) Grow(now int64, id ReqID, tokens int) (ok bool) {
	r := &c.reqs[id]
	if !r.decoding {
		panic("core: Grow for a request that is not decoding")
	}
	need := c.outBytes(min(tokens, r.OutputTokens)) - r.scratch
	if need <= 0 {
		return true
	}
	for {
		if c.capacity[0]-c.pinnedHBM >= need {
			c.freeHBM(now, need)
			if c.freeNow() >= need {
				break
			}
			if !r.growWait {
				r.growWait = true
				c.growWaits++
				c.Stats.GrowWaits++
			}
			return false
		}
		v := c.victim()
		c.preempt(now, v)
		if v == id {
			return false
		}
	}
	c.endGrowWait(r)
	r.scratch += need
	c.outHeld += need
	c.used[0] += need
	c.pinnedHBM += need
	c.peak(0)
	if c.heldBack && c.growWaits == 0 { // admissions waited for the running requests
		c.heldBack = false
		c.drainQueue(now)
	}
	return true
}

// GrowWaiting says whether request id's last Grow waits for HBM still
// draining (HoldEvicted).
func (c *Core) GrowWaiting(id ReqID) bool { return c.reqs[id].growWait }

// endGrowWait ends r's wait for draining HBM, if it waited.
func (c *Core) endGrowWait(r *reqState) {
	if r.growWait {
		r.growWait = false
		c.growWaits--
	}
}

// Started tells the core that request id joined the engine's running list
// (its first prompt chunk is scheduled). Preemption then takes the decoding
// request that joined it last, as vLLM v1 preempts the tail of its running
// list; without Started (the simple engine) the one admitted last.
func (c *Core) Started(id ReqID) {
	c.admissions++
	c.reqs[id].admitted = c.admissions
}

// HoldForResume makes preempted request id reserve, when it is admitted
// again, HBM for the KV of tokens generated tokens (whole pages, at most
// its output): its resumed prefill recomputes all of them, and vLLM v1
// allocates the slots of every token a resumed request computes before it
// runs. Without it a resumed request holds only the pages it had, and its
// first decode may preempt it again at once.
func (c *Core) HoldForResume(id ReqID, tokens int) {
	r := &c.reqs[id]
	if !r.resumed || r.decoding || r.scratch != 0 {
		panic("core: HoldForResume for a request that is not preempted")
	}
	r.held = max(r.held, c.outBytes(min(tokens, r.OutputTokens)))
}

// victim is the decoding request admitted (or Started) last. Grow's
// caller is one, so there always is one. A scan of the decoding requests
// only: an overloaded run preempts often while tens of thousands of
// requests queue.
func (c *Core) victim() ReqID {
	v := ReqID(-1)
	for _, id := range c.decoders {
		if v < 0 || c.reqs[id].admitted > c.reqs[v].admitted {
			v = id
		}
	}
	return v
}

// startDecoding and stopDecoding keep Core.decoders: the requests that
// are decoding, each once.
func (c *Core) startDecoding(id ReqID) {
	r := &c.reqs[id]
	if r.decoding {
		return
	}
	r.decoding, r.decoderAt = true, int32(len(c.decoders))
	c.decoders = append(c.decoders, id)
}

func (c *Core) stopDecoding(id ReqID) {
	r := &c.reqs[id]
	if !r.decoding {
		return
	}
	last := c.decoders[len(c.decoders)-1]
	c.decoders[r.decoderAt] = last
	c.reqs[last].decoderAt = r.decoderAt
	c.decoders = c.decoders[:len(c.decoders)-1]
	r.decoding = false
}

// preempt takes request id's HBM back: its blocks stay cached but become
// evictable, its output KV is freed (it will be recomputed), and it goes
// back to the front of the queue, to be admitted again before anything that
// arrived after it.
func (c *Core) preempt(now int64, id ReqID) {
	r := &c.reqs[id]
	c.endGrowWait(r)
	for b := range c.distinct(r.Blocks) {
		c.unpin(now, b)
	}
	if r.IdleNs > 0 && c.idlers != nil {
		c.markIdle(now, r)
	}
	c.used[0] -= r.scratch
	c.pinnedHBM -= r.scratch
	c.outHeld -= r.scratch
	c.runToks -= int64(r.InputTokens)
	c.queuedToks += int64(r.InputTokens)
	r.held, r.scratch = r.scratch, 0
	c.stopDecoding(id)
	r.resumed = true
	r.produced = r.produced[:0]
	r.queuedAt = now
	r.rec.Preemptions++
	c.Stats.Preemptions++
	c.nrun--
	if c.qh == 0 { // room in front, for this and the next ones: O(1) amortized
		n := len(c.queue)
		room := max(16, n/2)
		if cap(c.queue) >= n+room { // in place: no allocation in steady state
			c.queue = c.queue[:n+room]
			copy(c.queue[room:], c.queue[:n])
		} else {
			q := make([]ReqID, n+room, 2*(n+room))
			copy(q[room:], c.queue)
			c.queue = q
		}
		c.qh = room
	}
	c.qh--
	c.queue[c.qh] = id
	c.mover.Preempted(now, id)
}

// markIdle tells each private tier's Idler that r's blocks no request
// still uses wait for r's session, expected back r.IdleNs from now.
func (c *Core) markIdle(now int64, r *reqState) {
	back := AddTime(now, r.IdleNs)
	for b := range c.distinct(r.Blocks) {
		if c.pins[b] > 0 {
			continue
		}
		for t, id := range c.idlers {
			if id != nil && c.where[b]&(1<<t) != 0 {
				id.Idle(b, back)
			}
		}
	}
}
