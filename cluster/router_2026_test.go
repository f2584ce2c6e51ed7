package cluster

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"kvsim/core"
	"kvsim/sim"
)

// Hand-computed scores for llmd_precise, llmd_approximate and kv_cost's
// Dynamo terms. Blocks are 100 tokens (BlockTokens) throughout; the llm-d
// routers read their metrics live unless a test sets llmd_scrape_ms (the
// tests change a fake View between routes at time 0).

func params2026(set map[string]any) Params {
	p := DefaultParams()
	p.BlockTokens = 100
	p.Keys.Set("llmd_scrape_ms", 0.0)
	for k, x := range set {
		p.Keys.Set(k, x)
	}
	return p
}

func TestLLMDPreciseByHand(t *testing.T) {
	l := newLLMDPrecise(params2026(nil))
	r := req(400, 1, 2, 3, 4)
	v := newFake(3)
	// 0: two blocks in hbm, two in dram: 1 + 1 + 0.8 + 0.8 = 3.6.
	// 1: all four in dram only (a lower-tier-only match): 4 x 0.8 = 3.2.
	// 2: nothing: not scored.
	v.tiers = [][]uint8{{0, 0, 1, 1}, {1, 1, 1, 1}, nil}
	v.all[2] = 0
	for i, want := range []float64{3.6, 3.2, 0} {
		s, held := l.score(r, v, i)
		if math.Abs(s-want) > 1e-12 || held != (i < 2) {
			t.Fatalf("score %d = %v, %v; want %v", i, s, held, want)
		}
	}
	// Normalised over the scored: 1, 0, 0. Queues equal: 1 each. KV:
	// 0.5 used on 0. Totals: 3 + 1 + 0.5 = 4.5, 0 + 1 + 1 = 2, 2.
	v.usage[0] = 0.5
	if i := route(t, l, r, v); i != 0 {
		t.Fatalf("llmd_precise = %d, want 0", i)
	}
	// 0's queue the longest (queue score 0) and its HBM full: 3 + 0 + 0 = 3 > 2.
	v.queued[0], v.usage[0] = 4, 1
	if i := route(t, l, r, v); i != 0 {
		t.Fatalf("llmd_precise = %d, want 0", i)
	}
	// Prefix weight 1: 1 + 0 + 0 = 1 < 0 + 1 + 1 = 2: the lowest of 1 and 2.
	l2 := newLLMDPrecise(params2026(map[string]any{"llmd_prefix_weight": 1.0}))
	if i := route(t, l2, r, v); i != 1 {
		t.Fatalf("prefix weight 1: %d, want 1", i)
	}
	// Only 1 holds anything (dram only): alone it normalises to 1: 3 + 1 + 1 = 5.
	v = newFake(3)
	v.tiers = [][]uint8{{}, {1, 1, 1, 1}, {}}
	if i := route(t, l, r, v); i != 1 {
		t.Fatalf("lower-tier-only match: %d, want 1", i)
	}
	// A tie: 0 and 1 hold the same two hbm blocks (both 1 after
	// normalising), 2 holds storage only (2 x 0.3 = 0.6, normalised 0):
	// 0 and 1 score 5, the lowest index wins.
	v.tiers = [][]uint8{{0, 0}, {0, 0}, {2, 2}}
	if s, _ := l.score(r, v, 2); math.Abs(s-0.6) > 1e-12 {
		t.Fatalf("storage score = %v, want 0.6", s)
	}
	if i := route(t, l, r, v); i != 0 {
		t.Fatalf("tie: %d, want 0", i)
	}
}

// windowFake is a model with sliding-window layers whose window group
// holds only the blocks in held[i].
type windowFake struct {
	*fakeView
	held []map[core.Block]bool
}

func (w windowFake) WindowHeld(i int, b core.Block) bool { return w.held[i][b] }

func TestLLMDPreciseSlidingWindow(t *testing.T) {
	r := req(600, 1, 2, 3, 4, 5, 6)
	f := newFake(2)
	// Full attention: 0 holds all six in hbm, 1 the first five.
	f.tiers = [][]uint8{{0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}
	v := windowFake{f, []map[core.Block]bool{
		{1: true, 2: true, 3: true, 4: true}, // the window group freed 5 and 6
		{1: true, 2: true, 3: true, 4: true, 5: true, 6: true},
	}}
	full := newLLMDPrecise(params2026(nil))
	if i := route(t, full, r, v); i != 0 {
		t.Fatalf("full attention: %d, want 0 (6 blocks > 5)", i)
	}
	// A 200-token window is 2 blocks: on 0, prefixes 6 and 5 end where the
	// window group holds nothing; 4 ends on blocks 3, 4, held: score 4. On
	// 1, 5 ends on 4, 5: score 5. 1 wins.
	p := params2026(nil)
	p.SlidingWindow = 200
	l := newLLMDPrecise(p)
	for i, want := range []float64{4, 5} {
		if s, _ := l.score(r, v, i); s != want {
			t.Fatalf("window score %d = %v, want %v", i, s, want)
		}
	}
	if i := route(t, l, r, v); i != 1 {
		t.Fatalf("sliding window: %d, want 1", i)
	}
	// A prefix shorter than the window needs all its blocks: 0 holds
	// block 1 only in its window group, prefix 1 of a 3-block window: 1.
	v.held[0] = map[core.Block]bool{1: true}
	p.SlidingWindow = 300
	if s, _ := newLLMDPrecise(p).score(r, v, 0); s != 1 {
		t.Fatalf("short prefix: %v, want 1", s)
	}
}

func TestLLMDApproximateByHand(t *testing.T) {
	l := newLLMDApprox(params2026(nil))
	v := newFake(2)
	// Nothing routed: prefix scores 0, queues equal, KV equal: a tie, to 0.
	if i := route(t, l, req(200, 1, 2), v); i != 0 {
		t.Fatalf("first = %d, want 0", i)
	}
	// 0 remembers 1, 2: a request 1..4 matches 2 of 4: 3 x 0.5 + 1 + 1 = 3.5 > 2.
	r := req(400, 1, 2, 3, 4)
	if i := route(t, l, r, v); i != 0 {
		t.Fatalf("second = %d, want 0", i)
	}
	// 0 now remembers 1..4 (4 of 4: 3); its queue the longest (0) and 0.6
	// used: 3 + 0 + 0.4 = 3.4 > 0 + 1 + 1 = 2.
	v.queued[0], v.usage[0] = 1, 0.6
	if i := route(t, l, r, v); i != 0 {
		t.Fatalf("third = %d, want 0", i)
	}
	// A new prefix: 0 + 0 + 0.4 < 2: to 1, which then remembers it.
	if i := route(t, l, req(200, 7, 8), v); i != 1 {
		t.Fatalf("new prefix = %d, want 1", i)
	}
	if m := l.trees[1].match([]core.Block{7, 8}); m != 2 {
		t.Fatalf("1 remembers %d blocks of 7, 8", m)
	}
	// The match limit: 200 tokens is 2 blocks, so 1..4 scores 2 of 2 on 0.
	l = newLLMDApprox(params2026(map[string]any{"approx_max_tokens": int64(200)}))
	route(t, l, req(200, 1, 2), newFake(2))
	if m := l.trees[0].match([]core.Block{1, 2, 3}); m != 2 {
		t.Fatalf("limited: remembers %d", m)
	}
}

// TestLLMDScrapeByHand: the queue and KV scorers read the metrics taken at
// the first arrival of each llmd_scrape_ms interval, in both llm-d routers.
// Prefix weight 1 (the benchmark's approximate profile); queue and KV 1.
func TestLLMDScrapeByHand(t *testing.T) {
	ms := int64(1e6)
	for _, name := range []string{"llmd_precise", "llmd_approximate"} {
		l := mustRouter(t, name, params2026(map[string]any{"llmd_scrape_ms": 50.0, "llmd_prefix_weight": 1.0}))
		live := mustRouter(t, name, params2026(map[string]any{"llmd_prefix_weight": 1.0}))
		v := newFake(2)
		at := func(now int64) int {
			i, _ := l.Route(now, req(200, 1, 2), v)
			return i
		}
		// Nothing held or routed, queues equal; 0 is 0.2 used:
		// 1 + 0.8 = 1.8 < 1 + 1 = 2. (approximate: 1 then remembers 1, 2.)
		v.usage[0] = 0.2
		if i := at(10 * ms); i != 1 {
			t.Fatalf("%s at 10 ms: %d, want 1", name, i)
		}
		// 1 fills to 0.9. Live: 1.8 > 1.1, to 0. Scraped at 10 ms (the
		// interval 0..50 ms): 0.2 and 0 still, to 1 (approximate: 1 + 2 on 1).
		v.usage[1] = 0.9
		if i, _ := live.Route(40*ms, req(200, 5, 6), v); i != 0 {
			t.Fatalf("%s live at 40 ms: %d, want 0", name, i)
		}
		if i := at(40 * ms); i != 1 {
			t.Fatalf("%s at 40 ms (scraped at 10 ms): %d, want 1", name, i)
		}
		// 50 ms, a new interval; 1's queue is 3 (queue score 0, 0's 1):
		// 1 + 0.8 on 0 against 0 + 0.1 on 1 (approximate: + 1 on 1: 1.1).
		// To 0 (approximate: 0 now remembers 1, 2 too).
		v.queued[1] = 3
		if i := at(50 * ms); i != 0 {
			t.Fatalf("%s at 50 ms: %d, want 0", name, i)
		}
		// 1 drains and empties, unseen in this interval: 1.8 against 0.1
		// (approximate: 2.8 against 1.1), to 0.
		v.queued[1], v.usage[1] = 0, 0
		if i := at(99 * ms); i != 0 {
			t.Fatalf("%s at 99 ms (scraped at 50 ms): %d, want 0", name, i)
		}
		// 100 ms: 1 seen empty: 1.8 against 2 (approximate: 2.8 against 3), to 1.
		if i := at(100 * ms); i != 1 {
			t.Fatalf("%s at 100 ms: %d, want 1", name, i)
		}
	}
}

// TestLLMDApproximateBytesPerToken: the LRU and the match limit, counted in
// 4-byte tokens, cover approx_*_tokens x 4 / approx_bytes_per_token of the
// prompt's tokens.
func TestLLMDApproximateBytesPerToken(t *testing.T) {
	keys := func(b float64) map[string]any {
		return map[string]any{"approx_max_tokens": int64(400), "approx_lru_tokens": int64(400), "approx_bytes_per_token": b}
	}
	// 8 bytes a token: 400 x 4 / 8 = 200 tokens, 2 blocks of 100, for both.
	l := newLLMDApprox(params2026(keys(8)))
	if l.maxTok != 200 || l.lruTok != 200 {
		t.Fatalf("8 bytes a token: limits %d, %d; want 200, 200", l.maxTok, l.lruTok)
	}
	v := newFake(1)
	route(t, l, req(400, 1, 2, 3, 4), v)
	if m := l.trees[0].match([]core.Block{1, 2, 3, 4}); m != 2 {
		t.Fatalf("8 bytes a token: remembers %d of 1..4, want 2", m)
	}
	// The LRU holds 2 blocks: 7, 8 push 1, 2 out.
	route(t, l, req(200, 7, 8), v)
	if a, b := l.trees[0].match([]core.Block{1, 2}), l.trees[0].match([]core.Block{7, 8}); a != 0 || b != 2 {
		t.Fatalf("8 bytes a token: 1, 2 -> %d, 7, 8 -> %d; want 0, 2", a, b)
	}
	// 4 bytes a token (the scorer's own count, the default): 400 tokens,
	// 4 blocks: all of 1..4 remembered; then 7, 8 push out the least
	// recent leaves, 4 and 3.
	l = newLLMDApprox(params2026(keys(4)))
	route(t, l, req(400, 1, 2, 3, 4), v)
	if m := l.trees[0].match([]core.Block{1, 2, 3, 4}); m != 4 {
		t.Fatalf("4 bytes a token: remembers %d of 1..4, want 4", m)
	}
	route(t, l, req(200, 7, 8), v)
	if a, b := l.trees[0].match([]core.Block{1, 2, 3, 4}), l.trees[0].match([]core.Block{7, 8}); a != 2 || b != 2 {
		t.Fatalf("4 bytes a token: 1..4 -> %d, 7, 8 -> %d; want 2, 2", a, b)
	}
	// 2 bytes a token: 800 tokens, 8 blocks.
	if l = newLLMDApprox(params2026(keys(2))); l.maxTok != 800 || l.lruTok != 800 {
		t.Fatalf("2 bytes a token: limits %d, %d; want 800, 800", l.maxTok, l.lruTok)
	}
}

func TestKVCostDynamoTerms(t *testing.T) {
	r := req(400, 1, 2, 3, 4)
	v := newFake(2)
	// A device run of 1, then tier 1, then two in tier 2.
	v.tiers = [][]uint8{{0, 1, 2, 2}, nil}
	// Defaults (disk 0.75, the earlier credit): 1 + 0.75 x 3 = 3.25;
	// prefill 4 - 3.25 = 0.75, decode 4: 4.75.
	if c := newKVCost(params2026(nil)).cost(0, r, v, 0, 0); c != 4.75 {
		t.Fatalf("default cost = %v, want 4.75", c)
	}
	// Dynamo's disk 0.25: 1 + 0.75 + 0.5 = 2.25; 1.75 + 4 = 5.75.
	if c := newKVCost(params2026(map[string]any{"disk_weight": 0.25})).cost(0, r, v, 0, 0); c != 5.75 {
		t.Fatalf("disk 0.25: cost = %v, want 5.75", c)
	}
	// Tier 2 pooled, shared 0.5: 1 + 0.75 + 0.5 x 2 = 2.75; 1.25 + 4 = 5.25.
	v.pool = 2
	if c := newKVCost(params2026(map[string]any{"shared_weight": 0.5})).cost(0, r, v, 0, 0); c != 5.25 {
		t.Fatalf("shared: cost = %v, want 5.25", c)
	}
	v.pool = -1
	// Two more blocks a peer would serve (the fake's counts taken as given):
	// 0 by default; with peer 0.5,
	// 3.25 + 1 = 4.25, prefill 0 (4 - 4.25, floored), decode 4: 4.
	v.peers = []int{2, 0}
	if c := newKVCost(params2026(nil)).cost(0, r, v, 0, 0); c != 4.75 {
		t.Fatalf("peers, weight 0: cost = %v, want 4.75", c)
	}
	if c := newKVCost(params2026(map[string]any{"peer_weight": 0.5})).cost(0, r, v, 0, 0); c != 4 {
		t.Fatalf("peers, weight 0.5: cost = %v, want 4", c)
	}
	v.peers = nil
	// Credit decay 1: 0 has 4 queued blocks above the least (0), one
	// request's worth: decay 1/2. All four in hbm: credit 2; prefill
	// 4 + 4 - 2 = 6; decode 4: 10.
	v.tiers[0] = []uint8{0, 0, 0, 0}
	v.qTok[0] = 400
	if c := newKVCost(params2026(map[string]any{"credit_decay": 1.0})).cost(0, r, v, 0, 0); c != 10 {
		t.Fatalf("decay: cost = %v, want 10", c)
	}
	// Overlap credit 0.5 without decay: the same 2 credited.
	if c := newKVCost(params2026(map[string]any{"overlap_credit": 0.5})).cost(0, r, v, 0, 0); c != 10 {
		t.Fatalf("credit 0.5: cost = %v, want 10", c)
	}
	// Active requests 2 each: 1 queued + 2 running = 3: 4 + 4 + 6 = 14.
	v.queued[0], v.running[0] = 1, 2
	if c := newKVCost(params2026(map[string]any{"active_request_weight": 2.0})).cost(0, r, v, 0, 400); c != 14 {
		t.Fatalf("active: cost = %v, want 14", c)
	}
}

func TestKVCostTemperature(t *testing.T) {
	// Costs 8 and 9.5 normalise to 0 and 1: at temperature 1 the weights
	// are 1 and e^-1, so instance 0 has probability 1/(1 + e^-1) = 0.7311.
	costs := []float64{8, 9.5}
	p0 := 1 / (1 + math.Exp(-1))
	if i := softmaxPick(costs, 1, p0-1e-9); i != 0 {
		t.Fatalf("below p0: %d", i)
	}
	if i := softmaxPick(costs, 1, p0+1e-9); i != 1 {
		t.Fatalf("above p0: %d", i)
	}
	if i := softmaxPick([]float64{3, 3, 3}, 0.5, 0.5); i != 1 {
		t.Fatalf("equal costs are uniform: u 0.5 of 3 is %d, want 1", i)
	}
	v := newFake(2)
	v.hbm[1], v.all[1] = 4, 4
	r := req(400, 1, 2, 3, 4) // 0: 4 + 4 = 8; 1: 0 + 4 = 4
	if i := route(t, newKVCost(params2026(nil)), r, v); i != 1 {
		t.Fatalf("temperature 0: %d, want 1", i)
	}
	// Temperature 1, seed 7: instance 1 with probability 1/(1 + e^-1).
	k := newKVCost(params2026(map[string]any{"temperature": 1.0, "sample_seed": int64(7)}))
	ones := 0
	const n = 20000
	for s := range int64(n) {
		r.Seq = s
		i := route(t, k, r, v)
		// Weights e^-1 for 0 (cost 8), 1 for 1 (cost 4): 0 below 1 - p0.
		if u := unitSample(7, uint64(s)); (i == 1) != (u >= 1-p0) {
			t.Fatalf("seq %d: u %v chose %d", s, u, i)
		}
		ones += i
	}
	if share := float64(ones) / n; math.Abs(share-p0) > 0.01 {
		t.Fatalf("instance 1 chosen %.4f of the time, want %.4f", share, p0)
	}
}

func TestKVCostWithoutEvents(t *testing.T) {
	k := newKVCost(params2026(map[string]any{"kv_events": false}))
	v := newFake(2)
	v.hbm[1], v.all[1] = 9, 9 // the View's cache is ignored without events
	v.rTok[0] = 150           // 1.5 blocks decoding on 0
	// Nothing routed: 0 costs 2 + 3.5, 1 costs 2 + 2: to 1.
	if i := route(t, k, req(200, 1, 2), v); i != 1 {
		t.Fatalf("first: %d, want 1", i)
	}
	// 1 is credited 1, 2 (routed at 0): 3 - 2 + 3 = 4 < 0's 3 + 4.5.
	v.rTok[1] = 100 // 1 block on 1: 4 + 1 = 5 < 7.5
	r := req(300, 1, 2, 3)
	if i, _ := k.Route(1e9, r, v); i != 1 {
		t.Fatalf("second: %d, want 1", i)
	}
	// 121 s after the refresh at 1 s the blocks expired: 1 costs 3 + 4 = 7
	// < 7.5: still 1; with 2 blocks decoding on 1 (8 > 7.5), to 0.
	v.rTok[1] = 200
	if i, _ := k.Route(122e9, r, v); i != 0 {
		t.Fatalf("after the TTL: %d, want 0", i)
	}
	// The bound: 2 blocks per instance keep the most recent two.
	k = newKVCost(params2026(map[string]any{"kv_events": false, "index_blocks": int64(2)}))
	k.Route(0, req(300, 1, 2, 3), newFake(1))
	if m := k.approx[0].match(0, []core.Block{2, 3}); m != 2 {
		t.Fatalf("bound: holds %d of 2, 3", m)
	}
	if m := k.approx[0].match(0, []core.Block{1}); m != 0 {
		t.Fatalf("bound: still holds 1")
	}
}

// TestLLMDPreciseWindowWired: with Config.SlidingWindow the cluster's own
// View tells which blocks each instance's sliding-window layers keep: the
// last ceil(8 / 4) = 2 blocks of every prompt it ran. Request 0 (blocks 0
// 1 2 3) ran on instance 0, which keeps 2 3 in its window; request 1
// (blocks 0 1) on instance 1, which keeps 0 1. Request 2 (0 1 2 3 4):
// instance 0 holds 4 blocks of it ending on 2 3, held: score 4; instance
// 1 holds 2 ending on 0 1: 2. Request 3 (0 1 2 9): instance 0 holds 0 1
// 2, but no prefix of them ends on a held window (2 is held, 1 is not; 1
// and 0 are not): 0, not scored; instance 1: 2. Instance 1 wins request
// 3, 3 x 1 + 1 + 1 = 5 against 0 + 1 + 1 = 2, where full attention sends
// it to instance 0 (3 blocks against 2).
func TestLLMDPreciseWindowWired(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 16, OutputTokens: 1, Blocks: []core.Block{0, 1, 2, 3}},
		{Seq: 1, Arrival: 0, InputTokens: 8, OutputTokens: 1, Blocks: []core.Block{0, 1}},
		{Seq: 2, Arrival: 100_000, InputTokens: 20, OutputTokens: 1, Blocks: []core.Block{0, 1, 2, 3, 4}},
		{Seq: 3, Arrival: 200_000, InputTokens: 16, OutputTokens: 1, Blocks: []core.Block{0, 1, 2, 9}},
	}
	for _, tc := range []struct {
		window int
		scores []string // of requests 2 and 3: instance 0, instance 1
		inst3  int
	}{
		{8, []string{"4/true 2/true", "0/false 2/true"}, 1},
		{0, []string{"4/true 2/true", "3/true 2/true"}, 0},
	} {
		p := params2026(nil)
		p.BlockTokens, p.SlidingWindow = 4, tc.window
		l := newLLMDPrecise(p)
		var scores []string
		chosen := map[int64]int{}
		probe := routerFunc(func(now int64, r *core.Request, v View) (int, bool) {
			if r.Seq < 2 { // placed by hand
				chosen[r.Seq] = int(r.Seq)
				return int(r.Seq), false
			}
			s0, h0 := l.score(r, v, 0)
			s1, h1 := l.score(r, v, 1)
			scores = append(scores, fmt.Sprintf("%v/%v %v/%v", s0, h0, s1, h1))
			i, rej := l.Route(now, r, v)
			chosen[r.Seq] = i
			return i, rej
		})
		cfg := Config{Instances: []sim.Config{tinyNode(), tinyNode()}, Router: probe, SlidingWindow: tc.window}
		runCluster(t, cfg, reqs)
		if !slices.Equal(scores, tc.scores) || chosen[3] != tc.inst3 {
			t.Errorf("window %d: scores %q, request 3 to %d; want %q, %d", tc.window, scores, chosen[3], tc.scores, tc.inst3)
		}
	}
}

// TestLLMDPreciseIgnoresPeers: as llm-d's LongestPrefixScorer, a block an
// instance could only read from a peer scores nothing. Instance 0 holds
// blocks 1 2 in hbm (2), instance 1 block 1 (1) and could read 2 3 4 from a
// peer: the scores stay 2 and 1, and 0 wins (3 + 1 + 1 against 0 + 1 + 1).
func TestLLMDPreciseIgnoresPeers(t *testing.T) {
	r := req(400, 1, 2, 3, 4)
	v := newFake(2)
	v.tiers = [][]uint8{{0, 0}, {0}}
	v.peers = []int{0, 3}
	l := newLLMDPrecise(params2026(nil))
	for i, want := range []float64{2, 1} {
		if s, _ := l.score(r, v, i); s != want {
			t.Fatalf("instance %d scores %v, want %v", i, s, want)
		}
	}
	if i := route(t, l, r, v); i != 0 {
		t.Fatalf("routed to %d, want 0", i)
	}
}
