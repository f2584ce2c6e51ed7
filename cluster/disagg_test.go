package cluster

import (
	"reflect"
	"testing"

	"kvsim/core"
	"kvsim/sim"
)

// TestDisaggByHand: instance 0 prefills, instance 1 decodes, NICs of
// 2 GB/s and 500 ns with one lane. Request 0 (8 tokens, blocks 0 1, 3
// output tokens) prefills on instance 0 in one step, 1000 + 8x10 = 1080 ns,
// which gives its first token there. Its two 4 kB blocks then cross node
// 0's NIC and node 1's, one after the other (one lane): 500 + 2000 ns each,
// landing at 1080 + 2500 + 2500 = 6080. Instance 1 computes the last token
// again (vLLM caps an external hit at the prompt - 1, as a local one):
// 1000 + 10 ns, so the first token reaches the user at 7090 (TTFT 7090,
// the transfer included); then two decode steps of 1000 + 100 ns: done at
// 9290.
func TestDisaggByHand(t *testing.T) {
	reqs := []core.Request{{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: 3, Blocks: []core.Block{0, 1}}}
	cfg := Config{
		Instances: []sim.Config{poolNode(), poolNode()},
		Router:    &rrTest{},
		Prefill:   1,
		NIC:       sim.NICSpec{Bandwidth: 2e9, Latency: 500, Lanes: 1},
	}
	res, recs := runCluster(t, cfg, reqs)
	if len(recs) != 1 || recs[0].inst != 1 {
		t.Fatalf("records %+v: want one, from the decode instance", recs)
	}
	r := recs[0].rec
	if r.TTFT() != 7090 || r.Done != 9290 || r.Transferred != 2 || r.OutputTokens != 3 {
		t.Fatalf("record %+v: want TTFT 7090, done 9290, 2 blocks transferred", r)
	}
	if n0, n1 := res.NICs[0], res.NICs[1]; n0.SendBytes != 8000 || n1.RecvBytes != 8000 || n0.SendBusyNs != 4000 {
		t.Fatalf("NICs %+v", res.NICs)
	}
	tot := res.Total()
	if tot.Stats.Requests != 1 || tot.Stats.BlockAccesses != 2 || tot.Stats.Transferred != 2 || tot.TTFT.Count() != 1 {
		t.Fatalf("total %+v", tot.Stats)
	}
	if res.Chosen[0] != 1 || res.Chosen[1] != 1 {
		t.Fatalf("chosen %v", res.Chosen)
	}
}

// TestDisaggInvariants: random disaggregated clusters (1-2 prefill, 1-3
// decode instances, with or without a pool): every request is reported
// once, by a decode instance unless rejected; each core's accounting (and
// the pool's) holds after every event; every prompt block reaches its
// decode instance by a transfer or from its own cache; NIC time stays
// within the run, bytes sent equal bytes received; a second run is
// identical.
func TestDisaggInvariants(t *testing.T) {
	for seed := range uint64(8) {
		node, reqs := randomScenario(seed)
		pre, dec := 1+int(seed%2), 1+int(seed%3)
		run := func() (*Result, []instRec) {
			cfg := Config{Router: &rrTest{}, Prefill: pre,
				NIC: sim.NICSpec{Bandwidth: 1e6 * float64(1+seed%3), Latency: int64(seed%2) * 3000, Lanes: int(seed % 4)},
				Setup: func(i int, s *sim.Sim) {
					s.OnEvent(func(s *sim.Sim) {
						if err := s.Core().Check(); err != nil {
							t.Fatalf("seed %d, instance %d: %v", seed, i, err)
						}
						if p := s.Core().Pool(); p != nil {
							if err := p.Check(); err != nil {
								t.Fatalf("seed %d, instance %d: %v", seed, i, err)
							}
						}
					})
				}}
			if seed%2 == 1 {
				cfg.PoolShare = node.Core.Tiers[1].Capacity / 2
			}
			for range pre + dec {
				cfg.Instances = append(cfg.Instances, node)
			}
			return runCluster(t, cfg, reqs)
		}
		res, recs := run()
		seen := map[int64]int{}
		var done, moved int64
		for _, r := range recs {
			seen[r.rec.Seq]++
			if !r.rec.Rejected {
				if r.inst < pre {
					t.Fatalf("seed %d: request %d finished on prefill instance %d", seed, r.rec.Seq, r.inst)
				}
				done++
				moved += int64(r.rec.Transferred)
				if r.rec.Transferred+int(r.rec.HitBlocks[0]) > r.rec.Blocks {
					t.Fatalf("seed %d: request %d: %d transferred + %d hbm hits of %d blocks", seed, r.rec.Seq, r.rec.Transferred, r.rec.HitBlocks[0], r.rec.Blocks)
				}
			}
		}
		for _, q := range reqs {
			if seen[q.Seq] != 1 {
				t.Fatalf("seed %d: request %d reported %d times", seed, q.Seq, seen[q.Seq])
			}
		}
		tot := res.Total()
		if tot.Stats.Requests != done || tot.TTFT.Count() != done || tot.Stats.Transferred != moved || moved == 0 {
			t.Fatalf("seed %d: %d done, total says %d (TTFT %d); %d transferred, total %d", seed, done, tot.Stats.Requests, tot.TTFT.Count(), moved, tot.Stats.Transferred)
		}
		var sent, recvd int64
		for _, nc := range res.NICs {
			if nc.SendBusyNs > tot.End || nc.RecvBusyNs > tot.End {
				t.Fatalf("seed %d: NIC %d busy %d/%d of %d ns", seed, nc.Node, nc.SendBusyNs, nc.RecvBusyNs, tot.End)
			}
			sent += nc.SendBytes
			recvd += nc.RecvBytes
		}
		if sent != recvd || sent == 0 {
			t.Fatalf("seed %d: %d bytes sent, %d received", seed, sent, recvd)
		}
		_, again := run()
		if !reflect.DeepEqual(recs, again) {
			t.Fatalf("seed %d: a second run differs", seed)
		}
	}
}
