package sim

import (
	"math"

	"kvsim/core"
)

// link is one direction of a connection between two tiers: a
// work-conserving first-come-first-served queue. A transfer joins it only
// once its data is ready (the source copy has landed, the previous hop has
// ended: see move.go), so the link never waits for data that is not there
// while ready transfers queue. Up to len(lanes) transfers are in flight at
// once; each first waits out the link's latency (a device's access time, a
// DMA setup), then moves its bytes through the one pipe of the link's full
// bandwidth, in the order they took their lanes. So lanes hide latency
// (queue depth), never multiply bandwidth, and a lone transfer gets the
// whole pipe. With one lane a transfer takes latency + bytes/bandwidth
// after the previous one ends.
type link struct {
	name     string
	from, to int
	bw       float64 // bytes/s of the pipe
	latency  int64
	dev      [2]*device // the end tiers' shared pipes (from, to), nil where not shared

	// The queue as it runs (move.go). Queues hold transfer indices + 1.
	inFlight int   // lanes taken
	waiting  fifo  // ready transfers waiting for a lane
	laned    fifo  // transfers holding a lane: in their latency, or waiting for the pipe
	pipeFree int64 // when the pipe ends the bytes it is moving
	kickAt   int64 // time of this link's pending evKick, if any

	// The queue projected forward from what has joined it, as if nothing
	// else would: when each lane and the pipe will be free. EstimateLoad
	// reads it (backlog). For a link without a shared device it is exactly
	// what the queue will do; with one, the device's other links may make
	// it earlier or later.
	lanes []int64
	pipe  int64

	bytes     int64
	transfers int64
	busy      int64    // ns the pipe spent moving bytes
	byKind    [4]int64 // bytes by core.MoveKind: the endurance ledger's writes into l.to
}

// device is a tier's own pipe, shared by every transfer into or out of the
// tier over any link and in either direction (an SSD whose reads and writes
// share the flash). A transfer through it starts when both its link's pipe
// and the device are free, moves at the slower of the two, and holds the
// device for its bytes at the device's rate. When the device frees, the
// transfer that has waited longest among those whose links are free takes
// it.
type device struct {
	name      string
	bw        float64
	free      int64 // when the device ends the bytes it is moving
	plan      int64 // the projection's free (see link.lanes)
	kickAt    int64
	bytes     int64
	transfers int64
	busy      int64
}

// fifo is an intrusive queue of transfers (indices + 1, 0: none) linked
// through xfer.next.
type fifo struct{ head, tail int32 }

// project adds a transfer ready at t to the projection and returns when
// it would arrive.
func (l *link) project(t int64, bytes int64) int64 {
	lane := 0
	for i, f := range l.lanes {
		if f < l.lanes[lane] {
			lane = i
		}
	}
	start := max(t, l.lanes[lane])
	ready := max(core.AddTime(start, l.latency), l.pipe) // sums saturate past core.MaxTime: the caller fails the run
	for _, d := range l.dev {
		if d != nil {
			ready = max(ready, d.plan)
		}
	}
	done := core.AddTime(ready, nsFor(bytes, l.rate()))
	for _, d := range l.dev {
		if d != nil {
			d.plan = core.AddTime(ready, nsFor(bytes, d.bw))
		}
	}
	l.pipe = done
	l.lanes[lane] = done
	return done
}

// nsFor is the time to move bytes at bw, saturating at core.MaxTime+1.
func nsFor(bytes int64, bw float64) int64 {
	ns := math.Ceil(float64(bytes) * 1e9 / bw)
	if !(ns < float64(core.MaxTime)) {
		return core.MaxTime + 1
	}
	return int64(ns)
}

// rate is the bandwidth a lone transfer gets: the link's, or a slower
// shared device's.
func (l *link) rate() float64 {
	bw := l.bw
	for _, d := range l.dev {
		if d != nil {
			bw = min(bw, d.bw)
		}
	}
	return bw
}

// backlog is how long a transfer ready at now would wait for the pipe, a
// free lane or a shared device before its own bytes start moving, beyond
// its latency, by the projection.
func (l *link) backlog(now int64) int64 {
	free := l.lanes[0]
	for _, f := range l.lanes[1:] {
		free = min(free, f)
	}
	start := max(now, free)
	ready := max(core.AddTime(start, l.latency), l.pipe)
	for _, d := range l.dev {
		if d != nil {
			ready = max(ready, d.plan)
		}
	}
	return ready - core.AddTime(now, l.latency)
}
