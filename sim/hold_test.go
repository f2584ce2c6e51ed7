package sim

import (
	"testing"

	"kvsim/core"
	"kvsim/policy"
)

// TestEvictedHBMHeldUntilDrained works a case by hand. Blocks are 30
// tokens of 1000 bytes (30 kB); HBM holds two; the HBM->DRAM link moves
// 10 MB/s after 100 us of latency, so a block crosses it in 3.1 ms; the
// GPU computes 100k tokens/s (30 tokens: 0.3 ms). R0 (blocks A, B, no
// output) runs from 0 to 0.6 ms and leaves HBM full of its cached blocks.
// R1 (block C) arrives at 1 ms: A, least recently used, is demoted.
//
//   - landed (HoldEvicted): A's HBM is free once its copy has crossed the
//     link, at 1 + 0.1 + 3.0 = 4.1 ms; R1 is admitted then and computes
//     0.3 ms: first token at 4.4 ms, TTFT 3.4 ms, 3.1 ms of it queueing.
//   - evict (the old model): R1 is admitted into A's HBM at 1 ms, while
//     A is still being copied out: TTFT 0.3 ms.
//
// Either way R2 (block B again, arriving at 5 ms) hits B in HBM: the hold
// delays, it does not change what is cached.
func TestEvictedHBMHeldUntilDrained(t *testing.T) {
	for _, engine := range []Engine{EngineSimple, EngineBatched} {
		for _, tc := range []struct {
			name  string
			hold  bool
			ttft1 int64
		}{
			{"landed", true, 3_400_000},
			{"evict", false, 300_000},
		} {
			cfg := Config{
				Core: core.Config{
					Tiers:         []core.Tier{{Name: "hbm", Capacity: 60_000}, {Name: "dram", Capacity: 1 << 20}},
					BytesPerToken: 1000, BlockTokens: 30, HoldEvicted: tc.hold,
					NewPolicy: func(_ int, c int64) (policy.Policy, error) {
						return policy.New("lru", policy.Config{Capacity: c})
					},
				},
				Links: []LinkSpec{{From: 0, To: 1, Bandwidth: 1e7, Latency: 100_000}},
				// Batched: a step of n prompt tokens takes n x 10 us, as the rate.
				GPU: GPUSpec{Engine: engine, PrefillTokensPerSec: 100_000, DecodeTokensPerSec: 1000, Layers: 1,
					MaxBatchedTokens: 8192, Step: LinearStep{CPrefill: 10_000}},
			}
			var recs []core.Record
			s, err := New(cfg, func(r *core.Record) { recs = append(recs, *r) })
			if err != nil {
				t.Fatal(err)
			}
			res := runChecked(t, s, []core.Request{
				{Seq: 0, Arrival: 0, InputTokens: 60, Blocks: []core.Block{0, 1}},
				{Seq: 1, Arrival: 1 * ms, InputTokens: 30, Blocks: []core.Block{2}},
				{Seq: 2, Arrival: 5 * ms, InputTokens: 30, Blocks: []core.Block{1}},
			})
			got := map[int64]core.Record{}
			for _, r := range recs {
				got[r.Seq] = r
			}
			if r := got[0]; r.TTFT() != 600_000 {
				t.Errorf("engine %d %s: R0 TTFT %d, want 0.6 ms", engine, tc.name, r.TTFT())
			}
			if r := got[1]; r.TTFT() != tc.ttft1 || r.QueueNs() != tc.ttft1-300_000 {
				t.Errorf("engine %d %s: R1 TTFT %d queue %d, want %d and %d", engine, tc.name, r.TTFT(), r.QueueNs(), tc.ttft1, tc.ttft1-300_000)
			}
			if r := got[2]; r.HitBlocks[0] != 1 || r.TTFT() != 10_000 {
				t.Errorf("engine %d %s: R2 hits %v TTFT %d, want B in HBM, one token: 10 us", engine, tc.name, r.HitBlocks, r.TTFT())
			}
			if res.Stats.Demotions[0] != 1 || (tc.hold && res.Stats.PeakDraining != 30_000) || (!tc.hold && res.Stats.PeakDraining != 0) {
				t.Errorf("engine %d %s: %d demotions, %d bytes drained at the peak", engine, tc.name, res.Stats.Demotions[0], res.Stats.PeakDraining)
			}
		}
	}
}
