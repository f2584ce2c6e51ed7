package cluster

import (
	"testing"

	"kvsim/core"
	"kvsim/internal/testenv"
	"kvsim/policy"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// conversationNode is sim's benchmark system: 60 GiB HBM + 512 GiB DRAM
// for an 8B-class GQA model (128 KiB per token).
func conversationNode() sim.Config {
	return sim.Config{
		Core: core.Config{
			Tiers:         []core.Tier{{Name: "hbm", Capacity: 60 << 30}, {Name: "dram", Capacity: 512 << 30}},
			BytesPerToken: 128 << 10, BlockTokens: 512, PageTokens: 16,
			NewPolicy: func(_ int, c int64) (policy.Policy, error) {
				return policy.New("lru", policy.Config{Capacity: c})
			},
		},
		Links: []sim.LinkSpec{{From: 0, To: 1, Bandwidth: 25e9, Latency: 10_000}},
		GPU:   sim.GPUSpec{PrefillTokensPerSec: 200_000, DecodeTokensPerSec: 50, Layers: 32},
	}
}

// BenchmarkClusterConversation replays the conversation trace on 16
// instances with LRU and round robin: the coordinator's cost per request
// (advancing every instance, the router's view) on top of the engines'.
func BenchmarkClusterConversation(b *testing.B) {
	for _, eng := range []struct {
		name string
		e    sim.Engine
	}{{"simple", sim.EngineSimple}, {"batched", sim.EngineBatched}} {
		b.Run(eng.name, func(b *testing.B) {
			path := testenv.ConversationTrace(b)
			b.ReportAllocs()
			var requests int64
			for b.Loop() {
				r, err := trace.Open(path, trace.Options{})
				if err != nil {
					b.Fatal(err)
				}
				cfg := Config{Router: &rrTest{}}
				for range 16 {
					n := conversationNode()
					n.GPU.Engine = eng.e
					cfg.Instances = append(cfg.Instances, n)
				}
				src := workload.NewSource(r, trace.NewDict())
				if _, err := Run(src, cfg, nil); err != nil {
					b.Fatal(err)
				}
				r.Close()
				requests += src.Requests
			}
			b.ReportMetric(float64(requests)/b.Elapsed().Seconds(), "requests/s")
		})
	}
}

// BenchmarkClusterTopologies replays the conversation trace on 16 batched
// instances with 8 GiB of HBM each and round robin: private DRAM per node,
// one pool of the nodes' DRAM (every request's cross-node reads on the
// fabric, instances stepped in one event order), and 8 prefill + 8 decode
// instances with private DRAM (every prompt's KV crosses the fabric), and
// private DRAM with peer fetch (a miss looks up every other node's DRAM).
func BenchmarkClusterTopologies(b *testing.B) {
	for _, topo := range []string{"private", "pool", "disagg", "peer"} {
		b.Run(topo, func(b *testing.B) {
			path := testenv.ConversationTrace(b)
			b.ReportAllocs()
			var requests int64
			for b.Loop() {
				r, err := trace.Open(path, trace.Options{})
				if err != nil {
					b.Fatal(err)
				}
				cfg := Config{Router: &rrTest{}, NIC: sim.NICSpec{Bandwidth: 25e9, Latency: 5000, Lanes: 8}}
				for range 16 {
					n := conversationNode()
					n.GPU.Engine = sim.EngineBatched
					n.Core.Tiers[0].Capacity = 8 << 30
					n.Core.Tiers[1].Capacity = 32 << 30
					cfg.Instances = append(cfg.Instances, n)
				}
				switch topo {
				case "pool":
					cfg.PoolShare = 32 << 30
				case "disagg":
					cfg.Prefill = 8
				case "peer":
					cfg.PeerTier = 1
				}
				src := workload.NewSource(r, trace.NewDict())
				if _, err := Run(src, cfg, nil); err != nil {
					b.Fatal(err)
				}
				r.Close()
				requests += src.Requests
			}
			b.ReportMetric(float64(requests)/b.Elapsed().Seconds(), "requests/s")
		})
	}
}
