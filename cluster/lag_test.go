package cluster

import (
	"reflect"
	"testing"

	"kvsim/core"
	"kvsim/sim"
)

// TestStaleView: request 0 (blocks 0 1, 50 output tokens: it decodes
// until about 55 us) arrives at 0 on instance 0 and is admitted at once,
// its blocks entering HBM then; request 1 (blocks 0 1 2) arrives at 10 us,
// request 2 at 40 us, both sent to instance 0. Exact, the router sees the
// prefix and request 0 running. 5 us late it knows of the blocks (the
// events are 10 us old) but not of request 0 running (the last load report
// old enough was taken at 0, before it arrived); at 40 us it has the
// report of 10 us (request 0 running). 20 us late it knows nothing at
// 10 us and, at 40 us, the state of 20 us: all three blocks (request 1
// brought block 2 at 10 us), the report of 10 us. 35 us late, at 40 us,
// the state of 5 us: request 0's two blocks, the report of 0.
func TestStaleView(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: 50, Blocks: []core.Block{0, 1}},
		{Seq: 1, Arrival: 10_000, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{0, 1, 2}},
		{Seq: 2, Arrival: 40_000, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{0, 1, 2}},
	}
	for _, tc := range []struct {
		stale int64
		want  []int // per request: instance 0's prefix (any tier), instance 0's running
	}{
		{0, []int{0, 0, 2, 1, 3, 1}},
		{5_000, []int{0, 0, 2, 0, 3, 1}},
		{20_000, []int{0, 0, 0, 0, 3, 1}},
		{35_000, []int{0, 0, 0, 0, 2, 0}},
		{100_000, []int{0, 0, 0, 0, 0, 0}},
	} {
		var got []int
		cfg := Config{
			Instances: []sim.Config{tinyNode(), tinyNode()},
			Router: routerFunc(func(_ int64, r *core.Request, v View) (int, bool) {
				_, a := v.Prefix(0, r.Blocks)
				got = append(got, a, v.Running(0))
				return 0, false
			}),
			StaleNs: tc.stale,
		}
		runCluster(t, cfg, reqs)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("stale %d ns: router saw %v, want %v", tc.stale, got, tc.want)
		}
	}
}

// TestEstimateBesideDecodes: a 12-token prompt on an idle instance takes
// two steps, 8 and 4 tokens: 1080 + 1040 = 2120 ns. On an instance where
// one request is decoding, each step also carries its decode (one token
// of the budget, 100 ns): 7 + 5 tokens, 1170 + 1150 = 2320 ns.
func TestEstimateBesideDecodes(t *testing.T) {
	reqs := []core.Request{
		{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: 50, Blocks: []core.Block{0, 1}},
		{Seq: 1, Arrival: 10_000, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{5, 6, 7}},
	}
	var got []int64
	cfg := Config{
		Instances: []sim.Config{tinyNode(), tinyNode()},
		Router: routerFunc(func(_ int64, r *core.Request, v View) (int, bool) {
			got = append(got, v.EstimateTTFT(0, r), v.EstimateTTFT(1, r))
			return 0, false
		}),
	}
	runCluster(t, cfg, reqs)
	if want := []int64{1080, 1080, 2320, 2120}; !reflect.DeepEqual(got, want) {
		t.Fatalf("estimates %v, want %v", got, want)
	}
}
