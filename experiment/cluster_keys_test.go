package experiment

import (
	"context"
	"testing"

	"kvsim/core"
	"kvsim/sim"
)

// TestViewDelay: kv_cost routed by a view an hour late (longer than the
// 400 requests take to arrive) sees an empty, idle cluster at every
// arrival, so every cost ties and every request goes to instance 0; with
// the exact view the requests spread. A zero delay is the exact view.
func TestViewDelay(t *testing.T) {
	run := func(sets ...string) ([]int64, float64) {
		sets = append(sets, "cluster.router=kv_cost")
		sc := load(t, "../scenarios/cluster_routers.toml", sets...)
		sum, err := Run(context.Background(), sc, Options{Limit: 400, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		p := sum.Policies[0]
		return p.Router.Decisions, p.HitRatio
	}
	exact, exactHit := run()
	zero, zeroHit := run("cluster.view_delay=0s")
	late, _ := run("cluster.view_delay=3600s")
	if exact[0] == 400 || zeroHit != exactHit || zero[0] != exact[0] {
		t.Fatalf("exact view: decisions %v, hit %v; zero delay: %v, %v", exact, exactHit, zero, zeroHit)
	}
	if late[0] != 400 {
		t.Fatalf("a view an hour late: decisions %v, want all 400 on instance 0", late)
	}
}

// TestClosedLoop: the sessions fixture replayed open and closed. Line 4
// (Seq 2) follows line 1 (Seq 0) in session "a" with a delay of 250 ms,
// line 5 (Seq 3) follows line 2 (Seq 1) with no delay: the 2.5 s gap of
// their timestamps. Open, every request arrives at its trace time;
// closed, Seq 2 arrives 250 ms after Seq 0 is done and Seq 3 2.5 s after
// Seq 1 is done, the others at their trace times (cluster's
// TestClosedLoopByHand times a slow first turn by hand).
func TestClosedLoop(t *testing.T) {
	run := func(sets ...string) map[int64]core.Record {
		sets = append(sets, "workload.trace=../trace/testdata/mooncake_sessions.jsonl")
		sc := load(t, "../scenarios/quickstart.toml", sets...)
		recs := map[int64]core.Record{}
		_, err := Run(context.Background(), sc, Options{Workers: 1, OnRecord: func(p int, r *core.Record) {
			if p == 0 {
				recs[r.Seq] = *r
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 5 {
			t.Fatalf("%d records", len(recs))
		}
		return recs
	}
	open := run()
	for seq, at := range map[int64]int64{0: 0, 1: 500e6, 2: 2000e6, 3: 3000e6, 4: 3500.5e6} {
		if open[seq].Arrival != at {
			t.Fatalf("open: request %d arrived at %d, want %d", seq, open[seq].Arrival, at)
		}
	}
	closed := run("workload.mode=closed")
	want := map[int64]int64{0: 0, 1: 500e6, 2: closed[0].Done + 250e6, 3: closed[1].Done + 2500e6, 4: 3500.5e6}
	for seq, at := range want {
		if closed[seq].Arrival != at {
			t.Fatalf("closed: request %d arrived at %d, want %d", seq, closed[seq].Arrival, at)
		}
	}
	if closed[2].Arrival == open[2].Arrival {
		t.Fatal("closed and open give request 2 the same arrival: the test shows nothing")
	}
}

// TestReverseLatencyZero: a link's reverse_latency = "0s" is zero, not the
// forward latency (the simulator reads a zero it is not told was meant as
// "same as forward").
func TestReverseLatencyZero(t *testing.T) {
	sc := load(t, "../scenarios/hbm_dram.toml", "link.hbm-dram.latency=10us", "link.hbm-dram.reverse_latency=0s")
	s, err := sim.New(SimConfig(sc, sc.Policies[0], nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if fwd, back := s.PredictNs(0, 1, 0), s.PredictNs(1, 0, 0); fwd != 10_000 || back != 0 {
		t.Fatalf("latency hbm->dram %d ns, dram->hbm %d ns; want 10000 and 0", fwd, back)
	}
}
