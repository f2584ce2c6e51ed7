package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/core/sched"
	"kvsim/internal/coretest"
	"kvsim/policy"
	"kvsim/trace"
	"kvsim/workload"
)

// flat is the hand-checked step model: 1 us per step, 10 ns per prompt
// token, 100 ns per decoding sequence; context and attention free.
var flat = LinearStep{C0: 1000, CPrefill: 10, CDecode: 100}

// batchedTiny: 1 kB per token, 4-token blocks, a big HBM, a DRAM tier
// behind a 1 MB/s link (4 ms per block), and a budget of 8 tokens a step.
func batchedTiny() Config {
	return Config{
		Core: core.Config{
			Tiers:         []core.Tier{{Name: "hbm", Capacity: 1 << 20}, {Name: "dram", Capacity: 1 << 20}},
			BytesPerToken: 1000, BlockTokens: 4,
			NewPolicy: func(_ int, c int64) (policy.Policy, error) {
				return policy.New("lru", policy.Config{Capacity: c})
			},
		},
		Links: []LinkSpec{{From: 0, To: 1, Bandwidth: 1e6}},
		GPU:   GPUSpec{Engine: EngineBatched, MaxBatchedTokens: 8, Step: flat},
	}
}

type stepRec struct {
	start int64
	b     StepBatch
}

func (r stepRec) String() string {
	return fmt.Sprintf("t=%d P%d/%d D%d ctx%d pairs%g", r.start, r.b.PrefillTokens, r.b.PrefillSeqs, r.b.DecodeSeqs, r.b.ContextTokens, r.b.AttnPairs)
}

// runBatched replays reqs, after preload (if any) has filled lower tiers,
// and returns the steps as they started, the records by Seq and the result.
func runBatched(t *testing.T, cfg Config, reqs []core.Request, preload func(c *core.Core)) ([]stepRec, map[int64]core.Record, *Result) {
	t.Helper()
	recs := map[int64]core.Record{}
	s, err := New(cfg, func(r *core.Record) {
		c := *r
		c.HitBlocks = nil
		recs[r.Seq] = c
	})
	if err != nil {
		t.Fatal(err)
	}
	if preload != nil {
		preload(s.Core())
	}
	var steps []stepRec
	s.eng.onStep = func(start int64, b *StepBatch) { steps = append(steps, stepRec{start, *b}) }
	res, err := s.Run(&coretest.Slice{Reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Core().Check(); err != nil {
		t.Fatal(err)
	}
	return steps, recs, res
}

func checkSteps(t *testing.T, got []stepRec, want []string) {
	t.Helper()
	var g []string
	for _, s := range got {
		g = append(g, s.String())
	}
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

func checkTimes(t *testing.T, r core.Record, first, done int64) {
	t.Helper()
	if r.FirstToken != first || r.Done != done {
		t.Errorf("request %d: first token %d, done %d; want %d, %d", r.Seq, r.FirstToken, r.Done, first, done)
	}
}

// TestBatchedChunkedPrefill: a 20-token prompt under an 8-token budget
// runs in three chunks, then decodes one token per step.
func TestBatchedChunkedPrefill(t *testing.T) {
	reqs := []core.Request{{Seq: 0, InputTokens: 20, OutputTokens: 3, Blocks: []core.Block{0, 1, 2, 3, 4}}}
	steps, recs, res := runBatched(t, batchedTiny(), reqs, nil)
	checkSteps(t, steps, []string{
		"t=0 P8/1 D0 ctx0 pairs36",     // 1000 + 8x10 = 1080; pairs 8x9/2
		"t=1080 P8/1 D0 ctx8 pairs100", // +1080 = 2160; pairs 8x8 + 36
		"t=2160 P4/1 D0 ctx16 pairs74", // 1000 + 4x10 = 1040 -> 3200 (first token); 4x16 + 10
		"t=3200 P0/0 D1 ctx20 pairs21", // 1000 + 100 = 1100 -> 4300 (token 2)
		"t=4300 P0/0 D1 ctx21 pairs22", // -> 5400 (token 3: done)
	})
	checkTimes(t, recs[0], 3200, 5400)
	// TPOT (5400-3200)/(3-1) = 1100; E2E 5400.
	if res.Steps != 5 || res.TPOT.Max() != 1100 || res.E2E.Max() != 5400 || res.OutputTokens != 3 {
		t.Errorf("steps %d, tpot %d, e2e %d, output tokens %d", res.Steps, res.TPOT.Max(), res.E2E.Max(), res.OutputTokens)
	}
}

// TestBatchedDecodeFirst: a running decode is served before a newly ready
// prompt, which takes what is left of the budget.
func TestBatchedDecodeFirst(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 4, OutputTokens: 3, Blocks: []core.Block{0}},
		{Seq: 1, Arrival: 500, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{1, 2, 3}},
	}
	steps, recs, _ := runBatched(t, batchedTiny(), reqs, nil)
	checkSteps(t, steps, []string{
		"t=0 P4/1 D0 ctx0 pairs10", // 1000 + 40 = 1040: A's first token; B arrives at 500 and waits
		// A decodes (1 token, pairs 4+1), B gets the 7 left (pairs 7x8/2):
		// 1000 + 70 + 100 = 1170 -> 2210
		"t=1040 P7/1 D1 ctx4 pairs33",
		// A again, then B's last 5 (ctx 5 + 7, pairs 6 + 5x7 + 15):
		// 1000 + 50 + 100 = 1150 -> 3360
		"t=2210 P5/1 D1 ctx12 pairs56",
	})
	checkTimes(t, recs[0], 1040, 3360) // token 3 at 3360
	checkTimes(t, recs[1], 3360, 3360) // one output token: done with its prefill
}

// TestBatchedLoadBesideBatch: a request whose whole prompt is in DRAM
// loads for 16 ms without holding the GPU: one arriving 1 ns later runs
// at once. The loaded prompt then computes its last token only.
func TestBatchedLoadBesideBatch(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 16, OutputTokens: 1, Blocks: []core.Block{0, 1, 2, 3}},
		{Seq: 1, Arrival: 1, InputTokens: 4, OutputTokens: 1, Blocks: []core.Block{10}},
	}
	steps, recs, res := runBatched(t, batchedTiny(), reqs, func(c *core.Core) {
		for b := range core.Block(4) {
			if !c.Preload(1, b, 4000) {
				t.Fatal("preload")
			}
		}
	})
	checkSteps(t, steps, []string{
		"t=1 P4/1 D0 ctx0 pairs10", // B: 1000 + 40 = 1040 -> 1041
		// A: 4 blocks of 4 kB at 1 MB/s, one after another, land at 16 ms;
		// it computes token 16 after 15 cached: 1000 + 10 -> 16,001,010
		"t=16000000 P1/1 D0 ctx15 pairs16",
	})
	checkTimes(t, recs[1], 1041, 1041)
	checkTimes(t, recs[0], 16_001_010, 16_001_010)
	if lw := recs[0].LoadWaitNs; lw != 16_000_000 {
		t.Errorf("load wait %d, want 16 ms", lw)
	}
	if res.LoadWait.Max() != 16_000_000 {
		t.Errorf("load wait hist max %d", res.LoadWait.Max())
	}
}

// TestBatchedFullyCached: a prompt entirely in HBM still computes its last
// token, so its TTFT is one step, never 0.
func TestBatchedFullyCached(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: 1, Blocks: []core.Block{0, 1}},
		{Seq: 1, Arrival: 10_000, InputTokens: 8, OutputTokens: 1, Blocks: []core.Block{0, 1}},
	}
	steps, recs, _ := runBatched(t, batchedTiny(), reqs, nil)
	checkSteps(t, steps, []string{
		"t=0 P8/1 D0 ctx0 pairs36",    // 1000 + 80 -> 1080
		"t=10000 P1/1 D0 ctx7 pairs8", // 1000 + 10 -> 11010
	})
	checkTimes(t, recs[1], 11_010, 11_010)
}

// TestBatchedPreemptResume: two requests decode in a 5-block HBM until
// the second one's token 6 needs a fifth block: no room is left, so it
// (admitted last) is preempted, waits for the first to finish, and then
// prefills again: its last prompt token (the rest is still cached) plus
// the 5 tokens it had generated, and decodes on from there.
func TestBatchedPreemptResume(t *testing.T) {
	cfg := batchedTiny()
	cfg.Core.Tiers = []core.Tier{{Name: "hbm", Capacity: 5 * 4000}}
	cfg.Links = nil
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 4, OutputTokens: 9, Blocks: []core.Block{0}},
		{Seq: 1, Arrival: 1, InputTokens: 4, OutputTokens: 9, Blocks: []core.Block{1}},
	}
	steps, recs, res := runBatched(t, cfg, reqs, nil)
	checkSteps(t, steps, []string{
		"t=0 P4/1 D0 ctx0 pairs10", // A: 1040; B arrives at 1
		// Grow(A, 1): A's first output block (3 of 5 used). 1000 + 40 + 100
		"t=1040 P4/1 D1 ctx4 pairs15",
		// Grow(B, 1): B's first output block (4 of 5). 1000 + 2x100 = 1200 a step
		"t=2180 P0/0 D2 ctx9 pairs11",
		"t=3380 P0/0 D2 ctx11 pairs13",
		"t=4580 P0/0 D2 ctx13 pairs15",
		"t=5780 P0/0 D2 ctx15 pairs17", // Grow(A, 5): A's second output block (5 of 5)
		// Grow(B, 5) finds nothing to evict: B, admitted last, is preempted
		// (its prompt block stays cached, its output block is freed).
		// A alone: 1000 + 100
		"t=6980 P0/0 D1 ctx9 pairs10",
		"t=8080 P0/0 D1 ctx10 pairs11",
		// A's token 9 at 10280: done; B re-admitted with 2 pages, enough
		// for the 5 tokens it recomputes and 3 more
		"t=9180 P0/0 D1 ctx11 pairs12",
		// B: 1 prompt token after 3 cached, plus its 5 generated tokens:
		// 1000 + 6x10 = 1060; pairs 6x3 + 6x7/2
		"t=10280 P6/1 D0 ctx3 pairs39",
		// B's tokens 7, 8, 9: 1100 each
		"t=11340 P0/0 D1 ctx9 pairs10",
		"t=12440 P0/0 D1 ctx10 pairs11",
		"t=13540 P0/0 D1 ctx11 pairs12",
	})
	checkTimes(t, recs[0], 1040, 10280)
	checkTimes(t, recs[1], 2180, 14640) // the first token is the first prefill's
	if recs[0].Preemptions != 0 || recs[1].Preemptions != 1 || res.Stats.Preemptions != 1 || res.Stats.ResumeTokens != 5 {
		t.Errorf("preemptions %d, %d, total %d; resume tokens %d", recs[0].Preemptions, recs[1].Preemptions,
			res.Stats.Preemptions, res.Stats.ResumeTokens)
	}
}

// TestBatchedPreemptVLLMOrder pins a preemption against vLLM v1's
// Scheduler.schedule in a 6-block HBM: the decode that joined the running
// list last is preempted; the step that preempted starts no new prompt (D,
// ready, waits one step); the victim goes back to the head of the queue,
// ahead of E, which arrived later and would fit alone; it is admitted again
// at the first completion where it fits, reserving pages for every token
// it recomputes, so it is not preempted again by its own next token.
func TestBatchedPreemptVLLMOrder(t *testing.T) {
	cfg := batchedTiny()
	cfg.Core.Tiers = []core.Tier{{Name: "hbm", Capacity: 6 * 4000}}
	cfg.Links = nil
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 4, OutputTokens: 9, Blocks: []core.Block{0}},    // A
		{Seq: 1, Arrival: 1, InputTokens: 4, OutputTokens: 9, Blocks: []core.Block{1}},    // B
		{Seq: 2, Arrival: 6000, InputTokens: 4, OutputTokens: 1, Blocks: []core.Block{2}}, // D
		{Seq: 3, Arrival: 7000, InputTokens: 4, OutputTokens: 1, Blocks: []core.Block{3}}, // E
	}
	steps, recs, res := runBatched(t, cfg, reqs, nil)
	checkSteps(t, steps, []string{
		"t=0 P4/1 D0 ctx0 pairs10",    // A: 1000 + 40 -> 1040; B arrives at 1
		"t=1040 P4/1 D1 ctx4 pairs15", // A's first page (3 of 6 blocks); A + B's prompt: 1140
		"t=2180 P0/0 D2 ctx9 pairs11", // B's first page (4 of 6); 1000 + 2x100 = 1200 a step
		"t=3380 P0/0 D2 ctx11 pairs13",
		"t=4580 P0/0 D2 ctx13 pairs15",
		// A's second page (5 of 6); D arrives at 6000 and takes the last
		// block for its prompt
		"t=5780 P0/0 D2 ctx15 pairs17",
		// B's second page: nothing is free or evictable, so B, the tail
		// of the running list, is preempted (its prompt block stays
		// cached, its page is freed). D is ready but waits: A alone,
		// 1000 + 100. E arrives at 7000 and queues behind B: B needs its
		// cached block and 2 pages (8000 bytes), 4000 are free.
		"t=6980 P0/0 D1 ctx9 pairs10",
		// D's prompt beside A: 1000 + 40 + 100 -> 9220, D's only token.
		// D done: B's block and 2 pages fit (D's cached block evicted).
		"t=8080 P4/1 D1 ctx10 pairs21",
		// B: its last prompt token after 3 cached, plus its 5 generated
		// tokens: 1000 + 60 + 100; pairs A 12 + B 6x3 + 6x7/2 = 51.
		// A's token 9 at 10380: done; E fits now.
		"t=9220 P6/1 D1 ctx14 pairs51",
		// B's token 7 needs no page (2 held: 8 tokens), E's prompt: 1140
		"t=10380 P4/1 D1 ctx9 pairs20",
		"t=11520 P0/0 D1 ctx10 pairs11", // B's token 8, then 9 at 13720
		"t=12620 P0/0 D1 ctx11 pairs12",
	})
	checkTimes(t, recs[0], 1040, 10380)
	checkTimes(t, recs[1], 2180, 13720) // its first token is the first prefill's
	checkTimes(t, recs[2], 9220, 9220)
	checkTimes(t, recs[3], 11520, 11520)
	if recs[0].Preemptions != 0 || recs[1].Preemptions != 1 || res.Stats.Preemptions != 1 || res.Stats.ResumeTokens != 5 {
		t.Errorf("preemptions %d, %d, total %d; resume tokens %d", recs[0].Preemptions, recs[1].Preemptions,
			res.Stats.Preemptions, res.Stats.ResumeTokens)
	}
}

// TestBatchedPreemptRunOrder: the victim is the decode that joined the
// running list last (vLLM v1 pops the tail of its running list), not the
// one admitted last. B is admitted before C, but its prompt block loads
// from DRAM (1 us), so C's prompt runs first and B joins after it.
func TestBatchedPreemptRunOrder(t *testing.T) {
	cfg := batchedTiny()
	cfg.Core.Tiers[0].Capacity = 6 * 4000
	cfg.Links = []LinkSpec{{From: 0, To: 1, Bandwidth: 4e9}} // a 4 kB block in 1 us
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 4, OutputTokens: 9, Blocks: []core.Block{0}},  // A
		{Seq: 1, Arrival: 1, InputTokens: 4, OutputTokens: 9, Blocks: []core.Block{10}}, // B, in DRAM
		{Seq: 2, Arrival: 2, InputTokens: 4, OutputTokens: 9, Blocks: []core.Block{20}}, // C
	}
	steps, recs, res := runBatched(t, cfg, reqs, func(c *core.Core) {
		if !c.Preload(1, 10, 4000) {
			t.Fatal("preload")
		}
	})
	checkSteps(t, steps, []string{
		"t=0 P4/1 D0 ctx0 pairs10", // A: 1040; C ready at 2, B's block lands at 1001
		// A's first page; C's prompt, then B's last token after 3 loaded:
		// 1000 + 50 + 100; pairs 5 + 10 + (3 + 1)
		"t=1040 P5/2 D1 ctx7 pairs19",
		"t=2190 P0/0 D3 ctx13 pairs16", // C's and B's first pages: HBM full (6 blocks); 1300 a step
		"t=3490 P0/0 D3 ctx16 pairs19",
		"t=4790 P0/0 D3 ctx19 pairs22",
		// A's second page: B, the last to join, is preempted (before this
		// change C, the last admitted, was)
		"t=6090 P0/0 D2 ctx15 pairs17",
		"t=7290 P0/0 D2 ctx17 pairs19", // C's second page evicts B's cached block
		"t=8490 P0/0 D2 ctx19 pairs21",
		// A's token 9 at 10890: done; B fits (its block and one page) and
		// loads its block again, landing at 11890
		"t=9690 P0/0 D2 ctx21 pairs23",
		"t=10890 P0/0 D1 ctx11 pairs12", // C's token 9 at 11990: done
		// B: its last prompt token and 4 generated ones after 3 cached:
		// 1000 + 50; pairs 5x3 + 5x6/2
		"t=11990 P5/1 D0 ctx3 pairs30",
		"t=13040 P0/0 D1 ctx8 pairs9", // B's second page; tokens 6 to 9, 1100 each
		"t=14140 P0/0 D1 ctx9 pairs10",
		"t=15240 P0/0 D1 ctx10 pairs11",
		"t=16340 P0/0 D1 ctx11 pairs12",
	})
	checkTimes(t, recs[0], 1040, 10890)
	checkTimes(t, recs[1], 2190, 17440)
	checkTimes(t, recs[2], 2190, 11990)
	if recs[1].Preemptions != 1 || recs[2].Preemptions != 0 || res.Stats.Preemptions != 1 || res.Stats.ResumeTokens != 4 {
		t.Errorf("preemptions B %d, C %d, total %d; resume tokens %d", recs[1].Preemptions, recs[2].Preemptions,
			res.Stats.Preemptions, res.Stats.ResumeTokens)
	}
	if recs[1].LoadWaitNs != 2000 { // its block, twice
		t.Errorf("B's load wait %d, want 2000", recs[1].LoadWaitNs)
	}
}

// TestStepModels pins both step models against hand computation.
func TestStepModels(t *testing.T) {
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6*math.Abs(want) {
			t.Errorf("%s: %.3f ns, want %.3f", name, got, want)
		}
	}
	l := LinearStep{C0: 3, CPrefill: 5, CDecode: 7, CCtx: 11, CAttn: 0.5}
	// 3 + 5x100 + 7x4 + 11x1000 + 0.5x6000 = 14531
	near("linear", l.StepNs(&StepBatch{PrefillTokens: 100, PrefillSeqs: 2, DecodeSeqs: 4, ContextTokens: 1000, AttnPairs: 6000}), 14531)

	// llama-3.1-8b on one H100 SXM: 8.03e9 parameters, 16.06 GB of bf16
	// weights, 32 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 bytes =
	// 131072 bytes of KV per token, 4 x 32 layers x 32 heads x 128 =
	// 524288 attention FLOPs per pair; 989 TFLOP/s x 0.5, 3.35 TB/s x 0.8.
	r := RooflineStep{PeakFLOPs: 989e12, HBMBandwidth: 3.35e12, ComputeEff: 0.5, MemoryEff: 0.8,
		Params: 8.03e9, WeightBytes: 16.06e9, AttnFLOPsPerPair: 524288, KVBytesPerToken: 131072}
	// One decode, no context: bytes 16.06e9 + 131072 over 2.68e12 B/s =
	// 5,992,586.22 ns; FLOPs 2 x 8.03e9 + 524288 over 4.945e14 = 32.5 us:
	// memory-bound, the decode floor of about 5.99 ms.
	near("roofline decode", r.StepNs(&StepBatch{DecodeSeqs: 1, AttnPairs: 1}), 5_992_586.220895522)
	// A full 8192-token prefill: FLOPs 2 x 8.03e9 x 8192 + 524288 x
	// 8192x8193/2 = 1.49157853528064e14 over 4.945e14 = 301.63 ms, beyond
	// the 6.39 ms of its bytes: compute-bound.
	near("roofline prefill", r.StepNs(&StepBatch{PrefillTokens: 8192, PrefillSeqs: 1, AttnPairs: 8192 * 8193 / 2}), 301_633_677.5087239)
	r.OverheadNs = 2e6
	near("roofline overhead", r.StepNs(&StepBatch{DecodeSeqs: 1, AttnPairs: 1}), 7_992_586.220895522)

	// The legacy rates: 200k prompt tokens/s, 50 tokens/s per request,
	// 0.5 ns per attention pair.
	if got := LegacyStep(200_000, 50, 0.5); got != (LinearStep{C0: 20e6, CPrefill: 5000, CAttn: 0.5}) {
		t.Errorf("legacy step %+v", got)
	}
}

// TestBatchedLegacyRates: with only the old rates, a lone prompt's TTFT is
// one decode interval plus its old prefill time (rate and attention), and
// each further token one decode interval.
func TestBatchedLegacyRates(t *testing.T) {
	cfg := batchedTiny()
	cfg.GPU = GPUSpec{Engine: EngineBatched, PrefillTokensPerSec: 1e6, DecodeTokensPerSec: 1000, AttentionNsPerToken2: 2}
	reqs := []core.Request{{Seq: 0, InputTokens: 8, OutputTokens: 3, Blocks: []core.Block{0, 1}}}
	_, recs, _ := runBatched(t, cfg, reqs, nil)
	// prefill: 1e6 (one token at 1000/s) + 8 x 1000 + 2 x 36 pairs = 1,008,072;
	// decodes: 1e6 + 2 x 9 pairs = 1,000,018, then 1e6 + 2 x 10 = 1,000,020.
	checkTimes(t, recs[0], 1_008_072, 1_008_072+1_000_018+1_000_020)
}

// runnable counts the running requests that can take part in a step: all
// but decodes whose next page waits for draining HBM.
func runnable(e *engine) int {
	n := 0
	for _, id := range e.sch.Running() {
		if q := e.sch.Seq(id); q.State != sched.Decode || q.Gen <= q.Room {
			n++
		}
	}
	return n
}

// randomScenario is a small seeded system and trace: conversations share
// prefixes, HBM is tight enough to queue, prompts exceed the budget; even
// seeds hold evicted HBM until its copy has left.
func randomScenario(seed uint64) (Config, []core.Request) {
	rng := rand.New(rand.NewPCG(seed, 7))
	cfg := batchedTiny()
	cfg.Core.Tiers[0].Capacity = int64(20+rng.IntN(30)) * 4000
	cfg.Core.Tiers[1].Capacity = int64(60+rng.IntN(100)) * 4000
	cfg.Core.MaxRunning = rng.IntN(5)
	cfg.Core.HoldEvicted = seed%2 == 0 // evicted HBM held until its copy left, or free at once
	cfg.GPU.MaxBatchedTokens = []int{4, 8, 16, 64}[rng.IntN(4)]
	if rng.IntN(2) == 0 {
		cfg.GPU.Step = LinearStep{C0: 1000, CPrefill: 10, CDecode: 100, CCtx: 1, CAttn: 0.01}
	}
	return cfg, coretest.Conversations(rng, 80)
}

// preemptTee checks each preemption as the core reports it: the victim is
// the decode that joined the running list last. It counts prefills issued
// and preemptions.
type preemptTee struct {
	t                   *testing.T
	s                   *Sim
	prefills, preempted int64
}

func (p *preemptTee) Move(int64, core.ReqID, core.Block, int64, int, int, core.MoveKind) {}
func (p *preemptTee) Drop(int64, core.Block, int)                                        {}
func (p *preemptTee) Prefill(int64, core.ReqID, int, int)                                { p.prefills++ }
func (p *preemptTee) Decode(int64, core.ReqID, int)                                      {}
func (p *preemptTee) Wake(int64, core.ReqID)                                             {}
func (p *preemptTee) Preempted(now int64, id core.ReqID) {
	p.preempted++
	e := p.s.eng
	after := false
	for _, r := range e.sch.Running() {
		if r == id {
			after = true
		} else if after && e.sch.Seq(r).State == sched.Decode {
			p.t.Errorf("t=%d: request slot %d preempted before %d, which joined the running list after it", now, id, r)
		}
	}
	if !after {
		p.t.Errorf("t=%d: request slot %d preempted but not running", now, id)
	}
}

// TestBatchedInvariants replays random scenarios and checks, after every
// event: the GPU is busy whenever a request is ready or running, no link
// idles while a transfer ready for it waits, and the core's accounting
// holds (it panics if HBM is ever over capacity); at every step, that
// decodes come first and that a step that preempted starts no prompt; at
// each preemption, that the victim joined the running list last; at the
// end: every request finished, in order of its own times, some were
// preempted, each preempted request was issued again once per preemption,
// and a second run gives the same output.
func TestBatchedInvariants(t *testing.T) {
	var preempted, loaded, drainWaits, growWaits int64
	for seed := range uint64(40) {
		cfg, reqs := randomScenario(seed)
		run := func() string {
			var out strings.Builder
			n := 0
			var recPreempts int64
			tee := &preemptTee{t: t}
			cfg.Tee = tee
			s, err := New(cfg, func(r *core.Record) {
				n++
				recPreempts += int64(r.Preemptions)
				if r.Rejected {
					t.Errorf("seed %d: request %d rejected", seed, r.Seq)
				}
				if !(r.Arrival < r.FirstToken && r.FirstToken <= r.Done) {
					t.Errorf("seed %d: request %d: arrival %d, first token %d, done %d", seed, r.Seq, r.Arrival, r.FirstToken, r.Done)
				}
				fmt.Fprintf(&out, "%d %d %d %d %d %d\n", r.Seq, r.Admitted, r.FirstToken, r.Done, r.RecomputedTokens, r.Preemptions)
			})
			if err != nil {
				t.Fatal(err)
			}
			s.OnEvent(func(s *Sim) {
				e := s.eng
				if !e.sch.Busy() && (runnable(e) > 0 || e.sch.ReadyLen() > 0) {
					t.Fatalf("seed %d: GPU idle at %d with %d running, %d ready", seed, s.Now(), len(e.sch.Running()), e.sch.ReadyLen())
				}
				if err := s.Core().Check(); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if err := linksBusy(s); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			})
			// Decodes first: a step that computes prompt tokens carries
			// every decoding request, and at most one prompt is left
			// part-way (the one that took the rest of the budget).
			tee.s = s
			s.eng.onStep = func(start int64, b *StepBatch) {
				e := s.eng
				decoding, partial := 0, 0
				for _, id := range e.sch.Batch() {
					if e.sch.StepPreempted() && e.sch.Seq(id).First == start {
						t.Fatalf("seed %d: step at %d preempted and started a prompt", seed, start)
					}
				}
				for _, id := range e.sch.Running() {
					switch q := e.sch.Seq(id); {
					case q.State == sched.Decode && q.Gen <= q.Room: // not waiting for draining HBM
						decoding++
					case q.State == sched.Prefill && q.Left > q.Chunk:
						partial++
					}
				}
				if b.PrefillTokens > 0 && b.DecodeSeqs != decoding || partial > 1 {
					t.Fatalf("seed %d: step at %d: %d of %d decodes beside %d prompt tokens, %d prompts left part-way",
						seed, start, b.DecodeSeqs, decoding, b.PrefillTokens, partial)
				}
			}
			res, err := s.Run(&coretest.Slice{Reqs: reqs})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(reqs) || res.Stats.Requests != int64(len(reqs)) || s.Core().Running() != 0 || s.Core().Queued() != 0 {
				t.Errorf("seed %d: %d of %d requests finished", seed, n, len(reqs))
			}
			st := res.Stats
			if tee.preempted != st.Preemptions || recPreempts != st.Preemptions || tee.prefills != st.Requests+st.Preemptions {
				t.Errorf("seed %d: %d preemptions (%d reported, %d in records), %d prefills issued for %d requests",
					seed, st.Preemptions, tee.preempted, recPreempts, tee.prefills, st.Requests)
			}
			preempted += res.Stats.Preemptions
			loaded += res.MovedByKind[core.Load]
			drainWaits += res.Stats.DrainWaits
			growWaits += res.Stats.GrowWaits
			fmt.Fprintf(&out, "%+v\n", *res)
			return out.String()
		}
		if a, b := run(), run(); a != b {
			t.Errorf("seed %d: two runs differ", seed)
		}
	}
	if preempted == 0 || loaded == 0 || drainWaits == 0 || growWaits == 0 {
		t.Errorf("%d preemptions, %d bytes loaded, %d admissions and %d decodes waiting for draining HBM: the check should exercise each",
			preempted, loaded, drainWaits, growWaits)
	}
}

// TestBatchedLoneTTFT: with a huge HBM and requests far apart, a request's
// TTFT is exactly the roofline time of its prompt's new tokens in chunks,
// after the prefix earlier requests left cached (at least the last token).
func TestBatchedLoneTTFT(t *testing.T) {
	cfg := batchedTiny()
	cfg.Core.Tiers[0].Capacity = 1 << 40
	r := RooflineStep{PeakFLOPs: 989e12, HBMBandwidth: 3.35e12, ComputeEff: 0.5, MemoryEff: 0.8, OverheadNs: 1e5,
		Params: 8.03e9, WeightBytes: 16.06e9, AttnFLOPsPerPair: 524288, KVBytesPerToken: 131072}
	cfg.GPU = GPUSpec{Engine: EngineBatched, MaxBatchedTokens: 512, Step: r}
	rng := rand.New(rand.NewPCG(3, 3))
	var reqs []core.Request
	cached := map[int64]int{} // prompt tokens in HBM when the request arrives
	seen := 0                 // shared prefix blocks computed so far
	for i := range 40 {
		n := 1 + rng.IntN(3000)
		// The first s full blocks are a prefix shared by every request
		// (a system prompt of up to 750 blocks), the rest its own.
		s := 0
		if i%4 != 0 {
			s = rng.IntN(n/4 + 1)
		}
		var blocks []core.Block
		for j := range (n + 3) / 4 {
			if j < s {
				blocks = append(blocks, core.Block(1_000_000+j))
			} else {
				blocks = append(blocks, core.Block(i*1000+j))
			}
		}
		cached[int64(i)] = min(min(s, seen)*4, n-1)
		seen = max(seen, s)
		reqs = append(reqs, core.Request{Seq: int64(i), Arrival: int64(i) * 1e10, InputTokens: n, OutputTokens: 1 + rng.IntN(5), Blocks: blocks})
	}
	_, recs, _ := runBatched(t, cfg, reqs, nil)
	hits := 0
	for _, q := range reqs {
		// The new tokens in 512-token chunks, each a step of its own.
		var want int64
		for done := cached[q.Seq]; done < q.InputTokens; {
			k := min(512, q.InputTokens-done)
			fk := float64(k)
			want += int64(math.Round(r.StepNs(&StepBatch{PrefillTokens: k, PrefillSeqs: 1, ContextTokens: int64(done),
				AttnPairs: fk*float64(done) + fk*(fk+1)/2})))
			done += k
		}
		if cached[q.Seq] > 0 {
			hits++
		}
		if rec := recs[q.Seq]; rec.TTFT() != want || rec.RecomputedTokens != q.InputTokens-cached[q.Seq] {
			t.Errorf("request %d (%d tokens, %d cached): TTFT %d, recomputed %d; want %d, %d",
				q.Seq, q.InputTokens, cached[q.Seq], rec.TTFT(), rec.RecomputedTokens, want, q.InputTokens-cached[q.Seq])
		}
	}
	if hits < 10 {
		t.Errorf("only %d requests found a cached prefix", hits)
	}
}

// TestBatchedSeries: the per-step means land in the interval their step
// started in, and merging two points weighs each by its steps.
func TestBatchedSeries(t *testing.T) {
	reqs := []core.Request{{Seq: 0, InputTokens: 20, OutputTokens: 3, Blocks: []core.Block{0, 1, 2, 3, 4}}}
	s, err := New(batchedTiny(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.SampleEvery(2500)
	if _, err := s.Run(&coretest.Slice{Reqs: reqs}); err != nil {
		t.Fatal(err)
	}
	// Steps start at 0 (P8), 1080 (P8), 2160 (P4), 3200 (D1), 4300 (D1);
	// points at 2500 (sampled by the event at 3200) and 5000 (at 5400):
	// 20/3 prompt tokens a step, then 1 decode a step.
	se := s.Series()
	got := fmt.Sprint(se.Times, se.PrefillTokens, se.DecodeSeqs, se.Preemptions)
	if want := "[2500 5000] [6.666666666666667 0] [0 1] [0 0]"; got != want {
		t.Errorf("series %s, want %s", got, want)
	}
	// Merged, weighed by steps (3 and 2): 20/5 = 4 prompt tokens, 2/5
	// decodes a step (not the plain means 3.33 and 0.5).
	s.sampler.halve()
	if got, want := fmt.Sprint(se.Times, se.PrefillTokens, se.DecodeSeqs, se.Preemptions), "[5000] [4] [0.4] [0]"; got != want {
		t.Errorf("halved %s, want %s", got, want)
	}
}

// TestBatchedConfigErrors: a step model that could give negative, NaN or
// infinite times, a negative budget, or no model and no rates is refused.
func TestBatchedConfigErrors(t *testing.T) {
	for name, g := range map[string]GPUSpec{
		"negative coefficient": {Step: LinearStep{C0: 1, CDecode: -1}},
		"NaN coefficient":      {Step: &LinearStep{CPrefill: math.NaN()}},
		"zero peak":            {Step: RooflineStep{HBMBandwidth: 1, ComputeEff: 1, MemoryEff: 1}},
		"efficiency > 0":       {Step: RooflineStep{PeakFLOPs: 1, HBMBandwidth: 1, ComputeEff: 1}},
		"infinite overhead":    {Step: RooflineStep{PeakFLOPs: 1, HBMBandwidth: 1, ComputeEff: 1, MemoryEff: 1, OverheadNs: math.Inf(1)}},
		"negative budget":      {Step: flat, MaxBatchedTokens: -1},
		"no model, no rates":   {},
	} {
		cfg := batchedTiny()
		g.Engine = EngineBatched
		cfg.GPU = g
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	cfg := batchedTiny()
	cfg.GPU.MaxBatchedTokens = 0 // the default budget
	s, err := New(cfg, nil)
	if err != nil || s.eng.sch.Budget() != DefaultMaxBatchedTokens {
		t.Errorf("budget 0: %v", err)
	}
}

// TestBatchedLimits: steps that would end past the simulated-time limit
// stop the run with a LimitError naming the step model and the trace line
// of a request involved, never wrap.
func TestBatchedLimits(t *testing.T) {
	for _, c0 := range []float64{
		1e18, // each step fits, the fifth ends past 4.6e18 ns
		1e19, // one step alone is too long: refused at arrival
	} {
		cfg := batchedTiny()
		cfg.GPU.Step = LinearStep{C0: c0}
		s, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs := []core.Request{{Seq: 0, Line: 7, InputTokens: 4, OutputTokens: 9, Blocks: []core.Block{0}}}
		_, err = s.Run(&coretest.Slice{Reqs: reqs})
		var le *LimitError
		if !errors.As(err, &le) || le.Key != "gpu.step_model" || le.Line != 7 {
			t.Errorf("c0 %g: %v", c0, err)
		}
	}
}

// TestConversationBatched replays the Mooncake conversation trace on the
// batched engine with a small HBM and a tight seat limit, so requests
// queue, KV grows and requests are preempted, and checks the invariants at
// scale: the GPU never idles while a request is ready, no link idles while
// a transfer ready for it waits, the core's accounting holds, every
// request finishes once.
func TestConversationBatched(t *testing.T) {
	path := needTrace(t)
	cfg := conversationConfig("lru")
	cfg.GPU.Engine = EngineBatched
	cfg.GPU.MaxBatchedTokens = 2048
	cfg.Core.Tiers[0].Capacity = 12 << 30
	cfg.Core.Tiers[1].Capacity = 96 << 30
	cfg.Core.MaxRunning = 64
	seen := map[int64]bool{}
	s, err := New(cfg, func(r *core.Record) {
		if seen[r.Seq] {
			t.Errorf("request %d finished twice", r.Seq)
		}
		seen[r.Seq] = true
		if !r.Rejected && !(r.Arrival < r.FirstToken && r.FirstToken <= r.Done) {
			t.Errorf("request %d: arrival %d, first token %d, done %d", r.Seq, r.Arrival, r.FirstToken, r.Done)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	s.OnEvent(func(s *Sim) {
		e := s.eng
		if !e.sch.Busy() && (runnable(e) > 0 || e.sch.ReadyLen() > 0) {
			t.Fatalf("GPU idle at %d with %d running, %d ready", s.Now(), len(e.sch.Running()), e.sch.ReadyLen())
		}
		if err := linksBusy(s); err != nil {
			t.Fatal(err)
		}
		if events++; events%20000 == 0 {
			if err := s.Core().Check(); err != nil {
				t.Fatal(err)
			}
		}
	})
	r, err := trace.Open(path, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(workload.NewSource(r, trace.NewDict()))
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stats
	t.Logf("%d steps, %d preemptions, %d resume tokens, %d rejected", res.Steps, st.Preemptions, st.ResumeTokens, st.Rejected)
	if len(seen) != 12031 || st.Requests+st.Rejected != 12031 || s.Core().Running() != 0 || s.Core().Queued() != 0 {
		t.Errorf("%d requests seen, %d finished + %d rejected; %d running, %d queued", len(seen), st.Requests, st.Rejected,
			s.Core().Running(), s.Core().Queued())
	}
	if st.Preemptions == 0 || st.ResumeTokens == 0 {
		t.Error("the check should exercise preemption")
	}
	if err := s.Core().Check(); err != nil {
		t.Error(err)
	}
}
