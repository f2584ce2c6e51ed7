package workload

import (
	"io"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/policy"
	"kvsim/trace"
)

// driver is a Mover that queues the core's prefill and decode commands for
// the test to complete; moves and drops are counted. The embedded Mover
// (nil) stands for methods these tests never trigger.
type driver struct {
	core.Mover
	prefills, decodes []core.ReqID
	drops             map[int]int // per tier
}

func (d *driver) Move(int64, core.ReqID, core.Block, int64, int, int, core.MoveKind) {}
func (d *driver) Drop(_ int64, _ core.Block, t int)                                  { d.drops[t]++ }
func (d *driver) Prefill(_ int64, id core.ReqID, _, _ int)                           { d.prefills = append(d.prefills, id) }
func (d *driver) Decode(_ int64, id core.ReqID, _ int)                               { d.decodes = append(d.decodes, id) }
func (d *driver) Wake(int64, core.ReqID)                                             {}

// finish completes every request the core started, in order, at now (each
// completion may admit queued requests, which are finished too).
func (d *driver) finish(c *core.Core, now int64) {
	for len(d.prefills) > 0 || len(d.decodes) > 0 {
		if len(d.prefills) > 0 {
			id := d.prefills[0]
			d.prefills = d.prefills[1:]
			c.PrefillDone(now, id, core.Timing{})
			continue
		}
		id := d.decodes[0]
		d.decodes = d.decodes[1:]
		c.DecodeDone(now, id)
	}
}

func newCore(t *testing.T, tiers []core.Tier, pol func(tier int, capacity int64) (policy.Policy, error)) (*core.Core, *driver) {
	t.Helper()
	d := &driver{drops: map[int]int{}}
	c, err := core.New(core.Config{Tiers: tiers, BytesPerToken: 1, BlockTokens: 10, NewPolicy: pol}, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, d
}

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
		c, d := newCore(t, []core.Tier{{Name: "hbm", Capacity: 30}}, func(_ int, capacity int64) (policy.Policy, error) {
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
		d.finish(c, 10e6)
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
