package core

import "kvsim/policy"

// policyHooks is what the core tells policies beyond the Policy calls: the
// batches of a policy.Batcher (Mooncake Store evicts several objects at
// once, and ahead of need above a watermark) and the request a
// policy.Sequencer (Belady, whose future is keyed by request order) is
// served for. Built on first use from c.policies.
type policyHooks struct {
	built  bool
	batch  []policy.Batcher   // per tier; nil where the policy evicts one at a time
	seq    []policy.Sequencer // policies keyed by request order
	except []exceptPin        // per tier: the pin view of an eviction ahead of need
}

func (c *Core) hooks() *policyHooks {
	h := &c.phooks
	if !h.built {
		h.built = true
		h.batch = make([]policy.Batcher, len(c.policies))
		h.except = make([]exceptPin, len(c.policies))
		for t, p := range c.policies {
			h.batch[t], _ = p.(policy.Batcher)
			if s, ok := p.(policy.Sequencer); ok {
				h.seq = append(h.seq, s)
			}
		}
	}
	return h
}

// setSeq tells request-ordered policies that what follows serves the
// request at trace position seq.
func (c *Core) setSeq(seq int64) {
	for _, s := range c.hooks().seq {
		s.SetSeq(seq)
	}
}

// takeBatch evicts the rest of the batch tier t's policy chose with its
// last Evict: a batch leaves the tier at once, through the normal eviction
// path (demotion or drop).
func (c *Core) takeBatch(now int64, t int) {
	bp := c.hooks().batch[t]
	for bp != nil && bp.Pending() {
		v, ok := c.policies[t].Evict(now, &c.pinViews[t])
		if !ok {
			return
		}
		c.evicted(now, t, v)
	}
}

// evictAhead runs one batch eviction in tier t if its policy says the
// insert of b left it over its watermark. b itself is spared: its move
// into t has not been issued yet.
func (c *Core) evictAhead(now int64, t int, b Block) {
	h := c.hooks()
	bp := h.batch[t]
	if bp == nil || !bp.Overfull(c.usedOf(t), c.capacity[t]) {
		return
	}
	pins := &h.except[t] // per tier: a victim's demotion may evict ahead below
	*pins = exceptPin{base: &c.pinViews[t], b: b}
	for first := true; first || bp.Pending(); first = false {
		v, ok := c.policies[t].Evict(now, pins)
		if !ok {
			return
		}
		c.evicted(now, t, v)
	}
}

// exceptPin is a tier's pin view that also pins one block.
type exceptPin struct {
	base *tierPins
	b    Block
}

func (p *exceptPin) Pinned(b Block) bool { return b == p.b || p.base.Pinned(b) }
