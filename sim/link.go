package sim

import (
	"math"

	"kvsim/core"
)

// link is one direction of a connection between two tiers. Up to `lanes`
// transfers are in flight at once; each first waits out the link's
// latency (a device's access time, a DMA setup), then moves its bytes
// through the one pipe of the link's full bandwidth, in arrival order. So
// lanes hide latency (queue depth), never multiply bandwidth, and a lone
// transfer gets the whole pipe. With one lane a transfer takes latency +
// bytes/bandwidth after the previous one ends.
type link struct {
	name     string
	from, to int
	bw       float64 // bytes/s of the pipe
	latency  int64
	lanes    []int64    // when each in-flight slot frees up
	pipe     int64      // when the pipe finishes the bytes queued so far
	dev      [2]*device // the end tiers' shared pipes (from, to), nil where not shared

	bytes     int64
	transfers int64
	busy      int64 // ns the pipe spent moving bytes
}

// device is a tier's own pipe, shared by every transfer into or out of the
// tier over any link and in either direction (an SSD whose reads and writes
// share the flash). A transfer through it starts when both its link and the
// device are free, moves at the slower of the two, and holds the device
// for its bytes at the device's rate.
type device struct {
	name      string
	bw        float64
	free      int64 // when the device finishes what was queued so far
	bytes     int64
	transfers int64
	busy      int64
}

// transfer enqueues bytes at time t and returns when they arrive.
func (l *link) transfer(t int64, bytes int64) int64 {
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
			ready = max(ready, d.free)
		}
	}
	move := nsFor(bytes, l.rate())
	done := core.AddTime(ready, move)
	for _, d := range l.dev {
		if d != nil {
			held := nsFor(bytes, d.bw)
			d.free = core.AddTime(ready, held)
			d.busy += held
			d.bytes += bytes
			d.transfers++
		}
	}
	l.pipe = done
	l.lanes[lane] = done
	l.bytes += bytes
	l.transfers++
	l.busy += move
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

// backlog is how long a transfer issued at now waits for the pipe, a free
// slot or a shared device before its own bytes start moving, beyond its
// latency.
func (l *link) backlog(now int64) int64 {
	free := l.lanes[0]
	for _, f := range l.lanes[1:] {
		free = min(free, f)
	}
	start := max(now, free)
	ready := max(core.AddTime(start, l.latency), l.pipe)
	for _, d := range l.dev {
		if d != nil {
			ready = max(ready, d.free)
		}
	}
	return ready - core.AddTime(now, l.latency)
}
