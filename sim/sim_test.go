package sim

import (
	"fmt"
	"testing"

	"kvsim/core"
	"kvsim/internal/coretest"
	"kvsim/policy"
)

const ms = int64(1e6)

// tiny is the hand-checked system: 1 kB per token, 10-token blocks (10 kB),
// HBM 50 kB, DRAM 100 kB, one HBM<->DRAM link at 10 MB/s + 100 us, prefill
// 10k tokens/s (1 ms per block), decode 1000 tokens/s.
func tiny(serial bool, layers int, evict string) Config {
	return Config{
		Core: core.Config{
			Tiers:         []core.Tier{{Name: "hbm", Capacity: 50_000}, {Name: "dram", Capacity: 100_000}},
			BytesPerToken: 1000, BlockTokens: 10,
			NewPolicy: func(_ int, c int64) (policy.Policy, error) {
				return policy.New(evict, policy.Config{Capacity: c})
			},
		},
		Links: []LinkSpec{{From: 0, To: 1, Bandwidth: 1e7, Latency: 100_000}},
		GPU:   GPUSpec{PrefillTokensPerSec: 10_000, DecodeTokensPerSec: 1000, Layers: layers, Serial: serial},
	}
}

func tinyTrace() []core.Request {
	const A, B, C, D, E, F, G, H = 0, 1, 2, 3, 4, 5, 6, 7
	return []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 20, OutputTokens: 10, Blocks: []core.Block{A, B}},
		{Seq: 1, Arrival: 20 * ms, InputTokens: 30, OutputTokens: 0, Blocks: []core.Block{A, C, D}},
		{Seq: 2, Arrival: 30 * ms, InputTokens: 25, OutputTokens: 5, Blocks: []core.Block{E, F, G}},
		{Seq: 3, Arrival: 40 * ms, InputTokens: 30, OutputTokens: 0, Blocks: []core.Block{A, B, H}},
	}
}

func runTiny(t *testing.T, cfg Config, reqs []core.Request) (*Result, []core.Record) {
	t.Helper()
	var recs []core.Record
	s, err := New(cfg, func(r *core.Record) {
		c := *r
		c.HitBlocks = append([]int64(nil), r.HitBlocks...)
		recs = append(recs, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	return runChecked(t, s, reqs), recs
}

// runChecked replays reqs, checking the core's accounting after every event.
func runChecked(t *testing.T, s *Sim, reqs []core.Request) *Result {
	t.Helper()
	s.OnEvent(func(s *Sim) {
		if err := s.Core().Check(); err != nil {
			t.Fatalf("t=%d: %v", s.Now(), err)
		}
	})
	res, err := s.Run(&coretest.Slice{Reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTinyByHand pins a case worked out on paper (see tiny): LRU eviction
// order, demotion queueing on the HBM->DRAM link, promotion of two DRAM
// hits and serial vs layer-wise loading.
func TestTinyByHand(t *testing.T) {
	for _, tc := range []struct {
		serial bool
		layers int
		ttft3  int64
	}{
		{true, 1, 3_200_000},  // loads land 42.2 ms, then 1 ms compute
		{false, 2, 2_700_000}, // max(41, 42.1, 42.7) ms
	} {
		res, recs := runTiny(t, tiny(tc.serial, tc.layers, "lru"), tinyTrace())
		want := []struct {
			ttft, done, load, recomputed int64
			hits                         []int64
		}{
			{2 * ms, 12 * ms, 0, 20, []int64{0, 0}},
			{2 * ms, 22 * ms, 0, 20, []int64{1, 0}},
			{2_500_000, 37_500_000, 0, 25, []int64{0, 0}},
			{tc.ttft3, 40*ms + tc.ttft3, 2_200_000, 10, []int64{0, 2}},
		}
		if len(recs) != len(want) {
			t.Fatalf("got %d records", len(recs))
		}
		for i, w := range want {
			r := recs[i]
			got := fmt.Sprint(r.TTFT(), r.Done, r.LoadNs, r.RecomputedTokens, r.HitBlocks)
			exp := fmt.Sprint(w.ttft, w.done, w.load, w.recomputed, w.hits)
			if got != exp {
				t.Errorf("serial=%v request %d: ttft done load recomputed hits = %s, want %s", tc.serial, i, got, exp)
			}
		}
		st := res.Stats
		if st.BlockAccesses != 11 || st.Misses != 8 || fmt.Sprint(st.Hits) != "[1 2]" || st.RecomputedTokens != 75 {
			t.Errorf("stats %+v", st)
		}
		if fmt.Sprint(st.Demotions) != "[5 0]" || fmt.Sprint(st.Promotions) != "[0 2]" {
			t.Errorf("demotions %v promotions %v", st.Demotions, st.Promotions)
		}
		// B, A, then C, D, E went down; A, B came back up.
		if l := res.Links[0]; l.Name != "hbm->dram" || l.Bytes != 50_000 || l.Transfers != 5 {
			t.Errorf("down link %+v", l)
		}
		if l := res.Links[1]; l.Name != "dram->hbm" || l.Bytes != 20_000 || l.Transfers != 2 {
			t.Errorf("up link %+v", l)
		}
	}
}

// TestWaitsByHand pins dependency waits, a rejection and a queue wait on
// the tiny system (serial loading).
func TestWaitsByHand(t *testing.T) {
	const A, B, C, D, E, F, G, H, I, J = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
	reqs := []core.Request{
		// R0 computes A, B (2 ms); R1 arrives at 1 ms and needs them: it
		// waits for R0's prefill (2 ms) instead of recomputing, then computes C.
		{Seq: 0, Arrival: 0, InputTokens: 20, Blocks: []core.Block{A, B}},
		{Seq: 1, Arrival: 1 * ms, InputTokens: 30, Blocks: []core.Block{A, B, C}},
		// 40 input + 20 output tokens = 60 kB > 50 kB of HBM: never runs.
		{Seq: 2, Arrival: 10 * ms, InputTokens: 40, OutputTokens: 20, Blocks: []core.Block{D, E, F, G}},
		// R3 pins its 30 kB prompt from 10 ms, and one 10 kB block of output
		// KV from 13 ms, until 23 ms (3 ms prefill + 10 ms decode); R4 needs
		// 30 kB with 20 kB unpinned, so it queues 13 ms, then prefills 3 ms.
		{Seq: 3, Arrival: 10 * ms, InputTokens: 30, OutputTokens: 10, Blocks: []core.Block{D, E, F}},
		{Seq: 4, Arrival: 10 * ms, InputTokens: 30, Blocks: []core.Block{H, I, J}},
	}
	res, recs := runTiny(t, tiny(true, 1, "lru"), reqs)
	type row struct{ seq, queue, dep, ttft int64 }
	var got []row
	for _, r := range recs {
		got = append(got, row{r.Seq, r.QueueNs(), r.DepWaitNs(), r.TTFT()})
		if r.Seq == 2 && !r.Rejected {
			t.Errorf("request 2 should be rejected")
		}
	}
	want := []row{{0, 0, 0, 2 * ms}, {1, 0, 1 * ms, 2 * ms}, {2, 0, 0, 0}, {3, 0, 0, 3 * ms}, {4, 13 * ms, 0, 16 * ms}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("(seq queue dep ttft)\n got %v\nwant %v", got, want)
	}
	st := res.Stats
	if st.Rejected != 1 || st.Requests != 4 || st.DepWaits != 1 || st.Hits[0] != 2 {
		t.Errorf("stats %+v", st)
	}
	// A was demoted to make room for R3's prompt, B for its first output
	// block; C and D (40 kB used, 30 kB needed) for R4.
	if fmt.Sprint(st.Demotions) != "[4 0]" {
		t.Errorf("demotions %v", st.Demotions)
	}
}
