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

// TestIdleRankAgentic replays agentic sessions closed-loop through
// scenarios/agentic_idle.toml's policies with the core's accounting checked
// after every simulator event (every block's copies and bytes counted once,
// no tier past its capacity): every call finishes under each policy, and
// idle ranking moves HBM's choices (the hits it serves differ from plain
// lru's).
func TestIdleRankAgentic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentic.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.AgenticConfig{Seed: 3, BlockTokens: 512, Sessions: 40, RatePerSec: 1, Depth: 5, Fanout: 1,
		SystemTokens: 1024, TaskTokens: 4000, ToolTokens: 1500, OutputTokens: 50, ToolWaitSec: 5}
	if err := trace.GenerateAgentic(f, cfg); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sc := load(t, "../scenarios/agentic_idle.toml", "workload.trace="+path, "tier.hbm.capacity=12GiB", "tier.dram.capacity=64GiB")
	hbmHits := map[string]int64{}
	for _, p := range sc.Policies {
		rd, err := OpenTrace(context.Background(), sc, TraceOptions(sc, false, 0))
		if err != nil {
			t.Fatal(err)
		}
		closed, err := workload.NewClosed(workload.NewSource(rd, trace.NewDict()))
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := closed.SetIdle(p.IdleRank); err != nil {
			t.Fatal(err)
		}
		ccfg := cluster.Config{Router: &oneInstance{}, Instances: []sim.Config{SimConfig(sc, p, nil)},
			Setup: func(_ int, s *sim.Sim) {
				s.OnEvent(func(s *sim.Sim) {
					if err := s.Core().Check(); err != nil {
						t.Fatalf("%s at %d ns: %v", p.Name, s.Now(), err)
					}
				})
			}}
		done := 0
		res, err := cluster.Run(closed, ccfg, func(_ int, r *core.Record) {
			if !r.Rejected {
				done++
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if done != closed.Requests() {
			t.Fatalf("%s: %d of %d calls finished", p.Name, done, closed.Requests())
		}
		hbmHits[p.Name] = res.Total().Stats.Hits[0]
	}
	if hbmHits["lru-idle-oracle"] == hbmHits["lru"] {
		t.Errorf("idle ranking changed nothing: HBM hits %v", hbmHits)
	}
	t.Logf("HBM hits %v", hbmHits)
}

// TestSlidingWindowWired: a model with sliding-window layers gives the
// cluster its window (the View's window residency, llmd_precise's hybrid
// rule); full attention and chunked local attention give none.
func TestSlidingWindowWired(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   int
	}{
		{"gemma-3-27b", 1024}, // 5 sliding layers of 6
		{"llama-3.1-8b", 0},
		{"llama-4-scout", 0}, // chunked, not sliding
	} {
		sc := load(t, "../scenarios/cluster_routers.toml", "model.preset="+tc.preset, "cluster.router=llmd_precise")
		cc, err := ClusterConfig(sc, SimConfig(sc, sc.Policies[0], nil))
		if err != nil {
			t.Fatal(err)
		}
		if cc.SlidingWindow != tc.want || slidingWindow(sc) != tc.want {
			t.Errorf("%s: window %d, want %d", tc.preset, cc.SlidingWindow, tc.want)
		}
	}
}
