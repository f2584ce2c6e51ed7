package sim

import (
	"fmt"
	"io"
	"testing"

	"kvsim/core"
	"kvsim/policy"
)

// linkSim is a simulator over the named tiers and links whose core is
// asked nothing: the tests issue moves themselves.
func linkSim(t *testing.T, tiers []string, links []LinkSpec, shared []float64) *Sim {
	t.Helper()
	cfg := Config{
		Core: core.Config{BytesPerToken: 1, BlockTokens: 1,
			NewPolicy: func(int, int64) (policy.Policy, error) { return policy.NewLRU(), nil }},
		Links: links, SharedBandwidth: shared,
		GPU: GPUSpec{PrefillTokensPerSec: 1, DecodeTokensPerSec: 1},
	}
	for _, n := range tiers {
		cfg.Core.Tiers = append(cfg.Core.Tiers, core.Tier{Name: n, Capacity: 1 << 40})
	}
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mv is a move a test issues at a time.
type mv struct {
	at       int64
	req      core.ReqID
	b        core.Block
	bytes    int64
	from, to int
	kind     core.MoveKind
}

// runLinks processes the link events due by until, as Run does; check
// (optional) runs after each.
func runLinks(t *testing.T, s *Sim, until int64, check func()) {
	t.Helper()
	for s.heap.len() > 0 && s.heap.ev[0].t <= until {
		e := s.heap.pop()
		s.now = e.t
		switch e.kind {
		case evHop:
			s.hopDone(s.now, e.req)
		case evKick:
			s.dispatch(s.now)
		default:
			t.Fatalf("unexpected event %+v", e)
		}
		if s.err != nil {
			t.Fatal(s.err)
		}
		if check != nil {
			check()
		}
	}
}

// replayMoves issues moves (in time order) and runs the links until every
// move has landed.
func replayMoves(t *testing.T, s *Sim, moves []mv, check func()) {
	t.Helper()
	for _, m := range moves {
		runLinks(t, s, m.at, check)
		s.now = m.at
		s.Move(m.at, m.req, m.b, m.bytes, m.from, m.to, m.kind)
		if check != nil {
			check()
		}
	}
	runLinks(t, s, core.MaxTime, check)
}

// landedAt is when block b's copy landed in tier.
func landedAt(s *Sim, b core.Block, tier int) int64 { return s.landed[int(b)*s.nt+tier] }

// TestLinkLanes pins the link model by hand: 10 kB transfers over a 10 MB/s
// pipe (1 ms of bytes each) with 100 us latency, all ready at 0. One lane
// pays the latency every time; two lanes hide it behind the previous
// transfer's bytes; the pipe's bandwidth is never multiplied, and a lone
// transfer gets all of it.
func TestLinkLanes(t *testing.T) {
	for _, tc := range []struct {
		lanes int
		want  string
	}{
		{1, "[1100000 2200000 3300000] 300000"},
		{2, "[1100000 2100000 3100000] 0"},
		{8, "[1100000 2100000 3100000] 0"},
	} {
		s := linkSim(t, []string{"hbm", "dram"}, []LinkSpec{{From: 0, To: 1, Bandwidth: 1e7, Latency: 100_000, Lanes: tc.lanes}}, nil)
		for b := range core.Block(3) {
			s.Move(0, core.Background, b, 10_000, 0, 1, core.Demote)
		}
		// A fourth transfer ready at 3 ms: with one lane it waits for the
		// third to finish (3.3 ms); with two, a lane is free and its
		// latency ends just as the pipe does (3.1 ms): no wait beyond the
		// latency.
		l := s.links[s.route[0][1][0]]
		backlog := l.backlog(3_000_000)
		replayMoves(t, s, nil, nil)
		got := fmt.Sprint([]int64{landedAt(s, 0, 1), landedAt(s, 1, 1), landedAt(s, 2, 1)}, backlog)
		if got != tc.want {
			t.Errorf("%d lanes: landed, backlog at 3 ms = %s, want %s", tc.lanes, got, tc.want)
		}
		if l.busy != 3_000_000 || l.bytes != 30_000 || l.transfers != 3 {
			t.Errorf("%d lanes: pipe busy %d ns, %d bytes in %d, want 3 ms, 30000 in 3", tc.lanes, l.busy, l.bytes, l.transfers)
		}
	}
}

// TestSharedDevice pins a tier's shared pipe by hand. hbm and ssd are
// joined by a 2 GB/s link each way; the ssd's own pipe is 1 GB/s. Without
// it, a 1 MB write and a 1 MB read ready together overlap (0.5 ms each,
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
		s := linkSim(t, []string{"hbm", "ssd", "dram"},
			[]LinkSpec{{From: 0, To: 1, Bandwidth: 2e9}, {From: 2, To: 1, Bandwidth: 2e9, Latency: 10_000}}, []float64{0, tc.shared})
		s.Move(0, core.Background, 0, 1e6, 0, 1, core.Demote)
		s.Move(0, core.Background, 1, 1e6, 1, 0, core.Demote)
		s.Move(0, core.Background, 2, 1e6, 2, 1, core.Demote)
		backlog := s.links[s.route[1][0][0]].backlog(0)
		replayMoves(t, s, nil, nil)
		got := fmt.Sprintf("write %d read %d dram %d backlog %d; predict %d",
			landedAt(s, 0, 1), landedAt(s, 1, 0), landedAt(s, 2, 1), backlog, s.PredictNs(2, 1, 1e6))
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

// TestSharedDeviceFCFS: when a shared device frees, the transfer that has
// been ready for it longest takes it, not the one issued first. The ssd
// (1 GB/s) is shared; hbm->ssd (2 GB/s, one lane) carries a 4 MB write A
// and a 1 MB write B, both issued at 0; a 1 MB read C on ssd->hbm is
// issued at 0 too. A holds the device 0..4 ms. B gets its link's lane only
// when A ends (4 ms), while C has waited for the device since 0: C goes
// 4..5 ms, B 5..6 ms. A dram->ssd write D issued at 6 ms (10 us latency)
// finds the device free: 6.01..7.01 ms. Reserving in call order, as the
// old model did, gave B the device at 4 ms and C at 5..6 ms.
func TestSharedDeviceFCFS(t *testing.T) {
	s := linkSim(t, []string{"hbm", "ssd", "dram"},
		[]LinkSpec{{From: 0, To: 1, Bandwidth: 2e9}, {From: 2, To: 1, Bandwidth: 2e9, Latency: 10_000}}, []float64{0, 1e9})
	replayMoves(t, s, []mv{
		{0, core.Background, 0, 4e6, 0, 1, core.Demote},
		{0, core.Background, 1, 1e6, 0, 1, core.Demote},
		{0, core.Background, 2, 1e6, 1, 0, core.Demote},
		{6_000_000, core.Background, 3, 1e6, 2, 1, core.Demote},
	}, nil)
	got := fmt.Sprintf("A %d B %d C %d D %d", landedAt(s, 0, 1), landedAt(s, 1, 1), landedAt(s, 2, 0), landedAt(s, 3, 1))
	if want := "A 4000000 B 6000000 C 5000000 D 7010000"; got != want {
		t.Errorf("landed %s, want %s", got, want)
	}
}

// TestSlowLinkLeavesDeviceFree: a transfer waiting for its own link does
// not hold a shared device it cannot use yet. The ssd (1 GB/s) is shared;
// dram->ssd is a 100 MB/s link with one lane. A 10 MB write A on it holds
// the link 0..100 ms but the device only 0..10 ms; a 1 MB write B behind
// it can move only at 100..110 ms. A 1 MB read C on ssd->hbm (2 GB/s),
// issued at 0 after both, takes the device as soon as A leaves it:
// 10..11 ms. The old model reserved the device for B at 100..101 ms when B
// was issued and put C after that reservation: C landed at 102 ms while
// the device sat idle from 10 to 100 ms.
func TestSlowLinkLeavesDeviceFree(t *testing.T) {
	s := linkSim(t, []string{"hbm", "ssd", "dram"},
		[]LinkSpec{{From: 0, To: 1, Bandwidth: 2e9}, {From: 2, To: 1, Bandwidth: 1e8}}, []float64{0, 1e9})
	replayMoves(t, s, []mv{
		{0, core.Background, 0, 10e6, 2, 1, core.Demote},
		{0, core.Background, 1, 1e6, 2, 1, core.Demote},
		{0, core.Background, 2, 1e6, 1, 0, core.Demote},
	}, nil)
	got := fmt.Sprintf("A %d B %d C %d", landedAt(s, 0, 1), landedAt(s, 1, 1), landedAt(s, 2, 0))
	if want := "A 100000000 B 110000000 C 11000000"; got != want {
		t.Errorf("landed %s, want %s", got, want)
	}
}

type emptySource struct{}

func (emptySource) Next(*core.Request) error { return io.EOF }
