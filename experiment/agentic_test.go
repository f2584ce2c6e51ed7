package experiment

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"kvsim/cluster"
	"kvsim/core"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// TestAgenticClosedLoop replays a generated agentic trace (sessions of
// calls in a tree, tool waits, branches) closed-loop on two instances:
// every call arrives exactly its tool wait after the call it follows
// finished, which is checked after every simulator event: no call has
// arrived before its parent finished plus its wait.
func TestAgenticClosedLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentic.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.AgenticConfig{Seed: 5, BlockTokens: 512, Sessions: 12, RatePerSec: 2, Depth: 3, Fanout: 2,
		SystemTokens: 1024, TaskTokens: 700, ToolTokens: 300, OutputTokens: 40, ToolWaitSec: 0.5}
	if err := trace.GenerateAgentic(f, cfg); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sc := load(t, "../scenarios/quickstart.toml", "workload.trace="+path, "workload.mode=closed")
	rd, err := OpenTrace(context.Background(), sc, TraceOptions(sc, false, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	src := workload.NewSource(rd, trace.NewDict())
	closed, err := workload.NewClosed(src)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 12 * 15 // 1 + 2 + 4 + 8 a session
	if closed.Requests() != calls || closed.Roots() != 12 {
		t.Fatalf("%d calls, %d roots", closed.Requests(), closed.Roots())
	}
	// The trace's own links: call -> (parent call, wait), by line.
	parent, wait := map[int64]int64{}, map[int64]int64{}
	rd2, err := trace.Open(path, trace.Options{BlockTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	var q trace.Request
	for seq := int64(0); rd2.Next(&q) == nil; seq++ {
		parent[seq], wait[seq] = int64(q.Parent)-1, q.Think
	}
	rd2.Close()
	done := map[int64]int64{}
	arrived := map[int64]int64{}
	var sims []*sim.Sim
	check := func() {
		for seq, at := range arrived {
			p := parent[seq]
			if p < 0 {
				continue
			}
			d, ok := done[p]
			if !ok || at != d+wait[seq] {
				t.Fatalf("call %d arrived at %d; its parent %d done %v at %d, wait %d", seq, at, p, ok, d, wait[seq])
			}
		}
	}
	ccfg := cluster.Config{Router: mustRouter(t, "llmd_precise"), Setup: func(_ int, s *sim.Sim) {
		sims = append(sims, s)
		s.OnEvent(func(*sim.Sim) { check() })
	}}
	for range 2 {
		ccfg.Instances = append(ccfg.Instances, SimConfig(sc, sc.Policies[0], nil))
	}
	res, err := cluster.Run(closed, ccfg, func(_ int, r *core.Record) {
		arrived[r.Seq] = r.Arrival
		done[r.Seq] = r.Done
		check()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != calls || len(res.Regret) != calls {
		t.Fatalf("%d calls finished, %d routed", len(done), len(res.Regret))
	}
}

func mustRouter(t *testing.T, name string) cluster.Router {
	t.Helper()
	r, err := cluster.NewRouter(name, cluster.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAgenticSessionsSummary: a closed-loop run of agentic sessions
// reports each session's makespan and the TTFT of its calls by depth.
func TestAgenticSessionsSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentic.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.AgenticConfig{Seed: 2, BlockTokens: 512, Sessions: 6, RatePerSec: 1, Depth: 2, Fanout: 3,
		SystemTokens: 1024, TaskTokens: 700, ToolTokens: 300, OutputTokens: 30, ToolWaitSec: 1}
	if err := trace.GenerateAgentic(f, cfg); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sc := load(t, "../scenarios/quickstart.toml", "workload.trace="+path, "workload.mode=closed")
	sum, err := Run(context.Background(), sc, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := sum.Policies[0].Sessions
	if s == nil || s.Sessions != 6 || len(s.TTFTByDepthMs) != 3 {
		t.Fatalf("sessions %+v", s)
	}
	// A session waits at least two tool waits' worth of calls: its
	// makespan exceeds its calls' own work, and every depth has a TTFT.
	if !(s.MakespanS.Mean > 0) || s.MakespanS.Max < s.MakespanS.Mean {
		t.Fatalf("makespan %+v", s.MakespanS)
	}
	for d, q := range s.TTFTByDepthMs {
		if !(q.Mean > 0) {
			t.Fatalf("depth %d: %+v", d, q)
		}
	}
	// Without sessions, none.
	plain, err := Run(context.Background(), load(t, "../scenarios/quickstart.toml"), Options{Workers: 1, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Policies[0].Sessions != nil {
		t.Fatal("sessions on an open-loop run")
	}
}
