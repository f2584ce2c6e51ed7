package cluster

import (
	"testing"

	"kvsim/core"
	"kvsim/sim"
)

// poolNode: 1 kB per token, 4-token blocks (4 kB), 16 kB of HBM and a pool
// tier behind a 4 GB/s local link (1 us a block).
func poolNode() sim.Config {
	n := tinyNode()
	n.Core.Tiers = []core.Tier{{Name: "hbm", Capacity: 16_000}, {Name: "pool", Capacity: 1}}
	n.Links = []sim.LinkSpec{{From: 0, To: 1, Bandwidth: 4e9}}
	return n
}

// TestRemotePoolHitByHand: request 0 (blocks 0 1) runs on instance 0;
// request 1 (blocks 10 11 12, and a page for its second output token) follows it
// there and pushes blocks 0 and 1 out of its 16 kB of HBM into the pool, on node 0 (the writer's). Request 2
// (blocks 0 1 2, 12 tokens) arrives at 200 us and goes to instance 1: its
// first two blocks are pool hits on another node, each crossing node 0's
// NIC and node 1's (2 GB/s, 500 ns: 500 + 2000 ns a block) and then node
// 1's local link into HBM (1000 ns). With one lane per NIC direction the
// second block waits for the first to leave the NICs:
//
//	block 0: NICs 200000+500 .. 202500, link .. 203500
//	block 1: lanes at 202500, NICs 203000 .. 205000, link .. 206000
//
// then one step computes block 2 (4 tokens): 1000 + 40 ns, TTFT 7040 ns.
// With two lanes block 1 waits out its latency beside block 0 and takes
// the pipes as they free: NICs 202500 .. 204500, link .. 205500, TTFT 6540.
func TestRemotePoolHitByHand(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: 1, Blocks: []core.Block{0, 1}},
		{Seq: 1, Arrival: 100_000, InputTokens: 12, OutputTokens: 2, Blocks: []core.Block{10, 11, 12}},
		{Seq: 2, Arrival: 200_000, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{0, 1, 2}},
	}
	to := []int{0, 0, 1}
	for _, tc := range []struct {
		lanes int
		ttft  int64
	}{{1, 7040}, {2, 6540}} {
		k := 0
		cfg := Config{
			Instances: []sim.Config{poolNode(), poolNode()},
			Router: routerFunc(func(int64, *core.Request, View) (int, bool) {
				k++
				return to[k-1], false
			}),
			PoolShare: 64_000,
			NIC:       sim.NICSpec{Bandwidth: 2e9, Latency: 500, Lanes: tc.lanes},
		}
		res, recs := runCluster(t, cfg, reqs)
		var r2 *core.Record
		for i := range recs {
			if recs[i].rec.Seq == 2 {
				r2 = &recs[i].rec
			}
		}
		if r2 == nil || r2.TTFT() != tc.ttft || r2.HitBlocks[1] != 2 || r2.PoolRemote != 2 {
			t.Fatalf("lanes %d: request 2 %+v, want TTFT %d with 2 remote pool hits", tc.lanes, r2, tc.ttft)
		}
		// Node 0 sent the two blocks, node 1 received them; nothing else
		// crossed (the demotions were written on node 0 itself).
		n0, n1 := res.NICs[0], res.NICs[1]
		if n0.SendBytes != 8000 || n1.RecvBytes != 8000 || n0.RecvBytes != 0 || n1.SendBytes != 0 || n0.SendBusyNs != 4000 {
			t.Fatalf("lanes %d: NICs %+v", tc.lanes, res.NICs)
		}
		if res.Pool.NodeUsed[0] != 8000 || res.Pool.NodeUsed[1] != 0 || res.Pool.Capacity != 128_000 {
			t.Fatalf("lanes %d: pool %+v", tc.lanes, res.Pool)
		}
		if tot := res.Total(); tot.Stats.PoolRemoteHits != 2 || tot.Stats.Hits[1] != 2 {
			t.Fatalf("lanes %d: stats %+v", tc.lanes, tot.Stats)
		}
	}
}

// TestPoolInvariants: random clusters of 1-4 instances over one pool:
// after every event the pool holds no more than its capacity nor any node
// more than its share, every member's view agrees with it, each core's
// accounting holds, NIC busy time never exceeds the run, every byte sent
// is received, a one-node pool sends nothing, round robin over several
// nodes reads the pool across nodes, and a second run is identical.
func TestPoolInvariants(t *testing.T) {
	for seed := range uint64(10) {
		node, reqs, n, router := randomCluster(seed)
		run := func() (*Result, []instRec) {
			cfg := Config{Router: router(), PoolShare: node.Core.Tiers[1].Capacity / int64(n), NIC: randomNIC(seed)}
			res, recs, _ := checkedRun(t, seed, cfg, node, n, reqs, func(s *sim.Sim) error { return s.Core().Pool().Check() })
			return res, recs
		}
		res, recs := run()
		countedOnce(t, seed, res, reqs)
		tot := res.Total()
		if tot.Stats.PeakUsed[1] > res.Pool.Capacity || tot.Stats.PeakUsed[1] != res.Pool.Peak {
			t.Fatalf("seed %d: pool peak %d, capacity %d", seed, tot.Stats.PeakUsed[1], res.Pool.Capacity)
		}
		for _, nc := range res.NICs {
			if nc.SendBusyNs > tot.End || nc.RecvBusyNs > tot.End {
				t.Fatalf("seed %d: NIC %d busy %d/%d ns of %d", seed, nc.Node, nc.SendBusyNs, nc.RecvBusyNs, tot.End)
			}
		}
		sent, recvd := nicBytes(res)
		if sent != recvd {
			t.Fatalf("seed %d: %d bytes sent, %d received", seed, sent, recvd)
		}
		if n == 1 && sent != 0 {
			t.Fatalf("seed %d: one node sent %d bytes", seed, sent)
		}
		if n > 1 && seed%2 == 0 && tot.Stats.PoolRemoteHits == 0 { // round robin spreads conversations
			t.Fatalf("seed %d: no remote pool hit on %d instances: the test shows nothing", seed, n)
		}
		sameAgain(t, seed, recs, func() []instRec { _, r := run(); return r })
	}
}
