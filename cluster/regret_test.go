package cluster

import (
	"testing"

	"kvsim/core"
)

// reuseTrace is conversations whose turns extend their earlier prompts:
// every turn after the first has a cached prefix somewhere.
func reuseTrace(convs, turns int) []core.Request {
	var reqs []core.Request
	for k := range turns {
		for c := range convs {
			n := 2 + k
			blocks := make([]core.Block, n)
			for j := range blocks {
				blocks[j] = core.Block(100*c + j)
			}
			reqs = append(reqs, core.Request{Seq: int64(len(reqs)), Arrival: int64(len(reqs)) * 50_000,
				InputTokens: 4 * n, OutputTokens: 1, Blocks: blocks})
		}
	}
	return reqs
}

// TestRegret: an oracle (the longest cached prefix, the lowest index on
// ties) has no regret on any decision, checked as each is made; round
// robin on the same trace gives some up.
func TestRegret(t *testing.T) {
	reqs := reuseTrace(5, 6)
	run := func(r Router) *Result {
		cfg := Config{Router: r}
		for range 3 {
			cfg.Instances = append(cfg.Instances, tinyNode())
		}
		res, _ := runCluster(t, cfg, reqs)
		if len(res.Regret) != len(reqs) {
			t.Fatalf("%s: %d decisions of %d requests", r.Name(), len(res.Regret), len(reqs))
		}
		return res
	}
	oracle := &regretChecker{t: t}
	res := run(oracle)
	for k, d := range res.Regret {
		if d.RegretBlocks() != 0 || d.ChosenLoad != d.BestLoad {
			t.Fatalf("oracle decision %d: %+v", k, d)
		}
		if d.Arrival != reqs[k].Arrival {
			t.Fatalf("decision %d at %d, request at %d", k, d.Arrival, reqs[k].Arrival)
		}
	}
	if res.WithPrefix == 0 {
		t.Fatal("the trace reuses nothing")
	}
	var lost int32
	with := 0
	for _, d := range run(&rrTest{}).Regret {
		if d.RegretBlocks() < 0 {
			t.Fatalf("negative regret %+v", d)
		}
		lost += d.RegretBlocks()
		if d.RegretBlocks() > 0 {
			with++
		}
	}
	if lost == 0 || with == 0 {
		t.Fatalf("round robin gave up %d blocks in %d decisions", lost, with)
	}
}

// regretChecker routes as the oracle and checks, at each arrival, that the
// chosen instance's prefix is the longest in the cluster's true state.
type regretChecker struct {
	prefixTest
	t *testing.T
}

func (o *regretChecker) Route(now int64, r *core.Request, v View) (int, bool) {
	i, rej := o.prefixTest.Route(now, r, v)
	vv := v.(*view)
	for k := range vv.sims {
		if vv.livePrefix(k, r.Blocks) > vv.livePrefix(i, r.Blocks) {
			o.t.Fatalf("at %d: oracle chose %d, %d holds more", now, i, k)
		}
	}
	return i, rej
}
