package sim

import (
	"fmt"
	"testing"

	"kvsim/core"
	"kvsim/policy"
)

// TestGPUNotHeldByLoad is the reproduction: A's whole prompt is
// cached in DRAM (one 9.86 MB block: 0.1 ms + 98.6 ms on the link, 98.7 ms)
// and computes one token; B arrives 1 ms later with 512 new tokens (5.12 ms
// at 100k tokens/s) and nothing to load. A used to hold the GPU through its
// load, giving B a TTFT of 102.8 ms instead of 5.12 ms.
func TestGPUNotHeldByLoad(t *testing.T) {
	const block = 1000 * 9860
	for _, tc := range []struct {
		name         string
		serial       bool
		layers       int
		bArrival     int64
		ttftA, ttftB int64
		loadWaitA    int64
	}{
		// Serial: A may start once its load landed (98.7 ms); B runs from
		// 1 ms to 6.12 ms meanwhile. A: 98.7 ms + 10 us.
		{"serial", true, 1, 1 * ms, 98_710_000, 5_120_000, 98_700_000},
		// Layer-wise (32 layers): A may start once the first layer's share
		// landed, 98.7/32 = 3.084375 ms; B, ready at 1 ms, goes first. A
		// starts at 6.12 ms and ends at max(6.13 ms, 98.7 ms + 10 us/32).
		{"layerwise", false, 32, 1 * ms, 98_700_313, 5_120_000, 98_700_000},
		// Layer-wise, B arriving at 4 ms: A started at 3.084375 ms (its
		// first layer had landed) and holds the GPU to 98.700313 ms.
		{"layerwise late", false, 32, 4 * ms, 98_700_313, 98_700_313 + 5_120_000 - 4*ms, 98_700_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{
				Core: core.Config{
					Tiers:         []core.Tier{{Name: "hbm", Capacity: 100 << 20}, {Name: "dram", Capacity: 100 << 20}},
					BytesPerToken: 9860, BlockTokens: 1000,
					NewPolicy: func(_ int, c int64) (policy.Policy, error) {
						return policy.New("lru", policy.Config{Capacity: c})
					},
				},
				Links: []LinkSpec{{From: 0, To: 1, Bandwidth: 1e8, Latency: 100_000}},
				GPU:   GPUSpec{PrefillTokensPerSec: 100_000, DecodeTokensPerSec: 1000, Layers: tc.layers, Serial: tc.serial},
			}
			var recs []core.Record
			s, err := New(cfg, func(r *core.Record) { recs = append(recs, *r) })
			if err != nil {
				t.Fatal(err)
			}
			const X, Y = 0, 1
			if !s.Core().Preload(1, X, block) {
				t.Fatal("preload refused")
			}
			runChecked(t, s, []core.Request{
				{Seq: 0, Arrival: 0, InputTokens: 1000, Blocks: []core.Block{X}},
				{Seq: 1, Arrival: tc.bArrival, InputTokens: 512, Blocks: []core.Block{Y}},
			})
			ttft := map[int64]int64{}
			for _, r := range recs {
				ttft[r.Seq] = r.TTFT()
				if r.Seq == 0 && (r.LoadWaitNs != tc.loadWaitA || r.LoadNs != 98_700_000 || r.RecomputedTokens != 1) {
					t.Errorf("A: load wait %d load %d recomputed %d, want %d, 98.7 ms, 1", r.LoadWaitNs, r.LoadNs, r.RecomputedTokens, tc.loadWaitA)
				}
			}
			if ttft[0] != tc.ttftA || ttft[1] != tc.ttftB {
				t.Errorf("TTFT A %d B %d, want %d %d", ttft[0], ttft[1], tc.ttftA, tc.ttftB)
			}
		})
	}
}

// TestPreemptResumeByHand: on the tiny system with 40 kB of HBM, R0 (one
// prompt block, 30 output tokens) and R1 (one block, 20 output tokens) grow
// their KV a block at a time until HBM runs out; R1, admitted last, is
// preempted mid-block and recomputes what it had generated.
//
//	 0     R0 admitted (A), prefill 1 ms
//	 1     R0 decodes: block 1 (20 kB used), tokens 1..10 end at 11
//	 2     R1 admitted (B), prefill to 3 ms
//	 3     R1 decodes: block 1 (40 kB), tokens 1..10 end at 13
//	11     R0 needs block 2: 40 kB pinned, so R1 (admitted last) is
//	       preempted; it had generated 8 tokens (3..11 ms). B stays cached.
//	13     R1's stale event is ignored
//	21     R0 needs block 3: B (unpinned) is demoted to DRAM
//	31     R0 done; R1 admitted again: its output block back, B loaded from
//	       DRAM (0.1 + 1 ms), lands 32.1; prefill of 1 prompt token + 8
//	       recomputed ones, 0.9 ms (serial): 33.0
//	33     R1 resumes at token 9: tokens 9..10 end at 35, 11..20 at 45
func TestPreemptResumeByHand(t *testing.T) {
	cfg := tiny(true, 1, "lru")
	cfg.Core.Tiers[0].Capacity = 40_000
	const A, B = 0, 1
	res, recs := runTiny(t, cfg, []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 10, OutputTokens: 30, Blocks: []core.Block{A}},
		{Seq: 1, Arrival: 2 * ms, InputTokens: 10, OutputTokens: 20, Blocks: []core.Block{B}},
	})
	type row struct {
		seq, first, done, compute, load, loadWait int64
		preemptions                               int
	}
	var got []row
	for _, r := range recs {
		got = append(got, row{r.Seq, r.FirstToken, r.Done, r.ComputeNs, r.LoadNs, r.LoadWaitNs, r.Preemptions})
	}
	want := []row{
		{0, 1 * ms, 31 * ms, 1 * ms, 0, 0, 0},
		{1, 3 * ms, 45 * ms, 1_900_000, 1_100_000, 1_100_000, 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("(seq first done compute load loadwait preemptions)\n got %v\nwant %v", got, want)
	}
	st := res.Stats
	if st.Preemptions != 1 || st.ResumeTokens != 8 || fmt.Sprint(st.Demotions) != "[1 0]" || fmt.Sprint(st.Promotions) != "[0 1]" {
		t.Errorf("preemptions %d resume tokens %d demotions %v promotions %v", st.Preemptions, st.ResumeTokens, st.Demotions, st.Promotions)
	}
	if res.End != 45*ms {
		t.Errorf("end %d", res.End)
	}
}
