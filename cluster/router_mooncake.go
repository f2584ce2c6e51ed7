package cluster

import (
	"math"

	"kvsim/core"
	"kvsim/param"
)

func init() {
	RegisterRouter(RouterSpec{Name: "mooncake", Rank: 5, Brief: "the least estimated TTFT; may refuse",
		Reads: "`EstimateTTFT`", State: "none",
		Keys: []param.Key{
			{Name: "slo_reject", Type: param.Bool, Default: false, Example: "false",
				Doc: "mooncake: reject a request whose best estimated TTFT misses [slo] ttft_ms"},
		},
		New: func(p Params) Router { return mooncake{p: p} }})
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
