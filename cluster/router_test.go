package cluster

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"kvsim/core"
)

// fakeView is a hand-built cluster state; Prefix answers the same counts for
// any blocks, capped at their length.
type fakeView struct {
	queued, running []int
	qTok, rTok      []int64
	hbm, all        []int
	ttft            []int64
	tiers           [][]uint8 // per instance, the fastest tier of each prefix block; nil: hbm zeros, then ones up to all
	usage           []float64
	pool            int
	peers           []int // per instance, View.Peers; nil: none
}

func newFake(n int) *fakeView {
	return &fakeView{
		queued: make([]int, n), running: make([]int, n),
		qTok: make([]int64, n), rTok: make([]int64, n),
		hbm: make([]int, n), all: make([]int, n), ttft: make([]int64, n),
		usage: make([]float64, n), pool: -1,
	}
}

func (f *fakeView) Instances() int                            { return len(f.queued) }
func (f *fakeView) Queued(i int) int                          { return f.queued[i] }
func (f *fakeView) Running(i int) int                         { return f.running[i] }
func (f *fakeView) QueuedTokens(i int) int64                  { return f.qTok[i] }
func (f *fakeView) RunningTokens(i int) int64                 { return f.rTok[i] }
func (f *fakeView) EstimateTTFT(i int, _ *core.Request) int64 { return f.ttft[i] }
func (f *fakeView) Prefix(i int, b []core.Block) (int, int) {
	return min(f.hbm[i], len(b)), min(f.all[i], len(b))
}

func (f *fakeView) Tiers(i int, b []core.Block, out []uint8) []uint8 {
	if f.tiers != nil && f.tiers[i] != nil {
		return append(out, f.tiers[i][:min(len(f.tiers[i]), len(b))]...)
	}
	for k := range min(f.all[i], len(b)) {
		t := uint8(0)
		if k >= f.hbm[i] {
			t = 1
		}
		out = append(out, t)
	}
	return out
}
func (f *fakeView) PoolTier() int { return f.pool }
func (f *fakeView) PeerTier() int { return -1 }
func (f *fakeView) Peers(i int, _ []core.Block) int {
	if f.peers == nil {
		return 0
	}
	return f.peers[i]
}
func (f *fakeView) KVUsage(i int) float64 { return f.usage[i] }

func req(tokens int, blocks ...core.Block) *core.Request {
	return &core.Request{InputTokens: tokens, Blocks: blocks}
}

func mustRouter(t *testing.T, name string, p Params) Router {
	t.Helper()
	r, err := NewRouter(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func route(t *testing.T, r Router, q *core.Request, v View) int {
	t.Helper()
	i, reject := r.Route(0, q, v)
	if reject {
		t.Fatalf("%s rejected", r.Name())
	}
	return i
}

func TestRouterNamesConstructAndNameThemselves(t *testing.T) {
	names := RouterNames()
	if len(names) == 0 || names[0] != "round_robin" {
		t.Fatalf("RouterNames = %v, want round_robin (the default) first", names)
	}
	names[0] = "mutated"
	if RouterNames()[0] != "round_robin" {
		t.Fatal("RouterNames returned its own slice")
	}
	for _, n := range RouterNames() {
		if got := mustRouter(t, n, DefaultParams()).Name(); got != n {
			t.Errorf("NewRouter(%q).Name() = %q", n, got)
		}
	}
}

func TestNoInstancesRejects(t *testing.T) {
	for _, n := range RouterNames() {
		if _, reject := mustRouter(t, n, DefaultParams()).Route(0, req(10, 1), newFake(0)); !reject {
			t.Errorf("%s routed with no instances", n)
		}
	}
}

func TestRoundRobinCycles(t *testing.T) {
	a := mustRouter(t, "round_robin", DefaultParams())
	b := mustRouter(t, "round_robin", DefaultParams())
	v := newFake(3)
	v.qTok[0] = 1 << 40 // state is ignored
	var got []int
	for range 5 {
		got = append(got, route(t, a, req(1, 1), v))
	}
	if want := []int{0, 1, 2, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("round robin = %v, want %v", got, want)
	}
	if i := route(t, b, req(1, 1), v); i != 0 {
		t.Fatalf("a second router starts at %d, want its own counter at 0", i)
	}
	// A cluster that shrinks keeps the choice in range.
	if i := route(t, a, req(1, 1), newFake(2)); i != 0 {
		t.Fatalf("after 5 picks on 2 instances: %d, want 0", i)
	}
}

func TestLeastLoaded(t *testing.T) {
	r := mustRouter(t, "least_loaded", DefaultParams())
	v := newFake(3)
	v.qTok = []int64{100, 10, 60}
	v.rTok = []int64{0, 80, 20}
	// Totals 100, 90, 80: request counts must not matter.
	v.queued = []int{0, 0, 50}
	if i := route(t, r, req(1, 1), v); i != 2 {
		t.Fatalf("least_loaded = %d, want 2 (80 tokens)", i)
	}
	v.rTok[2] = 30 // 100, 90, 90: tie to the lowest index
	if i := route(t, r, req(1, 1), v); i != 1 {
		t.Fatalf("least_loaded tie = %d, want 1", i)
	}
}

// seeded returns a cache_aware router whose instance 1 has routed x: a
// one-block dummy went to 0 first (all trees empty: smallest is 0), then x
// to the smallest tree, 1.
func seeded(t *testing.T, p Params, n int, x *core.Request) (*cacheAware, *fakeView) {
	t.Helper()
	c := mustRouter(t, "cache_aware", p).(*cacheAware)
	v := newFake(n)
	if i := route(t, c, req(1, 1000), v); i != 0 {
		t.Fatalf("dummy went to %d", i)
	}
	if i := route(t, c, x, v); i != 1 {
		t.Fatalf("seed went to %d", i)
	}
	return c, v
}

func TestCacheAwareImbalanceBounds(t *testing.T) {
	x := req(400, 1, 2, 3, 4)
	for _, tc := range []struct {
		name     string
		abs, rel float64
		loads    [2]int // instance 0 (least loaded), instance 1 (holds x)
		want     int
	}{
		{"balanced", 32, 1.0001, [2]int{0, 0}, 1},
		{"abs exactly at bound", 32, 1.0001, [2]int{0, 32}, 1},
		{"abs just across", 32, 1.0001, [2]int{0, 33}, 0},
		{"abs across, rel not", 32, 1.5, [2]int{100, 140}, 1},
		{"rel exactly at bound", 0, 2, [2]int{10, 20}, 1},
		{"rel just across", 0, 2, [2]int{10, 21}, 0},
		{"sglang defaults, both across", 32, 1.0001, [2]int{100, 133}, 0},
		{"rel across, abs at bound", 32, 1.0001, [2]int{100, 132}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.BalanceAbs, p.BalanceRel = tc.abs, tc.rel
			c, v := seeded(t, p, 2, x)
			v.queued[0], v.running[1] = tc.loads[0], tc.loads[1] // load = queued + running
			if i := route(t, c, x, v); i != tc.want {
				t.Fatalf("loads %v: routed to %d, want %d", tc.loads, i, tc.want)
			}
		})
	}
}

func TestCacheAwareImbalancedPicksLeastLoadedLowestIndex(t *testing.T) {
	c := mustRouter(t, "cache_aware", DefaultParams())
	v := newFake(4)
	v.running = []int{50, 10, 10, 90}
	if i := route(t, c, req(1, 7), v); i != 1 {
		t.Fatalf("imbalanced: %d, want 1", i)
	}
	// The imbalanced pick still learns the prefix (SGLang inserts it too).
	v.running = []int{0, 0, 0, 0}
	if i := route(t, c, req(1, 7), v); i != 1 {
		t.Fatalf("follow-up: %d, want 1, where the prefix was routed", i)
	}
}

func TestCacheAwareThreshold(t *testing.T) {
	x := req(400, 1, 2, 3, 4)
	for _, tc := range []struct {
		name      string
		threshold float64
		blocks    []core.Block
		want      int
	}{
		{"rate 0.5 at threshold: smallest tree", 0.5, []core.Block{1, 2, 9, 9}, 2},
		{"rate 0.75 above: best match", 0.5, []core.Block{1, 2, 3, 9}, 1},
		{"rate 1 at threshold 1: smallest tree", 1, []core.Block{1, 2, 3, 4}, 2},
		{"rate 0.25 above 0.2", 0.2, []core.Block{1, 9, 9, 9}, 1},
		{"rate 0 at threshold 0: smallest tree", 0, []core.Block{9, 9, 9, 9}, 2},
		{"no blocks: smallest tree", 0, nil, 2},
		{"block elsewhere in the chain does not match", 0, []core.Block{2, 3, 4}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.CacheThreshold = tc.threshold
			c, v := seeded(t, p, 3, x) // trees: 1 block, 4 blocks, empty
			if i := route(t, c, req(400, tc.blocks...), v); i != tc.want {
				t.Fatalf("routed to %d, want %d", i, tc.want)
			}
		})
	}
}

func TestCacheAwareTiesToLowestIndex(t *testing.T) {
	c := mustRouter(t, "cache_aware", DefaultParams()).(*cacheAware)
	v := newFake(3)
	route(t, c, req(1, 50), v) // trees exist; 0 holds {50}
	c.trees[1].insert([]core.Block{1, 2})
	c.trees[2].insert([]core.Block{1, 2})
	if i := route(t, c, req(200, 1, 2), v); i != 1 {
		t.Fatalf("equal matches: %d, want 1", i)
	}
	// Equal smallest trees: 0 and 2 hold one block each, 1 holds two.
	c = mustRouter(t, "cache_aware", DefaultParams()).(*cacheAware)
	route(t, c, req(1, 50), v)
	c.trees[1].insert([]core.Block{60, 61})
	c.trees[2].insert([]core.Block{70})
	if i := route(t, c, req(100, 99), v); i != 0 {
		t.Fatalf("equal smallest trees: %d, want 0", i)
	}
}

func TestImbalancedHelper(t *testing.T) {
	for _, tc := range []struct {
		abs, rel float64
		lo, hi   int
		want     bool
	}{
		{32, 1.0001, 0, 32, false}, {32, 1.0001, 0, 33, true},
		{32, 1.0001, 10000, 10033, true}, {32, 1.0001, 10000, 10032, false},
		{0, 1.5, 100, 150, false}, {0, 1.5, 100, 151, true},
		{0, 1, 7, 7, false}, {0, 1, 7, 8, true},
	} {
		if got := imbalanced(Params{Keys: Keys{BalanceAbs: tc.abs, BalanceRel: tc.rel}}, tc.lo, tc.hi); got != tc.want {
			t.Errorf("abs %v rel %v: imbalanced(%d, %d) = %v, want %v", tc.abs, tc.rel, tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestKVCostArithmetic(t *testing.T) {
	p := DefaultParams()
	p.BlockTokens = 100
	k := newKVCost(p)
	v := newFake(2)
	r := req(400, 1, 2, 3, 4)
	// Instance 0: 2 queued blocks, 3 running, 2 hits in HBM and 2 more below.
	v.qTok[0], v.rTok[0], v.hbm[0], v.all[0] = 200, 300, 2, 4
	// prefill = 2 + 4 - (2 + 0.75 x 2) = 2.5; decode = 3 + 4 = 7.
	if c := k.cost(0, r, v, 0, 0); c != 9.5 {
		t.Fatalf("cost 0 = %v, want 9.5", c)
	}
	// Instance 1: idle, nothing cached: prefill 4, decode 4.
	if c := k.cost(0, r, v, 1, 0); c != 8 {
		t.Fatalf("cost 1 = %v, want 8", c)
	}
	if i := route(t, k, r, v); i != 1 {
		t.Fatalf("kv_cost = %d, want 1", i)
	}
	// Weight 2: 2 x 2.5 + 7 = 12 = 2 x 4 + 4: a tie, to the lowest index.
	p.OverlapWeight = 2
	if i := route(t, newKVCost(p), r, v); i != 0 {
		t.Fatalf("kv_cost tie = %d, want 0", i)
	}
	// Host hits worth nothing: prefill 4 on 0; 2 x 4 + 7 = 15 > 12.
	p.HostWeight = 0
	if c := newKVCost(p).cost(0, r, v, 0, 0); c != 15 {
		t.Fatalf("host weight 0: cost = %v, want 15", c)
	}
	// Weight 0: load only (decode 7 vs 4).
	p.OverlapWeight = 0
	if i := route(t, newKVCost(p), r, v); i != 1 {
		t.Fatalf("overlap weight 0 = %d, want 1", i)
	}
}

func TestKVCostPrefersCachedInstance(t *testing.T) {
	k := mustRouter(t, "kv_cost", DefaultParams())
	v := newFake(3)
	r := req(2048, 1, 2, 3, 4) // 512 tokens a block, derived
	v.all[2], v.hbm[2] = 4, 0  // all four on 2's lower tier: 0.75 x 4 = 3 credited
	v.hbm[1], v.all[1] = 2, 2  // two in 1's HBM: 2 credited
	if i := route(t, k, r, v); i != 2 {
		t.Fatalf("kv_cost = %d, want 2", i)
	}
	v.rTok[2] = 2 * 512 // two more decode blocks on 2: 1+4+2 = 7 > 2+4 = 6
	if i := route(t, k, r, v); i != 1 {
		t.Fatalf("kv_cost = %d, want 1", i)
	}
}

func TestBlockTokens(t *testing.T) {
	for _, tc := range []struct {
		set, tokens, blocks, want int
	}{{64, 1000, 2, 64}, {0, 1000, 2, 500}, {0, 1001, 2, 501}, {0, 300, 0, 300}, {0, 0, 0, 1}} {
		r := &core.Request{InputTokens: tc.tokens, Blocks: make([]core.Block, tc.blocks)}
		if got := blockTokens(Params{BlockTokens: tc.set}, r); got != tc.want {
			t.Errorf("blockTokens(%d, %d tokens, %d blocks) = %d, want %d", tc.set, tc.tokens, tc.blocks, got, tc.want)
		}
	}
}

func TestMooncake(t *testing.T) {
	v := newFake(3)
	v.ttft = []int64{300, 100, 100}
	r := req(10, 1)
	m := mustRouter(t, "mooncake", DefaultParams())
	if i := route(t, m, r, v); i != 1 {
		t.Fatalf("mooncake = %d, want 1 (least TTFT, lowest index)", i)
	}
	p := DefaultParams()
	p.SLOTTFT = 100
	if i := route(t, mustRouter(t, "mooncake", p), r, v); i != 1 {
		t.Fatalf("SLO not enforced: %d, want 1", i)
	}
	v.ttft = []int64{300, 101, 150}
	if _, reject := mustRouter(t, "mooncake", p).Route(0, r, v); reject {
		t.Fatal("rejected without SLOReject")
	}
	p.SLOReject = true
	m = mustRouter(t, "mooncake", p)
	if i, reject := m.Route(0, r, v); !reject || i != 1 {
		t.Fatalf("best 101 > SLO 100: got (%d, %v), want (1, true)", i, reject)
	}
	v.ttft[1] = 100 // exactly at the SLO: served
	if i, reject := m.Route(0, r, v); reject || i != 1 {
		t.Fatalf("best 100 = SLO 100: got (%d, %v), want (1, false)", i, reject)
	}
}

func TestNewRouterErrors(t *testing.T) {
	if _, err := NewRouter("random", DefaultParams()); err == nil || !strings.Contains(err.Error(), "round_robin") {
		t.Fatalf("unknown router: err = %v, want one naming the known routers", err)
	}
	if _, err := NewRouter("", DefaultParams()); err == nil {
		t.Fatal("empty name accepted")
	}
	for _, tc := range []struct {
		key string
		mod func(*Params)
	}{
		{"cache_threshold", func(p *Params) { p.CacheThreshold = -0.01 }},
		{"cache_threshold", func(p *Params) { p.CacheThreshold = 1.01 }},
		{"cache_threshold", func(p *Params) { p.CacheThreshold = math.NaN() }},
		{"balance_abs", func(p *Params) { p.BalanceAbs = -1 }},
		{"balance_abs", func(p *Params) { p.BalanceAbs = math.Inf(1) }},
		{"balance_rel", func(p *Params) { p.BalanceRel = 0.999 }},
		{"overlap_weight", func(p *Params) { p.OverlapWeight = -1 }},
		{"host_weight", func(p *Params) { p.HostWeight = -0.5 }},
		{"host_weight", func(p *Params) { p.HostWeight = 1.5 }},
		{"slo_ttft", func(p *Params) { p.SLOTTFT = -1 }},
		{"slo_reject", func(p *Params) { p.SLOReject = true }},
		{"stale", func(p *Params) { p.StaleNs = -1 }},
		{"max_tree_blocks", func(p *Params) { p.MaxTreeBlocks = 0 }},
		{"block_tokens", func(p *Params) { p.BlockTokens = -1 }},
	} {
		p := DefaultParams()
		tc.mod(&p)
		for _, n := range RouterNames() {
			_, err := NewRouter(n, p)
			if err == nil || !strings.Contains(err.Error(), tc.key) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s with bad %s: err = %v, want one line naming it", n, tc.key, err)
			}
		}
	}
	// The bounds themselves are fine.
	p := DefaultParams()
	p.CacheThreshold, p.BalanceAbs, p.BalanceRel, p.OverlapWeight, p.HostWeight = 1, 0, 1, 0, 1
	p.SLOTTFT, p.SLOReject, p.MaxTreeBlocks = 1, true, 1
	if _, err := NewRouter("cache_aware", p); err != nil {
		t.Fatalf("bounds rejected: %v", err)
	}
}

// randomState fills v with a state drawn from rng.
func randomState(rng *rand.Rand, v *fakeView) {
	for i := range v.queued {
		v.queued[i], v.running[i] = rng.IntN(40), rng.IntN(40)
		v.qTok[i], v.rTok[i] = rng.Int64N(20000), rng.Int64N(20000)
		v.hbm[i] = rng.IntN(6)
		v.all[i] = v.hbm[i] + rng.IntN(6)
		v.ttft[i] = rng.Int64N(1e9)
	}
}

func TestRoutersAreDeterministic(t *testing.T) {
	for _, name := range RouterNames() {
		p := DefaultParams()
		p.SLOTTFT, p.SLOReject, p.MaxTreeBlocks = 5e8, true, 64
		a, b := mustRouter(t, name, p), mustRouter(t, name, p)
		rng := rand.New(rand.NewPCG(1, 2))
		va, vb := newFake(8), newFake(8)
		counts := make([]int, 8)
		for range 2000 {
			seed := rng.Uint64()
			randomState(rand.New(rand.NewPCG(seed, 0)), va)
			randomState(rand.New(rand.NewPCG(seed, 0)), vb)
			// Conversations: a few roots, growing prefixes.
			n := 1 + rng.IntN(10)
			blocks := make([]core.Block, n)
			blocks[0] = core.Block(rng.IntN(5))
			for j := 1; j < n; j++ {
				blocks[j] = core.Block(100*j + rng.IntN(3))
			}
			r := req(512*n, blocks...)
			ia, ra := a.Route(int64(seed), r, va)
			ib, rb := b.Route(int64(seed), r, vb)
			if ia != ib || ra != rb {
				t.Fatalf("%s: (%d, %v) vs (%d, %v) on the same inputs", name, ia, ra, ib, rb)
			}
			if ia < 0 || ia >= 8 {
				t.Fatalf("%s: instance %d out of range", name, ia)
			}
			counts[ia]++
		}
		spread := 0
		for _, c := range counts {
			if c > 0 {
				spread++
			}
		}
		if spread < 2 {
			t.Errorf("%s used %d instance(s) over 2000 varied requests: %v", name, spread, counts)
		}
	}
}

// BenchmarkRoute routes conversation-like requests over 16 instances; run
// with -benchmem: a router at its tree bound allocates nothing per request.
func BenchmarkRoute(b *testing.B) {
	for _, name := range RouterNames() {
		b.Run(name, func(b *testing.B) {
			p := DefaultParams()
			p.MaxTreeBlocks = 256
			r, err := NewRouter(name, p)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			v := newFake(16)
			randomState(rng, v)
			reqs := make([]*core.Request, 1024)
			for k := range reqs {
				n := 1 + rng.IntN(20)
				bl := make([]core.Block, n)
				for j := range bl {
					bl[j] = core.Block(j*64 + rng.IntN(4))
				}
				reqs[k] = req(512*n, bl...)
			}
			b.ResetTimer()
			for k := range b.N {
				r.Route(int64(k), reqs[k%len(reqs)], v)
			}
		})
	}
}
