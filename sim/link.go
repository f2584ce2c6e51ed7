package sim

import "math"

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
	lanes    []int64 // when each in-flight slot frees up
	pipe     int64   // when the pipe finishes the bytes queued so far

	bytes     int64
	transfers int64
	busy      int64 // ns the pipe spent moving bytes
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
	move := int64(math.Ceil(float64(bytes) * 1e9 / l.bw))
	done := max(start+l.latency, l.pipe) + move
	l.pipe = done
	l.lanes[lane] = done
	l.bytes += bytes
	l.transfers++
	l.busy += move
	return done
}

// backlog is how long a transfer issued at now waits for the pipe (or a
// free slot) before its own bytes start moving, beyond its latency.
func (l *link) backlog(now int64) int64 {
	free := l.lanes[0]
	for _, f := range l.lanes[1:] {
		free = min(free, f)
	}
	start := max(now, free)
	return max(start-now, l.pipe-(start+l.latency), 0)
}
