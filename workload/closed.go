package workload

import (
	"fmt"
	"io"

	"kvsim/core"
)

// Closed replays a trace closed-loop (core.Sessions): a session's first
// turn arrives at its trace time, and each later turn a think time after
// the turn it follows has finished, as session replays in BLIS and
// Dynamo's and AIPerf's tools do; the arrival times the trace gives later
// turns are not used. The trace is read whole when Closed is built: a turn
// may follow one that finishes long after many others arrived.
type Closed struct {
	reqs   []core.Request // every request, in trace order (Seq = index)
	think  []int64        // per request: ns after its parent finishes
	kids   map[int64][]int32
	parent []int32 // per request: the request it follows, -1: none
	roots  []int32 // requests arriving at their trace time, in order
	next   int
	out    []core.Request
	blocks []core.Block // every request's blocks, end to end
}

// NewClosed reads src to the end. A turn whose parent line is not in the
// trace (skipped, or past a limit) arrives at its trace time. Think times
// come as the reader gives them (divided by the speedup, as arrivals are).
func NewClosed(src *Source) (*Closed, error) {
	c := &Closed{kids: map[int64][]int32{}}
	bySeq := map[int]int64{} // trace line -> Seq
	var r core.Request
	type span struct{ at, n int }
	var spans []span
	for {
		err := src.Next(&r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if r.Seq != int64(len(c.reqs)) {
			return nil, fmt.Errorf("workload: request %d read as number %d", r.Seq, len(c.reqs))
		}
		parent, think := src.Session()
		spans = append(spans, span{len(c.blocks), len(r.Blocks)})
		c.blocks = append(c.blocks, r.Blocks...)
		q := r
		q.Blocks = nil
		c.reqs = append(c.reqs, q)
		c.think = append(c.think, max(think, 0))
		bySeq[r.Line] = r.Seq
		if p, ok := bySeq[parent]; ok && parent > 0 && p != r.Seq {
			c.kids[p] = append(c.kids[p], int32(r.Seq))
			c.parent = append(c.parent, int32(p))
		} else {
			c.roots = append(c.roots, int32(r.Seq))
			c.parent = append(c.parent, -1)
		}
	}
	for i, sp := range spans { // the arena no longer grows: slice it
		c.reqs[i].Blocks = c.blocks[sp.at : sp.at+sp.n : sp.at+sp.n]
	}
	return c, nil
}

// Parent is the request seq follows (an earlier one), -1 for a root.
func (c *Closed) Parent(seq int64) int64 { return int64(c.parent[seq]) }

// Requests is the number of requests in the trace.
func (c *Closed) Requests() int { return len(c.reqs) }

// Roots is the number of requests that arrive at their trace time.
func (c *Closed) Roots() int { return len(c.roots) }

// Next implements core.Source: the next request arriving at its trace time.
func (c *Closed) Next(out *core.Request) error {
	if c.next == len(c.roots) {
		return io.EOF
	}
	q := &c.reqs[c.roots[c.next]]
	c.next++
	blocks := append(out.Blocks[:0], q.Blocks...)
	*out = *q
	out.Blocks = blocks
	return nil
}

// Follow implements core.Sessions.
func (c *Closed) Follow(seq int64, done int64) ([]core.Request, error) {
	c.out = c.out[:0]
	for _, k := range c.kids[seq] {
		q := c.reqs[k]
		q.Arrival = core.AddTime(done, c.think[k])
		c.out = append(c.out, q)
	}
	return c.out, nil
}

// Idle estimates: what Request.IdleNs tells the core about the wait after
// a call before its session's next call.
const (
	IdleOff      = "off"      // no estimate
	IdleObserved = "observed" // the mean tool wait on the call's own path so far
	IdleOracle   = "oracle"   // the trace's own next wait (not known to a real system)
)

// SetIdle sets every request's IdleNs by mode. observed: the mean of the
// think times from the session's first call down to this call (the waits
// the serving system has already seen this branch of the session take
// before the call arrived); a first call has none and gets no estimate.
// oracle: the shortest think time before a call that follows this one, or
// core.MaxTime when none does (the branch ends): the trace's declared
// tool wait, which only an oracle knows when the call ends.
func (c *Closed) SetIdle(mode string) error {
	switch mode {
	case "", IdleOff:
		for i := range c.reqs {
			c.reqs[i].IdleNs = 0
		}
	case IdleObserved:
		sum := make([]int64, len(c.reqs))
		n := make([]int64, len(c.reqs))
		for i := range c.reqs { // a parent comes before its followers
			if p := c.parent[i]; p >= 0 {
				sum[i], n[i] = core.AddTime(sum[p], c.think[i]), n[p]+1
			}
			c.reqs[i].IdleNs = 0
			if n[i] > 0 {
				c.reqs[i].IdleNs = sum[i] / n[i]
			}
		}
	case IdleOracle:
		for i := range c.reqs {
			c.reqs[i].IdleNs = core.MaxTime
			for _, k := range c.kids[int64(i)] {
				c.reqs[i].IdleNs = min(c.reqs[i].IdleNs, c.think[k])
			}
		}
	default:
		return fmt.Errorf("unknown idle estimate %q (want %q, %q or %q)", mode, IdleOff, IdleObserved, IdleOracle)
	}
	return nil
}
