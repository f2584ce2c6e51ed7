package sim

import (
	"fmt"
	"testing"
)

// TestLinkLanes pins the link model by hand: 10 kB transfers over a 10 MB/s
// pipe (1 ms of bytes each) with 100 us latency. One lane pays the latency
// every time; two lanes hide it behind the previous transfer's bytes; the
// pipe's bandwidth is never multiplied, and a lone transfer gets all of it.
func TestLinkLanes(t *testing.T) {
	for _, tc := range []struct {
		lanes int
		want  string
	}{
		{1, "[1100000 2200000 3300000] 300000"},
		{2, "[1100000 2100000 3100000] 0"},
		{8, "[1100000 2100000 3100000] 0"},
	} {
		l := &link{bw: 1e7, latency: 100_000, lanes: make([]int64, tc.lanes)}
		var done []int64
		for range 3 {
			done = append(done, l.transfer(0, 10_000))
		}
		// A fourth transfer issued at 3 ms: with one lane it waits for the
		// third to finish (3.3 ms); with two, a slot is free and its latency
		// ends just as the pipe does (3.1 ms): no wait beyond the latency.
		got := fmt.Sprint(done, l.backlog(3_000_000))
		if got != tc.want {
			t.Errorf("%d lanes: done, backlog at 3 ms = %s, want %s", tc.lanes, got, tc.want)
		}
		if l.busy != 3_000_000 {
			t.Errorf("%d lanes: pipe busy %d ns, want 3 ms", tc.lanes, l.busy)
		}
	}
}
