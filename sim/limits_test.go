package sim

import (
	"errors"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/internal/coretest"
)

// TestFullHitComputesLastToken: a prompt found whole in the cache still
// computes its last token (the first output token needs its logits), so
// its TTFT is never 0 and the token is counted as recomputed.
func TestFullHitComputesLastToken(t *testing.T) {
	const A, B, C, D = 0, 1, 2, 3
	// HBM hit: R1 repeats R0's prompt. One token at 10k tokens/s is 0.1 ms.
	_, recs := runTiny(t, tiny(true, 1, "lru"), []core.Request{
		{Seq: 0, Line: 1, Arrival: 0, InputTokens: 20, Blocks: []core.Block{A, B}},
		{Seq: 1, Line: 2, Arrival: 10 * ms, InputTokens: 20, Blocks: []core.Block{A, B}},
		{Seq: 2, Line: 3, Arrival: 20 * ms, InputTokens: 0}, // an empty prompt runs one token too
	})
	for i, want := range []struct{ ttft, recomputed, compute int64 }{{2 * ms, 20, 2 * ms}, {100_000, 1, 100_000}, {100_000, 1, 100_000}} {
		r := recs[i]
		if r.TTFT() != want.ttft || int64(r.RecomputedTokens) != want.recomputed || r.ComputeNs != want.compute {
			t.Errorf("request %d: ttft %d recomputed %d compute %d, want %+v", i, r.TTFT(), r.RecomputedTokens, r.ComputeNs, want)
		}
	}

	// DRAM hit: with 20 kB of HBM, R1 pushes A and B down; R2 loads both
	// back (1.1 ms and 2.2 ms on the 10 MB/s + 100 us link), then computes
	// one token: serial 2.2 + 0.1 ms; layer-wise (2 layers)
	// max(0.1, 1.1 + 0.1, 2.2 + 0.05) = 2.25 ms.
	for _, tc := range []struct {
		serial bool
		layers int
		ttft   int64
	}{{true, 1, 2_300_000}, {false, 2, 2_250_000}} {
		cfg := tiny(tc.serial, tc.layers, "lru")
		cfg.Core.Tiers[0].Capacity = 20_000
		_, recs := runTiny(t, cfg, []core.Request{
			{Seq: 0, Arrival: 0, InputTokens: 20, Blocks: []core.Block{A, B}},
			{Seq: 1, Arrival: 10 * ms, InputTokens: 20, Blocks: []core.Block{C, D}},
			{Seq: 2, Arrival: 50 * ms, InputTokens: 20, Blocks: []core.Block{A, B}},
		})
		r := recs[2]
		if r.TTFT() != tc.ttft || r.RecomputedTokens != 1 || r.LoadNs != 2_200_000 || r.HitBlocks[1] != 2 {
			t.Errorf("serial=%v: ttft %d recomputed %d load %d hits %v, want ttft %d, 1 token, 2.2 ms load, 2 DRAM hits",
				tc.serial, r.TTFT(), r.RecomputedTokens, r.LoadNs, r.HitBlocks, tc.ttft)
		}
	}
}

// runLimit runs reqs on cfg and returns the LimitError that must end it.
func runLimit(t *testing.T, cfg Config, reqs []core.Request) *LimitError {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.SampleEvery(1e9) // the sampler must not loop on huge times either
	res, err := s.Run(&coretest.Slice{Reqs: reqs})
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("got %v (result %+v), want a *LimitError", err, res)
	}
	if strings.ContainsAny(err.Error(), "\n") || !strings.HasPrefix(err.Error(), le.Key+": ") {
		t.Errorf("message %q: want one line naming %q", err, le.Key)
	}
	return le
}

// TestTimeLimits: every product or sum that would leave 0..core.MaxTime
// (rates so slow, or traces so long, that an int64 of ns would wrap) stops
// the run with an error naming what is responsible, never a wrapped time.
func TestTimeLimits(t *testing.T) {
	const A, B = 0, 1
	one := func(in, out int) []core.Request {
		return []core.Request{{Seq: 0, Line: 7, Arrival: 0, InputTokens: in, OutputTokens: out, Blocks: []core.Block{A}[:min(in, 1)]}}
	}
	tests := []struct {
		name string
		cfg  func(*Config)
		reqs []core.Request
		key  string
		line int
	}{
		// Wrapped to a negative completion time before: 2^46 tokens at 1e-300 tokens/s.
		{"decode rate", func(c *Config) { c.GPU.DecodeTokensPerSec = 1e-300 }, one(10, 1), "gpu.decode_tokens_per_s", 7},
		{"decode length", func(c *Config) { c.GPU.DecodeTokensPerSec = 0.1 }, one(10, 1<<31-1), "gpu.decode_tokens_per_s", 7},
		{"prefill rate", func(c *Config) { c.GPU.PrefillTokensPerSec = 1e-9 }, one(10, 0), "gpu.prefill_tokens_per_s", 7},
		{"attention", func(c *Config) { c.GPU.AttentionNsPerToken2 = 1e300 }, one(10, 0), "gpu.attention_ns_per_token2", 7},
		{"KV bytes", func(c *Config) { c.Core.BytesPerToken = 1 << 40 }, one(10, 1<<31-1), "model", 7},
		{"arrival past the limit", nil, []core.Request{{Seq: 0, Line: 3, Arrival: core.MaxTime + 1}}, "timestamp", 3},
		{"arrivals out of order", nil, []core.Request{{Seq: 0, Line: 1, Arrival: 5}, {Seq: 1, Line: 2, Arrival: 4}}, "timestamp", 2},
		// Each step is in range; the prefill started 1 ms before the end of time ends past it.
		{"trace at the end of time", nil, []core.Request{{Seq: 0, Line: 4, Arrival: core.MaxTime - ms, InputTokens: 20, Blocks: []core.Block{A, B}}}, "timestamp", 4},
		{"decode at the end of time", nil, []core.Request{{Seq: 0, Line: 5, Arrival: core.MaxTime - 10*ms, InputTokens: 20, OutputTokens: 10, Blocks: []core.Block{A, B}}}, "timestamp", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tiny(true, 1, "lru")
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			le := runLimit(t, cfg, tc.reqs)
			if le.Key != tc.key || le.Line != tc.line || (tc.key != "model" && tc.name != "arrivals out of order" && !strings.Contains(le.Msg, "146.1 years")) {
				t.Errorf("key %q line %d, want %q line %d: %v", le.Key, le.Line, tc.key, tc.line, le)
			}
		})
	}

	// A link slow enough that each 10 kB demotion takes ten years: every
	// step fits, but the queue passes 146 years after 15 of them. HBM holds
	// one block, so each request pushes the previous one down.
	t.Run("link queue", func(t *testing.T) {
		cfg := tiny(true, 1, "lru")
		cfg.Core.Tiers[0].Capacity = 10_000
		cfg.Core.Tiers[1].Capacity = 1 << 40
		cfg.Links[0].Bandwidth = 10_000 / (10 * 365.25 * 86400)
		cfg.Links[0].ReverseBandwidth = 1e7
		var reqs []core.Request
		for i := range 40 {
			reqs = append(reqs, core.Request{Seq: int64(i), Line: i + 1, Arrival: int64(i) * ms, InputTokens: 10, Blocks: []core.Block{core.Block(i)}})
		}
		le := runLimit(t, cfg, reqs)
		if le.Key != "bandwidth of link hbm->dram" || le.Line != 0 {
			t.Errorf("got %q line %d: %v", le.Key, le.Line, le)
		}
	})
}

// TestLongTraceIsFine: a trace spanning nearly the whole range runs to the
// end (the sampler's interval grows instead of looping), and a prefetch
// timeout too long to ever run out is no error.
func TestLongTraceIsFine(t *testing.T) {
	s, err := New(tiny(false, 2, "lru"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.SampleEvery(1e9)
	res, err := s.Run(&coretest.Slice{Reqs: []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 20, OutputTokens: 5, Blocks: []core.Block{0, 1}},
		{Seq: 1, Arrival: core.MaxTime - 100*ms, InputTokens: 20, OutputTokens: 5, Blocks: []core.Block{0, 1}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Requests != 2 || res.End != core.MaxTime-100*ms+100_000+5*ms || len(s.Series().Times) > MaxPoints {
		t.Errorf("requests %d end %d points %d", res.Stats.Requests, res.End, len(s.Series().Times))
	}
}

// TestWakePastTheLimit: a prefetch timeout that ends past core.MaxTime
// can never run out, so its wake is dropped rather than queued at a time
// the heap cannot hold.
func TestWakePastTheLimit(t *testing.T) {
	s, err := New(tiny(true, 1, "lru"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Wake(core.MaxTime+5, 0)
	if s.heap.len() != 0 {
		t.Fatal("a wake past the limit was queued")
	}
	s.Wake(core.MaxTime, 0)
	if s.heap.len() != 1 {
		t.Fatal("a wake at the limit was dropped")
	}
}
