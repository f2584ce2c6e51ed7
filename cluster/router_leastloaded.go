package cluster

import (
	"math"

	"kvsim/core"
)

func init() {
	RegisterRouter(RouterSpec{Name: "least_loaded", Rank: 2, Brief: "the fewest queued + running tokens",
		Reads: "`QueuedTokens`, `RunningTokens`", State: "none",
		New: func(Params) Router { return leastLoaded{} }})
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
