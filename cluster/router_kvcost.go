package cluster

import (
	"math"

	"kvsim/core"
	"kvsim/param"
)

func init() {
	RegisterRouter(RouterSpec{Name: "kv_cost", Rank: 4, Brief: "the least Dynamo cost",
		Reads: "`QueuedTokens`, `RunningTokens`, `Prefix`", State: "none",
		Keys: []param.Key{
			{Name: "overlap_weight", Type: param.Number, Default: 1.0, Min: param.AtLeast0, Example: "1.0",
				Doc: "kv_cost: weight of the blocks to prefill against the blocks to decode (Dynamo)"},
			{Name: "host_weight", Type: param.Number, Default: 0.75, Min: param.AtLeast0, FMax: 1, Example: "0.75",
				Msg: "must be within 0..1 (above 1 a lower-tier hit would beat an hbm hit), got %g",
				Doc: "kv_cost: the share of a hit a block found below hbm is credited (Dynamo's host_cache_hit_weight)"},
		},
		New: func(p Params) Router { return kvCost{p: p} }})
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
