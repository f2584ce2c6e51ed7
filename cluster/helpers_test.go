package cluster

import (
	"reflect"
	"testing"

	"kvsim/core"
	"kvsim/sim"
)

// The shared setting of the random invariant tests (cluster, pool, peer
// fetch): one seed draws the node and its requests (randomScenario), the
// instances and the router, and the NICs where a fabric is needed.

// randomCluster is seed's node and requests on 1 + seed%4 instances,
// routed round robin on even seeds and by prefix (refusing every 7th
// request) on odd ones; router builds a fresh router for each run.
func randomCluster(seed uint64) (node sim.Config, reqs []core.Request, n int, router func() Router) {
	node, reqs = randomScenario(seed)
	n = 1 + int(seed%4)
	if seed%2 == 0 {
		return node, reqs, n, func() Router { return &rrTest{} }
	}
	return node, reqs, n, func() Router { return &prefixTest{reject: 7} }
}

// randomNIC is seed's NIC: 0.5, 1 or 1.5 MB/s, 0 or 2 us, 0-2 lanes.
func randomNIC(seed uint64) sim.NICSpec {
	return sim.NICSpec{Bandwidth: 5e5 * float64(1+seed%3), Latency: int64(seed%2) * 2000, Lanes: int(seed % 3)}
}

// checkedRun runs cfg on n copies of node, checking each instance's core
// after every one of its events (and more, if set), and returns the
// instances' simulators beside the result and records.
func checkedRun(t *testing.T, seed uint64, cfg Config, node sim.Config, n int, reqs []core.Request, more func(s *sim.Sim) error) (*Result, []instRec, []*sim.Sim) {
	t.Helper()
	var sims []*sim.Sim
	cfg.Setup = func(i int, s *sim.Sim) {
		sims = append(sims, s)
		s.OnEvent(func(s *sim.Sim) {
			err := s.Core().Check()
			if err == nil && more != nil {
				err = more(s)
			}
			if err != nil {
				t.Fatalf("seed %d, instance %d: %v", seed, i, err)
			}
		})
	}
	for range n {
		cfg.Instances = append(cfg.Instances, node)
	}
	res, recs := runCluster(t, cfg, reqs)
	if len(sims) != n {
		t.Fatalf("seed %d: %d instances set up", seed, len(sims))
	}
	return res, recs, sims
}

// sameAgain fails unless a second run gives the records of the first.
func sameAgain(t *testing.T, seed uint64, recs []instRec, run func() []instRec) {
	t.Helper()
	if again := run(); !reflect.DeepEqual(recs, again) {
		t.Fatalf("seed %d: a second run differs", seed)
	}
}

// nicBytes sums the bytes the NICs sent and received.
func nicBytes(res *Result) (sent, recvd int64) {
	for _, nc := range res.NICs {
		sent += nc.SendBytes
		recvd += nc.RecvBytes
	}
	return sent, recvd
}

// countedOnce fails unless every request was finished or rejected once.
func countedOnce(t *testing.T, seed uint64, res *Result, reqs []core.Request) {
	t.Helper()
	if tot := res.Total(); tot.Stats.Requests+tot.Stats.Rejected != int64(len(reqs)) {
		t.Fatalf("seed %d: %d finished + %d rejected of %d", seed, tot.Stats.Requests, tot.Stats.Rejected, len(reqs))
	}
}
