package cluster

import (
	"testing"

	"kvsim/core"
	"kvsim/sim"
)

// peerNode: poolNode's shape with a private dram tier (64 kB) behind the
// 4 GB/s local link.
func peerNode() sim.Config {
	n := poolNode()
	n.Core.Tiers = []core.Tier{{Name: "hbm", Capacity: 16_000}, {Name: "dram", Capacity: 64_000}}
	return n
}

// TestPeerFetchByHand: requests 0 (blocks 0 1) and 1 (blocks 10 11 12, a
// page for its second output token) run on instance 1 and push blocks 0
// and 1 out of its 16 kB of HBM into its own dram. Request 2 (blocks 0 1
// 2, 12 tokens) arrives at 200 us and goes to instance 0, which holds none
// of them. With peer fetch its first two blocks are read from instance 1's
// dram over node 1's NIC and node 0's (2 GB/s, 500 ns: the fabric charges
// a transfer the larger of its two NICs' latencies, once, then 4000 B /
// 2 GB/s = 2000 ns through both pipes at once) straight into HBM:
//
//	1 lane:  block 0: 200000+500 .. 202500; block 1: lane at 202500, +500, pipes 203000 .. 205000
//	2 lanes: block 1 waits out its latency beside block 0: pipes 202500 .. 204500
//
// then one step computes block 2 (4 tokens, 1000 + 40 ns): TTFT 6040 and
// 5540 ns. Without peer fetch it computes all 12 tokens in steps of 8 and
// 4: 1080 + 1040 = 2120 ns, which is also what the load-or-recompute
// strategy picks with peer fetch (its estimate, 2500 ns for the first
// block's read, is more than recomputing). Staged through the host tier
// (PeerStage), each block then crosses node 0's local link into HBM (1000
// ns), as a remote pool hit does (TestRemotePoolHitByHand): TTFT 7040 and
// 6540 ns, and instance 0 keeps both blocks in its dram.
func TestPeerFetchByHand(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: 1, Blocks: []core.Block{0, 1}},
		{Seq: 1, Arrival: 100_000, InputTokens: 12, OutputTokens: 2, Blocks: []core.Block{10, 11, 12}},
		{Seq: 2, Arrival: 200_000, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{0, 1, 2}},
	}
	to := []int{1, 1, 0}
	for _, tc := range []struct {
		peer, cheaper bool
		lanes         int
		ttft          int64
		fetched       int
		stage         bool
	}{{true, false, 1, 6040, 2, false}, {true, false, 2, 5540, 2, false}, {false, false, 1, 2120, 0, false}, {true, true, 1, 2120, 0, false},
		{true, false, 1, 7040, 2, true}, {true, false, 2, 6540, 2, true}} {
		k := 0
		var sims []*sim.Sim
		var peerTier, peers, own int
		node := peerNode()
		node.Core.Strategy.RecomputeWhenCheaper = tc.cheaper
		cfg := Config{
			Instances: []sim.Config{node, node},
			Router: routerFunc(func(_ int64, r *core.Request, v View) (int, bool) {
				k++
				if r.Seq == 2 { // what instance 0 would take from its peer
					peerTier, peers = v.PeerTier(), v.Peers(0, r.Blocks)
					_, own = v.Prefix(0, r.Blocks)
				}
				return to[k-1], false
			}),
			NIC:   sim.NICSpec{Bandwidth: 2e9, Latency: 500, Lanes: tc.lanes},
			Setup: func(i int, s *sim.Sim) { sims = append(sims, s) },
		}
		if tc.peer {
			cfg.PeerTier, cfg.PeerStage = 1, tc.stage
		}
		res, recs := runCluster(t, cfg, reqs)
		var r2 *core.Record
		for i := range recs {
			if recs[i].rec.Seq == 2 {
				r2 = &recs[i].rec
			}
		}
		if r2 == nil || r2.TTFT() != tc.ttft || r2.Peer != tc.fetched || r2.HitBlocks[0]+r2.HitBlocks[1] != 0 {
			t.Fatalf("%+v: request 2 %+v, want TTFT %d with %d blocks from the peer", tc, r2, tc.ttft, tc.fetched)
		}
		// The View shows blocks 0 and 1 in instance 1's dram, none in 0's.
		wantTier, wantPeers := -1, 0
		if tc.peer {
			wantTier, wantPeers = 1, 2
		}
		if peerTier != wantTier || peers != wantPeers || own != 0 {
			t.Fatalf("%+v: View: peer tier %d, %d peer blocks, %d own", tc, peerTier, peers, own)
		}
		tot := res.Total()
		if tot.Stats.PeerFetched != int64(tc.fetched) {
			t.Fatalf("%+v: %d blocks fetched in all", tc, tot.Stats.PeerFetched)
		}
		if !tc.peer {
			if res.NICs != nil {
				t.Fatalf("%+v: NICs without peer fetch: %+v", tc, res.NICs)
			}
			continue
		}
		// Node 1 sent what node 0 received: the fetched blocks, nothing else.
		n0, n1 := res.NICs[0], res.NICs[1]
		b := int64(tc.fetched) * 4000
		if n1.SendBytes != b || n0.RecvBytes != b || n0.SendBytes != 0 || n1.RecvBytes != 0 {
			t.Fatalf("%+v: NICs %+v", tc, res.NICs)
		}
		// The peer's copies stay: instance 1 still holds blocks 0 and 1 in dram.
		if c := sims[1].Core(); c.Where(0)&2 == 0 || c.Where(1)&2 == 0 {
			t.Fatalf("%+v: instance 1 lost its dram copies: %b %b", tc, c.Where(0), c.Where(1))
		}
		// Staged, instance 0 keeps a dram copy of each block it read.
		staged := int64(0)
		if tc.stage {
			staged = 2
		}
		if c := sims[0].Core(); tot.Stats.PeerStaged != staged || (c.Where(0)&2 != 0) != tc.stage || (c.Where(1)&2 != 0) != tc.stage {
			t.Fatalf("%+v: %d staged; instance 0 holds 0 and 1 at %b %b", tc, tot.Stats.PeerStaged, c.Where(0), c.Where(1))
		}
	}
}

// TestPeerFetchInvariants: random clusters of 1-4 instances with peer
// fetch over their dram: each core's accounting holds after every event;
// every request is counted once; no record takes more blocks from its
// tiers and peers than it has; every byte a NIC sent was received, and
// only peer reads crossed (between one and four tokens' bytes a fetched
// block); one instance fetches nothing, round robin over several does;
// and a second run is identical.
func TestPeerFetchInvariants(t *testing.T) {
	fetchedSome := false
	for seed := range uint64(10) {
		node, reqs, n, router := randomCluster(seed)
		run := func() (*Result, []instRec) {
			cfg := Config{Router: router(), PeerTier: 1, PeerStage: seed%4 >= 2, NIC: randomNIC(seed)}
			res, recs, _ := checkedRun(t, seed, cfg, node, n, reqs, nil)
			return res, recs
		}
		res, recs := run()
		var peer int64
		for _, r := range recs {
			var hits int64
			for _, h := range r.rec.HitBlocks {
				hits += h
			}
			if hits+int64(r.rec.Peer) > int64(r.rec.Blocks) {
				t.Fatalf("seed %d: request %d takes %d hits and %d peer blocks of %d", seed, r.rec.Seq, hits, r.rec.Peer, r.rec.Blocks)
			}
			peer += int64(r.rec.Peer)
		}
		countedOnce(t, seed, res, reqs)
		if tot := res.Total(); tot.Stats.PeerFetched != peer {
			t.Fatalf("seed %d: %d fetched, records say %d", seed, tot.Stats.PeerFetched, peer)
		}
		sent, recvd := nicBytes(res)
		if sent != recvd || recvd < peer*1000 || recvd > peer*4000 {
			t.Fatalf("seed %d: %d bytes sent, %d received for %d fetched blocks", seed, sent, recvd, peer)
		}
		if n == 1 && peer != 0 {
			t.Fatalf("seed %d: one instance fetched %d blocks", seed, peer)
		}
		fetchedSome = fetchedSome || (n > 1 && seed%2 == 0 && peer > 0)
		sameAgain(t, seed, recs, func() []instRec { _, r := run(); return r })
	}
	if !fetchedSome {
		t.Fatal("round robin over several instances fetched nothing: the test shows nothing")
	}
}
