package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"kvsim/core"
	"kvsim/policy"
)

// quickLinks is the quick start's hierarchy (hbm, host, ssd) and default
// links: hbm<->host 25 GB/s and 100 ns, host<->ssd 7 GB/s and 10 us, one
// lane each; an SSD block reaches HBM through host memory.
func quickLinks() Config {
	return Config{
		Core: core.Config{
			Tiers:         []core.Tier{{Name: "hbm", Capacity: 40 << 30}, {Name: "host", Capacity: 256 << 30}, {Name: "ssd", Capacity: 2e12}},
			BytesPerToken: 128 << 10, BlockTokens: 512,
			NewPolicy: func(int, int64) (policy.Policy, error) { return policy.NewLRU(), nil },
		},
		Links: []LinkSpec{{From: 0, To: 1, Bandwidth: 25e9, Latency: 100}, {From: 1, To: 2, Bandwidth: 7e9, Latency: 10_000}},
		GPU:   GPUSpec{PrefillTokensPerSec: 100_000, DecodeTokensPerSec: 100, Layers: 32},
	}
}

// TestLoadNotBehindUnreadyHop is the reproduction: a request on an
// idle quick-start system loads its 9-block prefix, the first 3 blocks
// from the SSD and the other 6 from host memory (64 MiB blocks). Per hop:
//
//	ssd->host  10 us + ceil(67108864 B / 7 GB/s)  = 10000 + 9586981 = 9596981 ns
//	host->hbm 100 ns + ceil(67108864 B / 25 GB/s) =   100 + 2684355 = 2684455 ns
//
// The old model reserved every hop at issue time: the host->hbm hops of the
// SSD blocks took the link at 9.60, 19.19 and 28.79 ms (when each SSD read
// would end), and the six host blocks, ready at 0, queued behind those
// reservations: 28790943 + 2684455 = 31475398 ns, then 6 x 2684455 more,
// the load ending at 47582128 ns (47.6 ms) while host->hbm sat idle for
// 0..9.6 ms and between the SSD blocks. Work-conserving, the host blocks go
// first (0..16106730 ns); the SSD blocks reach host memory at 9596981,
// 19193962 and 28790943 ns and go on when host->hbm is free: 16106730 +
// 2684455 = 18791185, 19193962 + 2684455 = 21878417, 28790943 + 2684455 =
// 31475398 ns (31.5 ms), the SSD's own time plus one hop. The same holds
// when the SSD block is staged in host memory (a move ssd->host, then one
// host->hbm that waits for it to land).
func TestLoadNotBehindUnreadyHop(t *testing.T) {
	const block = 64 << 20
	for _, staged := range []bool{false, true} {
		s, err := New(quickLinks(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for b := range core.Block(3) {
			if staged {
				s.Move(0, 0, b, block, 2, 1, core.Load)
				s.Move(0, 0, b, block, 1, 0, core.Load)
			} else {
				s.Move(0, 0, b, block, 2, 0, core.Load)
			}
		}
		for b := core.Block(3); b < 9; b++ {
			s.Move(0, 0, b, block, 1, 0, core.Load)
		}
		if _, err := s.Run(emptySource{}); err != nil {
			t.Fatal(err)
		}
		var hbm []int64
		for b := range 9 {
			hbm = append(hbm, s.landed[b*s.nt])
		}
		want := []int64{18791185, 21878417, 31475398, 2684455, 5368910, 8053365, 10737820, 13422275, 16106730}
		if rt := s.req[0]; rt.loadDone != 31475398 || !slices.Equal(hbm, want) {
			t.Errorf("staged=%v: loads done at %d ns, blocks in HBM at %v; want 31475398 ns, %v", staged, rt.loadDone, hbm, want)
		}
	}
}

// TestPrefillWaitsForLoads: a prefill issued while its request's loads are
// on the links starts when they land (the simple engine's layer-wise
// pipeline then overlaps what it can), and loadsLanded fires once, when
// the last one lands.
func TestPrefillWaitsForLoads(t *testing.T) {
	s, err := New(quickLinks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var calls []int64
	s.onHop = func(p hopPhase, l *link, x *xfer, now int64) {
		if p == hopEnd && x.req == 3 && x.hop == len(s.route[x.from][x.to])-1 && s.req[3].pending == 1 {
			calls = append(calls, now)
		}
	}
	s.Move(0, 3, 0, 64<<20, 2, 0, core.Load)
	s.Move(0, 3, 1, 64<<20, 1, 0, core.Load)
	s.Prefill(0, 3, 1024, 1)
	if s.heap.len() != 2 { // the two moves' first hops; no prefill yet
		t.Fatalf("%d events queued, want the two hops only", s.heap.len())
	}
	runLinks(t, s, 12281436, nil) // to the last landing; the prefill's end is then queued
	rt := s.req[3]
	// Loads land at 9596981 + 2684455 = 12281436 ns; one token at 100k
	// tokens/s is 10 us, and layer-wise its last layer's share (10 us / 32)
	// follows the last byte: 12281436 + 313 = 12281749 ns.
	if fmt.Sprint(calls, rt.pending, rt.phase != phaseIdle, rt.timing.LoadNs, s.gpu) != "[12281436] 0 false 12281436 12281749" {
		t.Errorf("last load %v, pending %d, held %v, load %d ns, prefill ends %d; want [12281436] 0 false 12281436 12281749",
			calls, rt.pending, rt.phase != phaseIdle, rt.timing.LoadNs, s.gpu)
	}
}

// teeLog records the commands a Tee receives, with their times.
type teeLog struct{ got []string }

func (l *teeLog) Move(now int64, req core.ReqID, b core.Block, bytes int64, from, to int, kind core.MoveKind) {
	l.got = append(l.got, fmt.Sprintf("%d move %d %d->%d", now, b, from, to))
}
func (l *teeLog) Drop(int64, core.Block, int) {}
func (l *teeLog) Prefill(now int64, req core.ReqID, cached, compute int) {
	l.got = append(l.got, fmt.Sprintf("%d prefill %d", now, req))
}
func (l *teeLog) Decode(int64, core.ReqID, int) {}
func (l *teeLog) Wake(int64, core.ReqID)        {}
func (l *teeLog) Preempted(int64, core.ReqID)   {}

// TestTeeGetsCommandsAsIssued: the real driver layer gets every command
// when the core issues it, not when the simulated links get to it: a move
// out of host memory waiting for its block to land there, and a prefill
// held for its loads, are both passed on at 0.
func TestTeeGetsCommandsAsIssued(t *testing.T) {
	cfg := quickLinks()
	tee := &teeLog{}
	cfg.Tee = tee
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Move(0, 2, 0, 64<<20, 2, 1, core.Load)
	s.Move(0, 2, 0, 64<<20, 1, 0, core.Load)
	s.Prefill(0, 2, 512, 1)
	runLinks(t, s, 12281436, nil)
	if got := fmt.Sprint(tee.got); got != "[0 move 0 2->1 0 move 0 1->0 0 prefill 2]" {
		t.Errorf("tee got %s", got)
	}
	if s.req[2].pending != 0 || s.req[2].phase != phaseIdle || landedAt(s, 0, 0) != 12281436 {
		t.Errorf("block in HBM at %d, want 12281436 (9596981 + 2684455)", landedAt(s, 0, 0))
	}
}

// TestEstimateLoadIsBacklog: the core's cost model gets the wait a
// transfer issued now would have. Three 64 MiB blocks from host memory are
// queued at 0 on host->hbm (one lane, 2684455 ns each with its 100 ns
// latency); at 1 ms a fourth would wait for the lane until 8053365 ns, so
// its bytes would start at 8053465 ns: 7053365 ns after 1 ms + its own
// latency. Issued, it lands at 8053365 + 2684455 = 10737820 ns.
func TestEstimateLoadIsBacklog(t *testing.T) {
	s, err := New(quickLinks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for b := range core.Block(3) {
		s.Move(0, core.Background, b, 64<<20, 1, 0, core.Demote)
	}
	runLinks(t, s, 1_000_000, nil)
	backlog, service := s.EstimateLoad(1_000_000, 1, 64<<20)
	s.Move(1_000_000, core.Background, 3, 64<<20, 1, 0, core.Demote)
	runLinks(t, s, core.MaxTime, nil)
	if backlog != 7053365 || service != 2684455 || landedAt(s, 3, 0) != 10737820 {
		t.Errorf("estimate %d + %d ns, landed at %d; want 7053365 + 2684455, 10737820", backlog, service, landedAt(s, 3, 0))
	}
}

// TestLinksWorkConserving replays random move sequences on random
// hierarchies (chains with a shortcut, lanes, latencies, shared devices,
// moves staged through a tier that is still receiving the block) and
// checks at every event that no link or device idles while a transfer
// ready for it waits, that each link serves ready transfers first come
// first served, that every transfer starts exactly when the last thing it
// waited for ended, that without shared devices the queue does what its
// projection (EstimateLoad's model) said, and at the end that every move
// landed and every byte went over each hop of its route once.
func TestLinksWorkConserving(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkLinksRandom(t, seed) })
	}
}

func checkLinksRandom(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 12))
	nt := 3 + rng.IntN(2)
	tiers := []string{"hbm", "host", "ssd", "remote"}[:nt]
	var links []LinkSpec
	for i := 0; i+1 < nt; i++ {
		links = append(links, LinkSpec{From: i, To: i + 1, Bandwidth: 1e8 * float64(1+rng.IntN(50)),
			ReverseBandwidth: 1e8 * float64(rng.IntN(50)), Latency: int64(rng.IntN(4)) * 20_000,
			ReverseLatency: int64(rng.IntN(3)) * 5_000, Lanes: 1 + rng.IntN(3)})
	}
	if rng.IntN(2) == 0 {
		links = append(links, LinkSpec{From: 0, To: nt - 1, Bandwidth: 1e9, Latency: 50_000, Lanes: 2})
	}
	shared := make([]float64, nt)
	devices := seed%3 != 0 // a third of the runs check the projection instead
	if devices {
		for i := 1; i < nt; i++ {
			if rng.IntN(2) == 0 {
				shared[i] = 1e8 * float64(1+rng.IntN(30))
			}
		}
	}
	s := linkSim(t, tiers, links, shared)

	// Random moves: background moves between any tiers, and requests'
	// loads into HBM, some staged through a middle tier.
	var moves []mv
	var now int64
	perHop := make([]int64, len(s.links))
	wantLoads := map[core.ReqID]int{}
	intoHBM := map[core.ReqID]int64{}
	add := func(m mv) {
		moves = append(moves, m)
		for _, li := range s.route[m.from][m.to] {
			perHop[li] += m.bytes
		}
		if m.req >= 0 {
			wantLoads[m.req]++
			if m.to == 0 {
				intoHBM[m.req] += m.bytes
			}
		}
	}
	for range 200 + rng.IntN(200) {
		if rng.IntN(3) == 0 {
			now += int64(rng.IntN(3_000_000))
		}
		b := core.Block(rng.IntN(30))
		bytes := int64(1 + rng.IntN(4<<20))
		from, to := rng.IntN(nt), rng.IntN(nt)
		if from == to {
			continue
		}
		switch rng.IntN(4) {
		case 0: // a load staged through tier 1
			if from < 2 {
				continue
			}
			req := core.ReqID(rng.IntN(5))
			add(mv{now, req, b, bytes, from, 1, core.Load})
			add(mv{now, req, b, bytes, 1, 0, core.Load})
		case 1:
			if from == 0 {
				continue
			}
			add(mv{now, core.ReqID(rng.IntN(5)), b, bytes, from, 0, core.Load})
		default:
			add(mv{now, core.Background, b, bytes, from, to, core.Demote})
		}
	}

	// What the hooks see: per link, the start order; per link and device,
	// when the pipe last ended; every landing.
	lastSeq := make([]uint64, len(s.links))
	pipeEnd := make([]int64, len(s.links))
	devEnd := map[*device]int64{}
	ends := make([][]int64, len(s.links)) // when each link's hops ended
	type landing struct {
		b    core.Block
		tier int
	}
	lands := map[landing][]int64{}
	lastLoad := map[core.ReqID]int64{}
	var hops, landedMoves int
	index := func(l *link) int { return slices.Index(s.links, l) }
	s.onHop = func(p hopPhase, l *link, x *xfer, now int64) {
		li := index(l)
		switch p {
		case hopStart:
			hops++
			if x.seq <= lastSeq[li] {
				t.Fatalf("t=%d %s: hop joined %d starts after %d: not first come first served", now, l.name, x.seq, lastSeq[li])
			}
			lastSeq[li] = x.seq
			// It starts exactly when the last thing it waited for
			// ended: its latency, its pipe, its devices.
			want := max(x.ready, pipeEnd[li])
			for _, d := range l.dev {
				if d != nil {
					want = max(want, devEnd[d])
				}
			}
			if now != want {
				t.Fatalf("t=%d %s: a transfer ready for the pipe at %d starts at %d, not %d", now, l.name, x.ready, now, want)
			}
			pipeEnd[li] = now + nsFor(x.bytes, l.rate())
			for _, d := range l.dev {
				if d != nil {
					devEnd[d] = now + nsFor(x.bytes, d.bw)
				}
			}
			// Its lane came when it joined or when another transfer
			// left one.
			if lane := x.ready - l.latency; lane != x.enq && (lane < x.enq || !slices.Contains(ends[li], lane)) {
				t.Fatalf("t=%d %s: lane taken at %d, the hop joined at %d and no lane freed then", now, l.name, lane, x.enq)
			}
			if x.hop == 0 && x.enq != x.issued && !slices.Contains(lands[landing{x.block, x.from}], x.enq) {
				t.Fatalf("t=%d %s: a move issued at %d started at %d, when no copy of its source landed", now, l.name, x.issued, x.enq)
			}
		case hopEnd:
			ends[li] = append(ends[li], now)
			if !devices && now != x.plan {
				t.Fatalf("t=%d %s: hop ends at %d, its link's projection said %d", now, l.name, now, x.plan)
			}
			if x.hop == len(s.route[x.from][x.to])-1 {
				landedMoves++
				k := landing{x.block, x.to}
				lands[k] = append(lands[k], now)
				if x.req >= 0 {
					lastLoad[x.req] = max(lastLoad[x.req], now)
				}
			}
		}
	}
	check := func() {
		if err := linksBusy(s); err != nil {
			t.Fatal(err)
		}
	}
	// A move issued while the latest move into its source has not landed
	// must wait for it: per kind of move, how many were issued and how
	// many of them had to wait; the hook counts those that started at
	// once. latest holds the latest move into each copy until it lands.
	type moveKey struct {
		at       int64
		b        core.Block
		from, to int
	}
	issued, mustWait, atOnce := map[moveKey]int{}, map[moveKey]int{}, map[moveKey]int{}
	latest := map[landing]moveKey{}
	onHop := s.onHop
	s.onHop = func(p hopPhase, l *link, x *xfer, now int64) {
		onHop(p, l, x, now)
		if p == hopStart && x.hop == 0 && x.enq == x.issued {
			atOnce[moveKey{x.issued, x.block, x.from, x.to}]++
		}
		if k := (landing{x.block, x.to}); p == hopEnd && x.hop == len(s.route[x.from][x.to])-1 && latest[k] == (moveKey{x.issued, x.block, x.from, x.to}) {
			delete(latest, k)
		}
	}
	for _, m := range moves {
		runLinks(t, s, m.at, check)
		s.now = m.at
		k := moveKey{m.at, m.b, m.from, m.to}
		issued[k]++
		if _, ok := latest[landing{m.b, m.from}]; ok {
			mustWait[k]++
		}
		latest[landing{m.b, m.to}] = k
		s.Move(m.at, m.req, m.b, m.bytes, m.from, m.to, m.kind)
		check()
	}
	runLinks(t, s, core.MaxTime, check)
	for k, n := range atOnce {
		if n > issued[k]-mustWait[k] {
			t.Errorf("%+v: %d moves started at once, but %d of %d had to wait for their source to land", k, n, mustWait[k], issued[k])
		}
	}

	if landedMoves != len(moves) {
		t.Errorf("%d of %d moves landed", landedMoves, len(moves))
	}
	for li, l := range s.links {
		if l.bytes != perHop[li] || l.inFlight != 0 || l.waiting.head != 0 || l.laned.head != 0 {
			t.Errorf("%s: moved %d bytes, routes put %d on it; %d in flight", l.name, l.bytes, perHop[li], l.inFlight)
		}
	}
	for b := range len(s.landed) {
		if s.landed[b] < 0 {
			t.Errorf("block %d tier %d: still marked in flight", b/s.nt, b%s.nt)
		}
	}
	free := 0
	for i := s.freeX; i != 0; i = s.xfers[i-1].next {
		free++
	}
	if free != len(s.xfers) {
		t.Errorf("%d of %d transfer slots free at the end", free, len(s.xfers))
	}
	for req, n := range wantLoads {
		if rt := s.req[req]; rt.pending != 0 || rt.loadDone != lastLoad[req] || rt.loadBytes != intoHBM[req] || rt.landedBytes != intoHBM[req] {
			t.Errorf("request %d (%d loads): %d pending, loads done at %d, last landed at %d; %d of %d bytes landed in HBM, want %d",
				req, n, rt.pending, rt.loadDone, lastLoad[req], rt.landedBytes, rt.loadBytes, intoHBM[req])
		}
	}
	if hops == 0 {
		t.Error("nothing moved")
	}
}

// linksBusy reports a link or device left idle while a transfer ready for
// it waits: a lane free with transfers waiting for one, or a transfer past
// its latency whose pipe and devices are all free. It looks strictly
// before now: at now itself an event still due may be the one that
// starts it (checkLinksRandom pins start times exactly).
func linksBusy(s *Sim) error {
	for _, l := range s.links {
		if l.waiting.head != 0 && l.inFlight < len(l.lanes) {
			return fmt.Errorf("t=%d %s: %d of %d lanes taken while transfers wait for one", s.now, l.name, l.inFlight, len(l.lanes))
		}
		if l.laned.head == 0 {
			continue
		}
		x := &s.xfers[l.laned.head-1]
		idle := x.ready < s.now && l.pipeFree < s.now
		for _, d := range l.dev {
			idle = idle && (d == nil || d.free < s.now)
		}
		if idle {
			return fmt.Errorf("t=%d %s: pipe and devices free while a transfer ready since %d waits", s.now, l.name, x.ready)
		}
	}
	return nil
}
