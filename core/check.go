package core

import "fmt"

// Check verifies internal accounting (tests call it between events).
func (c *Core) Check() error {
	used := make([]int64, c.nt)
	count := make([]int, c.nt)
	var pinned int64
	for b, w := range c.where {
		for t := 0; t < c.nt; t++ {
			if w&(1<<t) != 0 {
				used[t] += c.size[b]
				count[t]++
			}
		}
		if w&1 != 0 && c.pins[b] > 0 {
			pinned += c.size[b]
		}
	}
	run := c.running()
	if len(run) != c.nrun {
		return fmt.Errorf("%d requests running, counted %d", len(run), c.nrun)
	}
	if c.cfg.MaxRunning > 0 && c.nrun > c.cfg.MaxRunning {
		return fmt.Errorf("%d requests running, over the limit of %d", c.nrun, c.cfg.MaxRunning)
	}
	// Each running request pins each of its blocks once; nothing else pins.
	pins := make([]int32, len(c.pins))
	unit := int64(c.PageTokens()) * c.cfg.BytesPerToken
	for _, id := range run {
		r := &c.reqs[id]
		if r.scratch%unit != 0 || r.scratch > c.outBytes(r.OutputTokens) {
			return fmt.Errorf("request %d holds %d bytes of output KV: not whole pages, or more than its %d output tokens need", r.Seq, r.scratch, r.OutputTokens)
		}
		used[0] += r.scratch
		pinned += r.scratch
		for b := range c.distinct(r.Blocks) {
			pins[b]++
		}
	}
	var qt, rt, oh int64
	for _, id := range run {
		rt += int64(c.reqs[id].InputTokens)
		oh += c.reqs[id].scratch
	}
	for _, id := range c.queue[c.qh:] {
		r := &c.reqs[id]
		qt += int64(r.InputTokens)
		if r.scratch != 0 || r.decoding || r.held > c.outBytes(r.OutputTokens) {
			return fmt.Errorf("queued request %d holds %d bytes of output KV (decoding %v), keeps %d", r.Seq, r.scratch, r.decoding, r.held)
		}
	}
	if qt != c.queuedToks || rt != c.runToks || oh != c.outHeld {
		return fmt.Errorf("queued/running prompt tokens and output KV bytes counted %d/%d/%d, requests add to %d/%d/%d",
			c.queuedToks, c.runToks, c.outHeld, qt, rt, oh)
	}
	for b, n := range pins {
		if c.pins[b] != n {
			return fmt.Errorf("block %d: %d pins, running requests use it %d times", b, c.pins[b], n)
		}
	}
	if pinned != c.pinnedHBM {
		return fmt.Errorf("pinned HBM bytes %d, blocks add to %d", c.pinnedHBM, pinned)
	}
	var draining int64
	for b, h := range c.heldHBM {
		if h {
			draining += c.size[b]
			if c.outbound[b] == 0 {
				return fmt.Errorf("block %d: HBM held, but no copy of it is leaving HBM", b)
			}
		}
	}
	if draining != c.draining || (!c.cfg.HoldEvicted && draining != 0) {
		return fmt.Errorf("draining HBM %d bytes, held blocks add to %d", c.draining, draining)
	}
	if used[0]+draining > c.capacity[0] {
		return fmt.Errorf("HBM: used %d + draining %d over capacity %d", used[0], draining, c.capacity[0])
	}
	// No request waits at the head of the queue while HBM free now (not
	// draining) would hold it. One still prefetching may wait, and one just
	// preempted waits for the next completion (as vLLM v1 schedules no
	// waiting request in a step that preempted); none is admitted while a
	// running request waits to grow.
	waits := 0
	for _, id := range run {
		if c.reqs[id].growWait {
			waits++
		}
	}
	if waits != c.growWaits {
		return fmt.Errorf("%d decodes wait for draining HBM, counted %d", waits, c.growWaits)
	}
	if c.Queued() > 0 && c.growWaits == 0 && (c.cfg.MaxRunning == 0 || c.nrun < c.cfg.MaxRunning) {
		if r := &c.reqs[c.queue[c.qh]]; r.prefetching == 0 && !r.resumed {
			if need, fits := c.hbmNeed(r); fits && c.capacity[0]-c.used[0]-c.draining >= need {
				return fmt.Errorf("request %d waits while HBM has the %d bytes it needs free", r.Seq, need)
			}
		}
	}
	for t := range used {
		if t == c.pt { // shared: Pool.Check
			continue
		}
		if used[t] != c.used[t] {
			return fmt.Errorf("tier %d: used %d, blocks add to %d", t, c.used[t], used[t])
		}
		if used[t] > c.capacity[t] {
			return fmt.Errorf("tier %d: used %d over capacity %d", t, used[t], c.capacity[t])
		}
		if count[t] != c.count[t] {
			return fmt.Errorf("tier %d: %d blocks counted, %d held", t, c.count[t], count[t])
		}
		if c.maxBlocks[t] > 0 && c.count[t] > c.maxBlocks[t] {
			return fmt.Errorf("tier %d: %d blocks, more than its %d", t, c.count[t], c.maxBlocks[t])
		}
	}
	for t, p := range c.policies {
		if t == c.pt {
			continue
		}
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

// running lists the admitted, unfinished requests.
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
