package workload

import (
	"io"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/internal/coretest"
	"kvsim/policy"
	"kvsim/trace"
)

// queuedTrace has requests queue behind R0, which fills HBM. R1 (blocks
// 1 2 3) is admitted when R0 ends, at t = 10 ms, after R3 and R4, which
// want 1 and 2 again, arrived; R2 (block 4) then needs room. Keyed by
// arrival time and asked at admission time, R3's and R4's references are in
// the past: 1, 2 and 3 all look unused, Belady evicts the oldest (1, then 2
// for R3) and no queued request hits. Keyed by request order it evicts 3
// (never used again) and R3 and R4 both hit.
const queuedTrace = `{"timestamp": 0, "input_length": 30, "output_length": 0, "hash_ids": [5, 6, 7]}
{"timestamp": 1, "input_length": 30, "output_length": 0, "hash_ids": [1, 2, 3]}
{"timestamp": 2, "input_length": 10, "output_length": 0, "hash_ids": [4]}
{"timestamp": 3, "input_length": 10, "output_length": 0, "hash_ids": [1]}
{"timestamp": 4, "input_length": 10, "output_length": 0, "hash_ids": [2]}
`

// TestBeladyQueued: with requests queued, Belady (its future in request
// order) gets the most hits possible here, 2, and no online policy more.
func TestBeladyQueued(t *testing.T) {
	open := func() *Source {
		return NewSource(trace.NewReader(strings.NewReader(queuedTrace), "q.jsonl", trace.Options{BlockTokens: 10}), trace.NewDict())
	}
	fut, err := BuildFuture(open())
	if err != nil {
		t.Fatal(err)
	}
	hits := map[string]int64{}
	for _, name := range policy.Names() {
		c, d := coretest.NewCore(t, []core.Tier{{Name: "hbm", Capacity: 30}}, func(_ int, capacity int64) (policy.Policy, error) {
			return policy.New(name, policy.Config{Capacity: capacity, Future: fut})
		})
		src := open()
		var r core.Request
		for {
			if err := src.Next(&r); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			c.Arrive(r.Arrival, &r)
		}
		if c.Queued() != 4 {
			t.Fatalf("%s: %d queued, want 4", name, c.Queued())
		}
		d.Finish(c, 10e6)
		if c.Stats.Requests != 5 {
			t.Fatalf("%s: %d requests finished", name, c.Stats.Requests)
		}
		if err := c.Check(); err != nil {
			t.Fatal(err)
		}
		hits[name] = c.Stats.Hits[0]
	}
	if hits["belady"] != 2 {
		t.Errorf("belady: %d hits, want 2 (all: %v)", hits["belady"], hits)
	}
	for name, h := range hits {
		if h > hits["belady"] {
			t.Errorf("%s: %d hits beats belady's %d", name, h, hits["belady"])
		}
	}
}
