package cluster

import (
	"fmt"
	"math"
	"strings"

	"kvsim/core"
)

// Params tunes the routers; each router reads only its own fields, but
// NewRouter validates all of them so a bad value never waits for the router
// that would read it. docs/routers.md gives each default's source.
type Params struct {
	// cache_aware (SGLang): a prefix match rate strictly above
	// CacheThreshold (0..1) wins; the load is imbalanced when
	// max-min > BalanceAbs and max > min*BalanceRel (>= 1).
	CacheThreshold, BalanceAbs, BalanceRel float64
	// kv_cost (Dynamo): cost = OverlapWeight x prefill blocks + decode
	// blocks, a block found below HBM credited HostWeight (0..1) of a hit.
	OverlapWeight, HostWeight float64
	// mooncake: with SLOReject, refuse a request whose best estimated TTFT
	// exceeds SLOTTFT (ns; 0: no SLO).
	SLOTTFT   int64
	SLOReject bool
	// StaleNs is how late a router sees the cluster (ns): the
	// coordinator honours it (Config.StaleNs, lag.go); the routers
	// themselves ignore it.
	StaleNs int64
	// MaxTreeBlocks bounds each instance's tree of routed prefixes in
	// cache_aware (SGLang's max_tree_size); least recently routed leaves go.
	MaxTreeBlocks int
	// BlockTokens converts the View's token counts to blocks in kv_cost;
	// 0: ceil(InputTokens/len(Blocks)) of the request being routed.
	BlockTokens int
}

// DefaultParams returns the real systems' defaults (docs/routers.md).
func DefaultParams() Params {
	return Params{
		CacheThreshold: 0.5,
		BalanceAbs:     32,
		BalanceRel:     1.0001,
		OverlapWeight:  1,
		HostWeight:     0.75,
		// SGLang's 2^24 characters at ~4 per token, in blocks of 512.
		MaxTreeBlocks: 8192,
	}
}

// Validate reports the first bad field, named as a scenario key would be.
func (p Params) Validate() error {
	finite := func(key string, x float64) error {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s: must be a finite number, got %v", key, x)
		}
		return nil
	}
	for _, f := range []struct {
		key string
		x   float64
	}{
		{"cache_threshold", p.CacheThreshold}, {"balance_abs", p.BalanceAbs},
		{"balance_rel", p.BalanceRel}, {"overlap_weight", p.OverlapWeight},
		{"host_weight", p.HostWeight},
	} {
		if err := finite(f.key, f.x); err != nil {
			return err
		}
	}
	switch {
	case p.CacheThreshold < 0 || p.CacheThreshold > 1:
		return fmt.Errorf("cache_threshold: must be within 0..1, got %v", p.CacheThreshold)
	case p.BalanceAbs < 0:
		return fmt.Errorf("balance_abs: must be >= 0, got %v", p.BalanceAbs)
	case p.BalanceRel < 1:
		return fmt.Errorf("balance_rel: must be >= 1, got %v", p.BalanceRel)
	case p.OverlapWeight < 0:
		return fmt.Errorf("overlap_weight: must be >= 0, got %v", p.OverlapWeight)
	case p.HostWeight < 0 || p.HostWeight > 1:
		// Above 1 a lower-tier hit would beat an HBM hit.
		return fmt.Errorf("host_weight: must be within 0..1, got %v", p.HostWeight)
	case p.SLOTTFT < 0:
		return fmt.Errorf("slo_ttft: must be >= 0, got %d", p.SLOTTFT)
	case p.SLOReject && p.SLOTTFT == 0:
		return fmt.Errorf("slo_reject: needs an slo_ttft > 0")
	case p.StaleNs < 0:
		return fmt.Errorf("stale: must be >= 0, got %d", p.StaleNs)
	case p.MaxTreeBlocks < 1:
		return fmt.Errorf("max_tree_blocks: must be >= 1, got %d", p.MaxTreeBlocks)
	case p.BlockTokens < 0:
		return fmt.Errorf("block_tokens: must be >= 0, got %d", p.BlockTokens)
	}
	return nil
}

// routerNames in the order RouterNames lists them.
var routerNames = []string{"round_robin", "least_loaded", "cache_aware", "kv_cost", "mooncake"}

// RouterNames lists the routers NewRouter knows.
func RouterNames() []string { return append([]string(nil), routerNames...) }

// NewRouter returns a fresh router (each keeps its own state: one per run).
func NewRouter(name string, p Params) (Router, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("router %q: %w", name, err)
	}
	switch name {
	case "round_robin":
		return &roundRobin{}, nil
	case "least_loaded":
		return leastLoaded{}, nil
	case "cache_aware":
		return newCacheAware(p), nil
	case "kv_cost":
		return kvCost{p: p}, nil
	case "mooncake":
		return mooncake{p: p}, nil
	}
	return nil, fmt.Errorf("router: unknown %q (known: %s)", name, strings.Join(routerNames, ", "))
}

// roundRobin takes the instances in turn, from 0.
type roundRobin struct{ next int }

func (*roundRobin) Name() string { return "round_robin" }

func (rr *roundRobin) Route(_ int64, _ *core.Request, v View) (int, bool) {
	n := v.Instances()
	if n <= 0 {
		return 0, true
	}
	i := rr.next % n
	rr.next = i + 1
	return i, false
}

// leastLoaded takes the instance with the fewest queued + running tokens.
type leastLoaded struct{}

func (leastLoaded) Name() string { return "least_loaded" }

func (leastLoaded) Route(_ int64, _ *core.Request, v View) (int, bool) {
	n := v.Instances()
	if n <= 0 {
		return 0, true
	}
	best, bestLoad := 0, int64(math.MaxInt64)
	for i := range n {
		if l := v.QueuedTokens(i) + v.RunningTokens(i); l < bestLoad {
			best, bestLoad = i, l
		}
	}
	return best, false
}

// kvCost is Dynamo's KV router at temperature 0: the least cost wins.
type kvCost struct{ p Params }

func (kvCost) Name() string { return "kv_cost" }

func (k kvCost) Route(_ int64, r *core.Request, v View) (int, bool) {
	n := v.Instances()
	if n <= 0 {
		return 0, true
	}
	best, bestCost := 0, math.Inf(1)
	for i := range n {
		if c := k.cost(r, v, i); c < bestCost {
			best, bestCost = i, c
		}
	}
	return best, false
}

// cost is Dynamo's logit for r on instance i, in blocks:
// OverlapWeight x max(0, queued prefill + r's blocks - credit) +
// running blocks + r's blocks, where credit = HBM hits + HostWeight x hits
// found only below HBM.
func (k kvCost) cost(r *core.Request, v View, i int) float64 {
	nb := float64(len(r.Blocks))
	bt := float64(blockTokens(k.p, r))
	hbm, all := v.Prefix(i, r.Blocks)
	credit := float64(hbm) + k.p.HostWeight*float64(all-hbm)
	prefill := max(float64(v.QueuedTokens(i))/bt+nb-credit, 0)
	decode := float64(v.RunningTokens(i))/bt + nb
	return k.p.OverlapWeight*prefill + decode
}

// blockTokens is p.BlockTokens, or r's tokens per block when that is 0.
func blockTokens(p Params, r *core.Request) int {
	if p.BlockTokens > 0 {
		return p.BlockTokens
	}
	if len(r.Blocks) == 0 {
		return max(r.InputTokens, 1)
	}
	return max((r.InputTokens+len(r.Blocks)-1)/len(r.Blocks), 1)
}

// mooncake is the Conductor: the least estimated TTFT wins; with an SLO to
// enforce, a request even the best instance would serve late is refused.
type mooncake struct{ p Params }

func (mooncake) Name() string { return "mooncake" }

func (m mooncake) Route(_ int64, r *core.Request, v View) (int, bool) {
	n := v.Instances()
	if n <= 0 {
		return 0, true
	}
	best, bestTTFT := 0, int64(math.MaxInt64)
	for i := range n {
		if t := v.EstimateTTFT(i, r); t < bestTTFT {
			best, bestTTFT = i, t
		}
	}
	return best, m.p.SLOReject && m.p.SLOTTFT > 0 && bestTTFT > m.p.SLOTTFT
}
