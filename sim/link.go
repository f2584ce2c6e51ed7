package sim

import "math"

// link is one direction of a connection between two tiers: a FIFO queue
// served by `lanes` parallel lanes, each with bandwidth/lanes. A transfer
// takes latency + bytes/lane bandwidth on the lane that frees up first.
type link struct {
	name     string
	from, to int
	bw       float64 // bytes/s per lane
	latency  int64
	lanes    []int64 // time each lane becomes free

	bytes     int64
	transfers int64
	busy      int64 // lane-ns spent serving
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
	d := l.latency + int64(math.Ceil(float64(bytes)*1e9/l.bw))
	l.lanes[lane] = start + d
	l.bytes += bytes
	l.transfers++
	l.busy += d
	return start + d
}
