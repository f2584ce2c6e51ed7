package cluster

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"kvsim/core"
	"kvsim/internal/coretest"
	"kvsim/policy"
	"kvsim/sim"
)

// rrTest is round robin, for the tests of this file (the package's own
// routers live in router*.go).
type rrTest struct{ next int }

func (*rrTest) Name() string { return "rr_test" }
func (r *rrTest) Route(_ int64, _ *core.Request, v View) (int, bool) {
	i := r.next % v.Instances()
	r.next++
	return i, false
}

// prefixTest sends each request to the instance holding its longest
// cached prefix (the lowest index on ties) and rejects every reject-th.
type prefixTest struct {
	reject, n int
}

func (*prefixTest) Name() string { return "prefix_test" }
func (p *prefixTest) Route(_ int64, r *core.Request, v View) (int, bool) {
	p.n++
	if p.reject > 0 && p.n%p.reject == 0 {
		return 0, true
	}
	best, arg := -1, 0
	for i := range v.Instances() {
		if _, a := v.Prefix(i, r.Blocks); a > best {
			best, arg = a, i
		}
	}
	return arg, false
}

// flat is the hand-checked step model: 1 us a step, 10 ns a prompt token.
var flat = sim.LinearStep{C0: 1000, CPrefill: 10, CDecode: 100}

// tinyNode: 1 kB per token, 4-token blocks, HBM 64 kB, DRAM 256 kB behind
// a 1 MB/s link, a budget of 8 tokens a step.
func tinyNode() sim.Config {
	return sim.Config{
		Core: core.Config{
			Tiers:         []core.Tier{{Name: "hbm", Capacity: 64_000}, {Name: "dram", Capacity: 256_000}},
			BytesPerToken: 1000, BlockTokens: 4,
			NewPolicy: func(_ int, c int64) (policy.Policy, error) {
				return policy.New("lru", policy.Config{Capacity: c})
			},
		},
		Links: []sim.LinkSpec{{From: 0, To: 1, Bandwidth: 1e6}},
		GPU:   sim.GPUSpec{Engine: sim.EngineBatched, MaxBatchedTokens: 8, Step: flat},
	}
}

type instRec struct {
	inst int
	rec  core.Record
}

func runCluster(t *testing.T, cfg Config, reqs []core.Request) (*Result, []instRec) {
	t.Helper()
	var recs []instRec
	res, err := Run(&coretest.Slice{Reqs: reqs}, cfg, func(inst int, r *core.Record) {
		c := *r
		c.HitBlocks = append([]int64(nil), r.HitBlocks...)
		recs = append(recs, instRec{inst, c})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, recs
}

// TestTwoInstancesByHand: request 0 (8 tokens, blocks 0 1) and, 10 us
// later, request 1 (12 tokens, blocks 0 1 2), one output token each.
// Request 0 runs alone on instance 0: one step of 8 prompt tokens,
// 1000 + 8x10 = 1080 ns, so TTFT 1080. Round robin sends request 1 to
// instance 1, which holds nothing: 12 tokens at 8 a step, 1080 + (1000 +
// 4x10) = 2120 ns. Routed by prefix it goes to instance 0, where blocks 0
// and 1 (8 tokens) are in HBM: one step of the 4 others, 1000 + 40 = 1040.
func TestTwoInstancesByHand(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: 1, Blocks: []core.Block{0, 1}},
		{Seq: 1, Arrival: 10_000, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{0, 1, 2}},
	}
	named := func(name string) Router {
		r, err := NewRouter(name, DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		router     Router
		inst1      int
		ttft1      int64
		hits       int64 // HBM block hits of request 1
		bestPrefix int64
	}{
		{&rrTest{}, 1, 2120, 0, 0},
		{&prefixTest{}, 0, 1040, 2, 1},
		// The shipped routers: round robin ignores the cache; the others
		// follow the follow-up turn to its prefix (cache_aware: 2 of 3
		// blocks routed there before, above 0.5, loads equal; kv_cost: 1
		// block to prefill there against 3; mooncake: its estimate, one
		// block's compute against three).
		{named("round_robin"), 1, 2120, 0, 0},
		{named("cache_aware"), 0, 1040, 2, 1},
		{named("kv_cost"), 0, 1040, 2, 1},
		{named("mooncake"), 0, 1040, 2, 1},
	} {
		cfg := Config{Instances: []sim.Config{tinyNode(), tinyNode()}, Router: tc.router}
		res, recs := runCluster(t, cfg, reqs)
		if len(recs) != 2 {
			t.Fatalf("%s: %d records", tc.router.Name(), len(recs))
		}
		byseq := map[int64]instRec{}
		for _, r := range recs {
			byseq[r.rec.Seq] = r
		}
		r0, r1 := byseq[0], byseq[1]
		if r0.inst != 0 || r0.rec.TTFT() != 1080 {
			t.Errorf("%s: request 0 on %d, TTFT %d; want 0, 1080", tc.router.Name(), r0.inst, r0.rec.TTFT())
		}
		if r1.inst != tc.inst1 || r1.rec.TTFT() != tc.ttft1 || r1.rec.HitBlocks[0] != tc.hits {
			t.Errorf("%s: request 1 on %d, TTFT %d, HBM hits %d; want %d, %d, %d", tc.router.Name(),
				r1.inst, r1.rec.TTFT(), r1.rec.HitBlocks[0], tc.inst1, tc.ttft1, tc.hits)
		}
		if res.WithPrefix != 1 || res.BestPrefix != tc.bestPrefix {
			t.Errorf("%s: best prefix %d of %d, want %d of 1", tc.router.Name(), res.BestPrefix, res.WithPrefix, tc.bestPrefix)
		}
		want := []int64{2, 0}
		if tc.inst1 == 1 {
			want = []int64{1, 1}
		}
		if !reflect.DeepEqual(res.Chosen, want) {
			t.Errorf("%s: chosen %v, want %v", tc.router.Name(), res.Chosen, want)
		}
		if tot := res.Total(); tot.Stats.Requests != 2 || tot.TTFT.Count() != 2 || tot.TTFT.Max() != max(1080, tc.ttft1) {
			t.Errorf("%s: total %d requests, %d TTFTs, max %d", tc.router.Name(), tot.Stats.Requests, tot.TTFT.Count(), tot.TTFT.Max())
		}
	}
}

// TestViewByHand: what a router sees after request 0 of the script above
// ran on instance 0 and request 1 arrives (instance 0 has demoted nothing).
func TestViewByHand(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: 1, Blocks: []core.Block{0, 1}},
		{Seq: 1, Arrival: 500, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{0, 1, 2}},
		{Seq: 2, Arrival: 10_000, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{0, 1, 2}},
	}
	var seen []string
	probe := routerFunc(func(now int64, r *core.Request, v View) (int, bool) {
		h0, a0 := v.Prefix(0, r.Blocks)
		h1, a1 := v.Prefix(1, r.Blocks)
		seen = append(seen, fmtView(now, v.Queued(0), v.Running(0), v.QueuedTokens(0), v.RunningTokens(0), h0, a0, h1, a1, v.EstimateTTFT(0, r), v.EstimateTTFT(1, r)))
		return 0, false
	})
	runCluster(t, Config{Instances: []sim.Config{tinyNode(), tinyNode()}, Router: probe}, reqs)
	want := []string{
		// Empty: 8 tokens in one step, 1080 ns, on either.
		"t=0 q0 r0 qt0 rt0 | prefix 0/0 0/0 | ttft 1080 1080",
		// Request 0 is mid-prefill (its step ends at 1080): 8 prompt
		// tokens, no output KV yet. Its blocks count as held though still
		// being computed (the core's residency: request 1 would wait for
		// them), so 8 of 12 tokens are cached on instance 0: its pending 8
		// tokens (the whole step, 1080) + one step of 4 (1040) = 2120; none
		// on 1: 12 from scratch, 2120.
		"t=500 q0 r1 qt0 rt8 | prefix 2/2 0/0 | ttft 2120 2120",
		// Both done; 0, 1 and 2 cached on instance 0: the whole prompt is
		// cached, one token is computed (1010).
		"t=10000 q0 r0 qt0 rt0 | prefix 3/3 0/0 | ttft 1010 2120",
	}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("views:\n%q\nwant\n%q", seen, want)
	}
}

type routerFunc func(now int64, r *core.Request, v View) (int, bool)

func (routerFunc) Name() string { return "func" }
func (f routerFunc) Route(now int64, r *core.Request, v View) (int, bool) {
	return f(now, r, v)
}

func fmtView(now int64, q, r int, qt, rt int64, h0, a0, h1, a1 int, e0, e1 int64) string {
	return fmt.Sprintf("t=%d q%d r%d qt%d rt%d | prefix %d/%d %d/%d | ttft %d %d", now, q, r, qt, rt, h0, a0, h1, a1, e0, e1)
}

// TestOneInstanceIsSim: a one-instance cluster is the simulator itself:
// the same records, in the same order, and the same result, whose Total
// is that result.
func TestOneInstanceIsSim(t *testing.T) {
	for seed := range uint64(6) {
		node, reqs := randomScenario(seed)
		var want []core.Record
		s, err := sim.New(node, func(r *core.Record) {
			c := *r
			c.HitBlocks = append([]int64(nil), r.HitBlocks...)
			want = append(want, c)
		})
		if err != nil {
			t.Fatal(err)
		}
		wres, err := s.Run(&coretest.Slice{Reqs: reqs})
		if err != nil {
			t.Fatal(err)
		}
		res, recs := runCluster(t, Config{Instances: []sim.Config{node}, Router: &rrTest{}}, reqs)
		var got []core.Record
		for _, r := range recs {
			if r.inst != 0 {
				t.Fatalf("record on instance %d", r.inst)
			}
			got = append(got, r.rec)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("seed %d: records differ", seed)
		}
		if !reflect.DeepEqual(wres, res.Instances[0]) || !reflect.DeepEqual(wres, res.Total()) {
			t.Fatalf("seed %d: results differ", seed)
		}
		if res.WithPrefix == 0 || res.BestPrefix != res.WithPrefix {
			t.Fatalf("seed %d: one instance holds the longest prefix of %d of %d requests with one", seed, res.BestPrefix, res.WithPrefix)
		}
	}
}

// randomScenario is a small node under load and 80 requests over six
// conversations.
func randomScenario(seed uint64) (sim.Config, []core.Request) {
	rng := rand.New(rand.NewPCG(seed, 7))
	cfg := tinyNode()
	cfg.Core.Tiers[0].Capacity = int64(20+rng.IntN(30)) * 4000
	cfg.Core.Tiers[1].Capacity = int64(60+rng.IntN(100)) * 4000
	cfg.Core.MaxRunning = rng.IntN(5)
	cfg.GPU.MaxBatchedTokens = []int{4, 8, 16, 64}[rng.IntN(4)]
	cfg.Core.HoldEvicted = seed%3 != 0 // evicted HBM held until its copy has left, as by default
	return cfg, coretest.Conversations(rng, 80)
}

// TestClusterInvariants: over seeded random clusters of 1-4 instances,
// every request finishes or is rejected exactly once, on the instance the
// router chose; every instance's accounting holds after each of its
// events (the core panics if HBM ever goes over capacity); the counts
// add up; and a second run gives the same records.
func TestClusterInvariants(t *testing.T) {
	for seed := range uint64(10) {
		node, reqs, n, router := randomCluster(seed)
		run := func() (*Result, []instRec) {
			res, recs, _ := checkedRun(t, seed, Config{Router: router()}, node, n, reqs, nil)
			return res, recs
		}
		res, recs := run()
		seen := map[int64]int{}
		perInst := make([]int64, n)
		var rejected int64
		for _, r := range recs {
			seen[r.rec.Seq]++
			switch {
			case r.inst == -1:
				if !r.rec.Rejected {
					t.Fatalf("seed %d: request %d refused by the router but not rejected", seed, r.rec.Seq)
				}
				rejected++
			case r.inst < 0 || r.inst >= n:
				t.Fatalf("seed %d: instance %d", seed, r.inst)
			default:
				perInst[r.inst]++
			}
		}
		for _, q := range reqs {
			if seen[q.Seq] != 1 {
				t.Fatalf("seed %d: request %d seen %d times", seed, q.Seq, seen[q.Seq])
			}
		}
		if !reflect.DeepEqual(perInst, res.Chosen) || rejected != res.Rejected {
			t.Fatalf("seed %d: records per instance %v (rejected %d), router chose %v (rejected %d)", seed, perInst, rejected, res.Chosen, res.Rejected)
		}
		countedOnce(t, seed, res, reqs)
		tot := res.Total()
		// Every counter of the totals is the instances' sum (the drain
		// counters were once left out).
		var want core.Stats
		for k, in := range res.Instances {
			if k == 0 {
				want = cloneStats(in.Stats)
				continue
			}
			for _, f := range [...][2]*int64{{&want.PeakDraining, &in.Stats.PeakDraining}, {&want.DrainWaits, &in.Stats.DrainWaits},
				{&want.GrowWaits, &in.Stats.GrowWaits}, {&want.Requests, &in.Stats.Requests}} {
				*f[0] += *f[1]
			}
		}
		if tot.Stats.PeakDraining != want.PeakDraining || tot.Stats.DrainWaits != want.DrainWaits || tot.Stats.GrowWaits != want.GrowWaits || tot.Stats.Requests != want.Requests {
			t.Fatalf("seed %d: totals %+v, instances sum to %+v", seed, tot.Stats, want)
		}
		if res.BestPrefix > res.WithPrefix || (n > 1 && seed%2 == 1 && res.BestPrefix != res.WithPrefix) {
			t.Fatalf("seed %d: best prefix %d of %d", seed, res.BestPrefix, res.WithPrefix)
		}
		sameAgain(t, seed, recs, func() []instRec { _, r := run(); return r })
	}
}

// TestRunErrors: a router out of range, no instances, no router.
func TestRunErrors(t *testing.T) {
	reqs := []core.Request{{Seq: 0, InputTokens: 4, Blocks: []core.Block{0}}}
	bad := routerFunc(func(int64, *core.Request, View) (int, bool) { return 2, false })
	for _, cfg := range []Config{
		{Instances: []sim.Config{tinyNode(), tinyNode()}, Router: bad},
		{Router: &rrTest{}},
		{Instances: []sim.Config{tinyNode()}},
	} {
		if _, err := Run(&coretest.Slice{Reqs: reqs}, cfg, nil); err == nil {
			t.Errorf("%+v: no error", cfg.Router)
		}
	}
	// Out of order arrivals fail as in sim.Run.
	reqs = append(reqs, core.Request{Seq: 1, Arrival: -1, InputTokens: 4, Blocks: []core.Block{1}})
	if _, err := Run(&coretest.Slice{Reqs: reqs}, Config{Instances: []sim.Config{tinyNode()}, Router: &rrTest{}}, nil); err == nil {
		t.Error("arrivals out of order: no error")
	}
}

// TestRelabelledInstances: instances share nothing, so round robin started
// one instance later gives each instance the results its neighbour had.
func TestRelabelledInstances(t *testing.T) {
	node, reqs := randomScenario(3)
	const n = 3
	cfg := func(start int) Config {
		c := Config{Router: &rrTest{next: start}}
		for range n {
			c.Instances = append(c.Instances, node)
		}
		return c
	}
	a, _ := runCluster(t, cfg(0), reqs)
	b, _ := runCluster(t, cfg(1), reqs)
	if reflect.DeepEqual(a.Instances[0], a.Instances[1]) {
		t.Fatal("two instances ran alike: the test shows nothing")
	}
	for i := range n {
		// Request k goes to (k+start)%n: a's instance i is b's instance i+1.
		if !reflect.DeepEqual(a.Instances[i], b.Instances[(i+1)%n]) {
			t.Fatalf("instance %d of the first run is not instance %d of the second", i, (i+1)%n)
		}
	}
}
