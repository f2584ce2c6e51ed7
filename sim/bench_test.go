package sim

import (
	"bytes"
	"runtime"
	"testing"

	"kvsim/core"
	"kvsim/internal/testenv"
	"kvsim/policy"
	"kvsim/trace"
	"kvsim/workload"
)

// needTrace is the shared Mooncake trace, or skips (fails under
// KVSIM_REQUIRE_ALL) when it is not beside the checkout.
func needTrace(tb testing.TB) string {
	tb.Helper()
	return testenv.ConversationTrace(tb)
}

// conversationConfig is a 60 GiB HBM + 512 GiB DRAM system for an 8B-class
// GQA model (128 KiB per token), served by a cluster's worth of prefill.
func conversationConfig(evict string) Config {
	return Config{
		Core: core.Config{
			Tiers:         []core.Tier{{Name: "hbm", Capacity: 60 << 30}, {Name: "dram", Capacity: 512 << 30}},
			BytesPerToken: 128 << 10, BlockTokens: 512, PageTokens: 16, // the scenarios' default page
			HoldEvicted: true, // the scenarios' default (hbm_free = "landed")
			NewPolicy: func(_ int, c int64) (policy.Policy, error) {
				return policy.New(evict, policy.Config{Capacity: c})
			},
		},
		Links: []LinkSpec{{From: 0, To: 1, Bandwidth: 25e9, Latency: 10_000}},
		GPU:   GPUSpec{PrefillTokensPerSec: 200_000, DecodeTokensPerSec: 50, Layers: 32},
	}
}

// BenchmarkRunConversation is a whole `kvsim run` of the conversation trace
// with LRU: trace parsing, id remapping, core, links and GPU model.
func BenchmarkRunConversation(b *testing.B) {
	path := needTrace(b)
	b.ReportAllocs()
	var accesses int64
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		r, err := trace.Open(path, trace.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s, err := New(conversationConfig("lru"), nil)
		if err != nil {
			b.Fatal(err)
		}
		src := workload.NewSource(r, trace.NewDict())
		if _, err := s.Run(src); err != nil {
			b.Fatal(err)
		}
		r.Close()
		accesses += src.BlockAccesses
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(accesses)/b.Elapsed().Seconds(), "accesses/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(accesses), "allocs/access")
}

// BenchmarkRunOverloaded replays a generated trace on a GPU far too slow
// for it, so tens of thousands of requests queue: admission must stay
// cheap however long the queue grows.
func BenchmarkRunOverloaded(b *testing.B) {
	g := trace.DefaultGenConfig()
	g.Requests, g.RatePerSec = 50000, 50
	var buf bytes.Buffer
	if err := trace.Generate(&buf, g); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var accesses, queued int64
	for b.Loop() {
		cfg := conversationConfig("lru")
		cfg.GPU.PrefillTokensPerSec = 20_000
		s, err := New(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		s.SampleEvery(1e9)
		src := workload.NewSource(trace.NewReader(bytes.NewReader(buf.Bytes()), "gen", trace.Options{}), trace.NewDict())
		if _, err := s.Run(src); err != nil {
			b.Fatal(err)
		}
		accesses += src.BlockAccesses
		for _, q := range s.Series().Queued {
			queued = max(queued, int64(q))
		}
	}
	b.ReportMetric(float64(accesses)/b.Elapsed().Seconds(), "accesses/s")
	b.ReportMetric(float64(queued), "max-queued")
}

// BenchmarkRunConversationBatched is BenchmarkRunConversation on the
// batched engine (the legacy mapping of the same rates): one step event
// per step, a decode token per running request per step.
func BenchmarkRunConversationBatched(b *testing.B) {
	benchBatched(b, GPUSpec{Engine: EngineBatched, PrefillTokensPerSec: 200_000, DecodeTokensPerSec: 50})
}

// BenchmarkRunConversationRoofline is the batched benchmark under the
// default step model, Llama-3.1-8B on four H100s (tp = 4) with the
// scenario defaults: steps of a few ms instead of the legacy 20 ms, so
// about three times as many steps.
func BenchmarkRunConversationRoofline(b *testing.B) {
	const tp = 4
	benchBatched(b, GPUSpec{Engine: EngineBatched, MaxBatchedTokens: 8192, Step: RooflineStep{
		PeakFLOPs: 989e12 * tp, HBMBandwidth: 3.35e12 * tp, ComputeEff: 0.5, MemoryEff: 0.8, OverheadNs: 1e6,
		Params: 8_030_261_248, WeightBytes: 2 * 8_030_261_248, AttnFLOPsPerPair: 4 * 32 * 32 * 128, KVBytesPerToken: 128 << 10}})
}

func benchBatched(b *testing.B, g GPUSpec) {
	path := needTrace(b)
	b.ReportAllocs()
	var steps, tokens int64
	for b.Loop() {
		r, err := trace.Open(path, trace.Options{})
		if err != nil {
			b.Fatal(err)
		}
		cfg := conversationConfig("lru")
		cfg.GPU = g
		cfg.Core.MaxRunning = 256 // max_num_seqs's default
		s, err := New(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Run(workload.NewSource(r, trace.NewDict()))
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
		steps += res.Steps
		tokens += res.OutputTokens
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
	b.ReportMetric(float64(tokens)/float64(b.N), "output-tokens/op")
}
