package sim

import (
	"fmt"
	"io"
	"testing"

	"kvsim/core"
	"kvsim/policy"
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

// TestSharedDevice pins a tier's shared pipe by hand. hbm and ssd are
// joined by a 2 GB/s link each way; the ssd's own pipe is 1 GB/s. Without
// it, a 1 MB write and a 1 MB read issued together overlap (0.5 ms each,
// full duplex). With it, the pair takes the device's rate one after the
// other: the write 1 ms, the read 1 ms after it. A third link into the
// same ssd (from dram, 10 us latency) queues behind both, its latency
// hidden by the wait; the model's idle-path prediction takes the device's
// rate.
func TestSharedDevice(t *testing.T) {
	for _, tc := range []struct {
		shared float64
		want   string
	}{
		{0, "write 500000 read 500000 dram 510000 backlog 500000; predict 510000"},
		{1e9, "write 1000000 read 2000000 dram 3000000 backlog 3000000; predict 1010000"},
	} {
		cfg := Config{
			Core: core.Config{Tiers: []core.Tier{{Name: "hbm", Capacity: 1 << 30}, {Name: "ssd", Capacity: 1 << 30}, {Name: "dram", Capacity: 1 << 30}},
				BytesPerToken: 1, BlockTokens: 1, NewPolicy: func(int, int64) (policy.Policy, error) { return policy.NewLRU(), nil }},
			Links: []LinkSpec{{From: 0, To: 1, Bandwidth: 2e9}, {From: 2, To: 1, Bandwidth: 2e9, Latency: 10_000}},
			GPU:   GPUSpec{PrefillTokensPerSec: 1, DecodeTokensPerSec: 1},
		}
		cfg.SharedBandwidth = []float64{0, tc.shared}
		s, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		hop := func(a, b int) *link { return s.links[s.route[a][b][0]] }
		w := hop(0, 1).transfer(0, 1e6)
		r := hop(1, 0).transfer(0, 1e6)
		// dram->ssd has 10 us of latency, hidden behind the device's queue.
		d := hop(2, 1).transfer(0, 1e6)
		got := fmt.Sprintf("write %d read %d dram %d backlog %d; predict %d", w, r, d, hop(1, 0).backlog(0), s.PredictNs(2, 1, 1e6))
		if got != tc.want {
			t.Errorf("shared %g: %s, want %s", tc.shared, got, tc.want)
		}
		if tc.shared > 0 {
			res, err := s.Run(emptySource{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Devices) != 1 || res.Devices[0].Name != "ssd" || res.Devices[0].Bytes != 3e6 || res.Devices[0].BusyNs != 3_000_000 {
				t.Errorf("devices: %+v", res.Devices)
			}
		}
	}
	bad := Config{Core: core.Config{Tiers: []core.Tier{{Name: "hbm", Capacity: 1}}}, GPU: GPUSpec{PrefillTokensPerSec: 1, DecodeTokensPerSec: 1},
		SharedBandwidth: []float64{-1}}
	if _, err := New(bad, nil); err == nil {
		t.Error("negative shared bandwidth accepted")
	}
}

type emptySource struct{}

func (emptySource) Next(*core.Request) error { return io.EOF }
