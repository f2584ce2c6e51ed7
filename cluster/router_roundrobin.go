package cluster

import (
	"kvsim/core"
)

func init() {
	RegisterRouter(RouterSpec{Name: "round_robin", Rank: 1, Brief: "the next instance in turn, from 0",
		Reads: "the instance count", State: "a counter",
		New: func(Params) Router { return &roundRobin{} }})
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
