package sim

import (
	"slices"
	"testing"

	"kvsim/core"
	"kvsim/policy"
	"kvsim/trace"
	"kvsim/workload"
)

// TestEvictedHBMBacklog measures what freeing evicted HBM at once
// (HoldEvicted false, hbm_free = "evict", before its demotion has left HBM,
// docs/links.md) lends a run: the HBM bytes whose copy down has not yet
// crossed the HBM link, which a system that waits for its stores (vLLM's
// offloading, kvsim's default) still holds. It checks that every demotion
// out of HBM leaves it once, and logs the backlog's peak and time mean, and
// the latencies of both models, for the docs (go test ./sim -run
// EvictedHBMBacklog -v).
func TestEvictedHBMBacklog(t *testing.T) {
	conv := conversationConfig("lru")
	conv.GPU = GPUSpec{Engine: EngineBatched, PrefillTokensPerSec: 200_000, DecodeTokensPerSec: 100}
	conv.Core.MaxRunning = 256
	quick := quickLinks() // the quick start: Llama-3.1-8B on four H100s
	quick.Core.PageTokens, quick.Core.MaxRunning = 16, 256
	quick.Core.NewPolicy = func(_ int, c int64) (policy.Policy, error) {
		return policy.New("lru", policy.Config{Capacity: c})
	}
	const tp = 4
	quick.GPU = GPUSpec{Engine: EngineBatched, MaxBatchedTokens: 8192, Step: RooflineStep{
		PeakFLOPs: 989e12 * tp, HBMBandwidth: 3.35e12 * tp, ComputeEff: 0.5, MemoryEff: 0.8, OverheadNs: 1e6,
		Params: 8_030_261_248, WeightBytes: 2 * 8_030_261_248, AttnFLOPsPerPair: 4 * 32 * 32 * 128, KVBytesPerToken: 128 << 10}}
	for _, c := range []struct {
		name string
		cfg  Config
		path string
	}{
		{"quick start (synthetic trace, 40 GiB HBM)", quick, "../traces/synthetic.jsonl"},
		{"conversation trace (old rates, 60 GiB HBM)", conv, ""},
	} {
		if c.path == "" {
			c.path = needTrace(t)
		}
		hcfg := c.cfg
		hcfg.Core.HoldEvicted = true
		hres := runBacklog(t, hcfg, c.path)
		if hres.Stats.PeakDraining <= 0 || hres.Stats.PeakDraining > c.cfg.Core.Tiers[0].Capacity || hres.Stats.DrainWaits == 0 {
			t.Errorf("%s, held: peak draining %d bytes, %d admissions waited", c.name, hres.Stats.PeakDraining, hres.Stats.DrainWaits)
		}
		c.cfg.Core.HoldEvicted = false
		s, err := New(c.cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		type change struct{ at, bytes int64 }
		var changes []change
		var longest int64
		s.onHop = func(p hopPhase, l *link, x *xfer, now int64) {
			if p == hopEnd && x.kind == core.Demote && x.from == 0 && x.hop == 0 {
				changes = append(changes, change{x.issued, x.bytes}, change{now, -x.bytes})
				longest = max(longest, now-x.issued)
			}
		}
		r, err := trace.Open(c.path, trace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(workload.NewSource(r, trace.NewDict()))
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(changes)/2) != res.Stats.Demotions[0] || res.Stats.Demotions[0] == 0 {
			t.Errorf("%s: %d demotions out of HBM, %d left it", c.name, res.Stats.Demotions[0], len(changes)/2)
		}
		slices.SortStableFunc(changes, func(a, b change) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return int(a.bytes - b.bytes) // landings first
		})
		var held, peak, last int64
		var area float64
		for _, ch := range changes {
			area += float64(held) * float64(ch.at-last)
			held, last = held+ch.bytes, ch.at
			peak = max(peak, held)
		}
		if held != 0 {
			t.Errorf("%s: %d bytes never left HBM", c.name, held)
		}
		const gib = 1 << 30
		t.Logf("%s: %d demotions out of HBM; HBM still draining: peak %.1f GiB (%.0f%% of HBM), time mean %.2f GiB; longest %.0f ms",
			c.name, len(changes)/2, float64(peak)/gib, 100*float64(peak)/float64(c.cfg.Core.Tiers[0].Capacity),
			area/float64(res.End)/gib, float64(longest)/1e6)
		for _, m := range []struct {
			name string
			r    *Result
		}{{"evict", res}, {"landed", hres}} {
			st := m.r.Stats
			t.Logf("  hbm_free %-6s TTFT p50 %.1f p90 %.1f p99 %.1f ms, queue p99 %.1f ms, HBM hits %d, preemptions %d, admissions/decodes that waited for drains %d/%d, peak draining %.1f GiB",
				m.name, ms1(m.r.TTFT.Quantile(0.5)), ms1(m.r.TTFT.Quantile(0.9)), ms1(m.r.TTFT.Quantile(0.99)), ms1(m.r.Queue.Quantile(0.99)),
				st.Hits[0], st.Preemptions, st.DrainWaits, st.GrowWaits, float64(st.PeakDraining)/gib)
		}
	}
}

func ms1(ns int64) float64 { return float64(ns) / 1e6 }

// runBacklog replays a trace on cfg.
func runBacklog(t *testing.T, cfg Config, path string) *Result {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := trace.Open(path, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := s.Run(workload.NewSource(r, trace.NewDict()))
	if err != nil {
		t.Fatal(err)
	}
	return res
}
