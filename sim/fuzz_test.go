package sim

import (
	"fmt"
	"os"
	"testing"

	"kvsim/core"
	"kvsim/policy"
)

// FuzzCore drives the core and the simulator with arbitrary small
// workloads, hierarchies and strategies, checking the core's accounting
// after every event: nothing panics, no tier goes over capacity, every
// request finishes or is rejected.
func FuzzCore(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, again and again and again"))
	f.Add([]byte{255, 3, 7, 1, 1, 1, 2, 2, 2, 9, 9, 9, 200, 100, 50, 25, 12, 6, 3, 1, 0, 0, 0, 0})
	f.Fuzz(fuzzCore)
}

func fuzzCore(t *testing.T, data []byte) {
	{
		if len(data) < 8 {
			return
		}
		hold := len(data)%2 == 0 // evicted HBM held until drained, or free at once
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			v := int(data[0])
			data = data[1:]
			return v
		}
		names := policy.Names()
		evict := names[next()%len(names)]
		if evict == "belady" {
			evict = "lru" // needs the future; covered elsewhere
		}
		nt := 1 + next()%3
		var tiers []core.Tier
		var links []LinkSpec
		for i := 0; i < nt; i++ {
			tiers = append(tiers, core.Tier{Name: string(rune('a' + i)), Capacity: int64(20 + next()*2)})
			if i > 0 {
				links = append(links, LinkSpec{From: i - 1, To: i, Bandwidth: float64(1+next()) * 1e6, Latency: int64(next()) * 1000, Lanes: 1 + next()%3})
			}
		}
		st := core.Strategy{AdmitAfter: next() % 3, WriteThrough: next()%2 == 1,
			Promotion: core.Promotion(next() % 3), Prefetch: core.Prefetch(next() % 4), PrefetchTimeout: int64(1 + next()*1000),
			RecomputeWhenCheaper: next()%2 == 1}
		cfg := Config{
			Core: core.Config{Tiers: tiers, BytesPerToken: 1, BlockTokens: 4, Strategy: st, HoldEvicted: hold,
				NewPolicy: func(_ int, c int64) (policy.Policy, error) {
					return policy.New(evict, policy.Config{Capacity: c})
				}},
			Links: links,
			GPU:   GPUSpec{PrefillTokensPerSec: 1e6, DecodeTokensPerSec: 1e5, Layers: 1 + next()%4, Serial: next()%2 == 1},
		}
		if k := next() % 4; k > 0 && k < nt { // tier k's transfers share one pipe
			cfg.SharedBandwidth = make([]float64, nt)
			cfg.SharedBandwidth[k] = float64(1+next()) * 1e6
		}
		var reqs []core.Request
		var at int64
		for len(data) > 2 && len(reqs) < 64 {
			n := 1 + next()%6
			r := core.Request{Seq: int64(len(reqs)), OutputTokens: next() % 9}
			at += int64(next()) * 500
			r.Arrival = at
			base := core.Block(next() % 8)
			for j := 0; j < n; j++ {
				r.Blocks = append(r.Blocks, base+core.Block(next()%12))
			}
			r.InputTokens = 4*n - next()%4
			reqs = append(reqs, r)
		}
		if len(reqs) == 0 {
			return
		}
		done := 0
		s, err := New(cfg, func(r *core.Record) {
			done++
			// Times are in order, and a request that ran took time: at
			// least its last token is computed.
			if r.Arrival < 0 || r.Admitted < r.Arrival || r.PrefillStart < r.Admitted || r.FirstToken < r.PrefillStart ||
				r.Done < r.FirstToken || r.Done > core.MaxTime || (!r.Rejected && (r.TTFT() <= 0 || r.RecomputedTokens < 1)) {
				t.Fatalf("record out of order: %+v", *r)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		res := runChecked(t, s, reqs)
		if os.Getenv("KVSIM_DEBUG") != "" {
			fmt.Printf("evict=%s tiers=%+v links=%+v strategy=%+v gpu=%+v\n", evict, tiers, links, st, cfg.GPU)
			for _, r := range reqs {
				fmt.Printf("  %+v\n", r)
			}
		}
		if done != len(reqs) || s.Core().Running() != 0 || s.Core().Queued() != 0 {
			t.Fatalf("%d of %d requests finished; %d running, %d queued", done, len(reqs), s.Core().Running(), s.Core().Queued())
		}
		var hits int64
		for _, h := range res.Stats.Hits {
			hits += h
		}
		if hits+res.Stats.Misses != res.Stats.BlockAccesses {
			t.Fatalf("hits %d + misses %d != accesses %d", hits, res.Stats.Misses, res.Stats.BlockAccesses)
		}
	}
}
