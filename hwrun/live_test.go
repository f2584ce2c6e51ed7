package hwrun

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/hw/hostmem"
	"kvsim/hw/live"
	"kvsim/hw/store"
	"kvsim/internal/coretest"
	"kvsim/policy"
	"kvsim/sim"
)

// TestLiveMatchesSimulator: the live body on a virtual clock, its moves
// taking what the simulator's one-lane links take (latency + bytes /
// bandwidth, first come first served), makes the same decisions at the
// same times as the simulator on random conversations with a tight HBM:
// one step scheduler, one core, only the bodies differ.
func TestLiveMatchesSimulator(t *testing.T) {
	var loads int64
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 11))
		cc := core.Config{
			Tiers:         []core.Tier{{Name: "hbm", Capacity: int64(12+rng.IntN(20)) * 4000}, {Name: "dram", Capacity: 1 << 30}},
			BytesPerToken: 1000, BlockTokens: 4, HoldEvicted: seed%2 == 0, MaxRunning: rng.IntN(4),
			NewPolicy: func(_ int, c int64) (policy.Policy, error) { return policy.New("lru", policy.Config{Capacity: c}) },
		}
		step := sim.LinearStep{C0: 1000, CPrefill: 10, CAttn: 0.5}
		budget := []int{8, 16, 64}[rng.IntN(3)]
		reqs := coretest.Conversations(rng, 60)
		line := func(r *core.Record) string {
			return fmt.Sprintf("%d %d %d %d %d %d %v %d\n", r.Seq, r.Admitted, r.PrefillStart, r.FirstToken, r.Done, r.LoadWaitNs, r.HitBlocks, r.Preemptions)
		}
		var want strings.Builder
		s, err := sim.New(sim.Config{Core: cc, Links: []sim.LinkSpec{{From: 0, To: 1, Bandwidth: 4e9, Latency: 500}},
			GPU: sim.GPUSpec{Engine: sim.EngineBatched, MaxBatchedTokens: budget, Step: step}}, func(r *core.Record) { want.WriteString(line(r)) })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(&coretest.Slice{Reqs: reqs}); err != nil {
			t.Fatal(err)
		}
		mem := func() store.Store {
			return hostmem.NewMemStore("test", 4096, 4, func(n int) (hostmem.Chunk, error) { return hostmem.Chunk{Mem: make([]byte, n)}, nil })
		}
		var got strings.Builder
		b, err := live.New(cc, live.Options{Stores: []store.Store{mem(), mem()}, RealBytes: func(m int64) int { return int(m) }, MaxBytes: 4096,
			Verify: true, Lanes: [][]int{{0, 1}, {1, 0}}, Step: step, Budget: budget,
			Virtual: func(_, _ int, n int64) int64 { return 500 + n/4 }}, func(r *core.Record) { got.WriteString(line(r)) })
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Run(&coretest.Slice{Reqs: reqs})
		if err != nil {
			t.Fatal(err)
		}
		b.Finish()
		b.Close()
		if got.String() != want.String() {
			g, w := strings.Split(got.String(), "\n"), strings.Split(want.String(), "\n")
			for i := range min(len(g), len(w)) {
				if g[i] != w[i] {
					t.Fatalf("seed %d: record %d: live %q, simulator %q (seq admitted prefill first done wait hits preemptions)", seed, i, g[i], w[i])
				}
			}
			t.Fatalf("seed %d: %d live records, %d simulated", seed, len(g), len(w))
		}
		for _, l := range res.Links {
			if l.From == 1 {
				loads += l.Count
			}
		}
	}
	if loads == 0 {
		t.Error("no load from DRAM in any run: the comparison exercises no move")
	}
}
