package hw

import (
	"errors"
	"io"
	"time"

	"kvsim/core"
)

// growOutput has the core hold HBM for request id's generated tokens, one
// page after another; false if it was preempted (it is queued again) or
// waits for HBM still draining (c.GrowWaiting: ask again after the drains).
func growOutput(c *core.Core, now int64, id core.ReqID) bool {
	for k := 1; k <= c.Request(id).OutputTokens; k += c.PageTokens() {
		if !c.Grow(now, id, k) {
			return false
		}
	}
	return true
}

// ErrStopped is RunSequential's error once BodyOptions.Stopped says so.
var ErrStopped = errors.New("hw: replay stopped")

// RunSequential drives a core of its own on the real clock, without the
// simulator: requests are replayed one at a time, each running to
// completion (its moves really done, its KV written, its decode
// instantaneous, though its output KV takes HBM page by page) before the
// next arrives. Completions are delivered in the
// order the real work finished. It is the body standing alone, so that the
// same policies can be checked against the simulator by their decisions,
// not only their timings; compute time is not emulated. The core starts
// warm with what the stores kept (Warm, when BodyOptions.ModelBytes is set).
// Once BodyOptions.Stopped says so it returns ErrStopped, between events.
func (b *Body) RunSequential(cfg core.Config, src core.Source, obs core.Observer) (*core.Core, error) {
	c, err := core.New(cfg, b, obs)
	if err != nil {
		return nil, err
	}
	b.SetCore(c)
	b.Warm(c)
	b.own = true
	defer func() { b.own = false }()
	start := time.Now()
	now := func() int64 { return time.Since(start).Nanoseconds() }
	lost := func() {
		for _, l := range b.TakeLost() {
			c.Lost(now(), l.Block, l.Tier)
		}
	}
	var r core.Request
	for {
		if b.stopped() {
			return c, ErrStopped
		}
		err := src.Next(&r)
		if err == io.EOF {
			return c, nil
		}
		if err != nil {
			return c, err
		}
		c.Arrive(now(), &r)
		lost()
		for len(b.events) > 0 {
			if b.stopped() {
				// The moves it skipped never complete: a request waiting
				// on them would be asked about forever.
				return c, ErrStopped
			}
			e := b.events[0]
			b.events = b.events[1:]
			switch e.kind {
			case donePrefill:
				var t core.Timing
				if int(e.req) < len(b.loadNs) {
					t.LoadNs, b.loadNs[e.req] = b.loadNs[e.req], 0
				}
				c.PrefillDone(now(), e.req, t)
			case doneDecode:
				// Decoding is instantaneous, but its KV still takes HBM a
				// page at a time, as in the simulator, so the cache sees
				// the same evictions.
				if growOutput(c, now(), e.req) {
					c.DecodeDone(now(), e.req)
				} else if c.GrowWaiting(e.req) { // after the drains queued before it
					b.events = append(b.events, e)
				}
			case doneMove:
				c.MoveDone(now(), e.req, e.blk)
			case doneWake:
				c.Wake(now(), e.req)
			case doneDrain:
				c.Drained(now(), e.blk)
			}
			lost()
		}
	}
}
