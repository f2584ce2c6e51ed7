package core_test

import (
	"testing"

	"kvsim/core"
	"kvsim/internal/coretest"
	"kvsim/policy"
)

func mooncakeOn(tier int, params policy.Params) func(int, int64) (policy.Policy, error) {
	return func(t int, capacity int64) (policy.Policy, error) {
		if t != tier {
			return policy.New("lru", policy.Config{Capacity: capacity})
		}
		return policy.New("mooncake", policy.Config{Capacity: capacity, Params: params})
	}
}

// TestMooncakeAhead: an insert that leaves the store above its 0.95 high
// watermark evicts a batch at once, ahead of need (Mooncake's eviction
// thread): ceil(max(.05, .96 - .95 + .05) x 96) = 6 of 96 blocks, oldest
// first, each through the core's eviction path (dropped: no tier below).
// Before, nothing was evicted until a put did not fit.
func TestMooncakeAhead(t *testing.T) {
	c, d := coretest.NewCore(t, []core.Tier{{Name: "hbm", Capacity: 100}, {Name: "dram", Capacity: 1000}},
		mooncakeOn(1, policy.Params{"high_watermark": 0.95}))
	for b := range core.Block(96) {
		if !c.Preload(1, b, 10) {
			t.Fatalf("Preload %d failed", b)
		}
		if b == 94 && c.Used(1) != 950 { // at the watermark, not above: nothing yet
			t.Fatalf("used %d at 95 blocks, want 950", c.Used(1))
		}
	}
	if c.Used(1) != 900 || c.Stats.Evictions[1] != 6 || c.Stats.Drops[1] != 6 || d.Drops[1] != 6 {
		t.Errorf("used %d, evictions %d, drops %d (mover %d); want 900 and 6 evicted at once",
			c.Used(1), c.Stats.Evictions[1], c.Stats.Drops[1], d.Drops[1])
	}
	for b := range core.Block(96) {
		if got, want := c.Resident(b, 1), b >= 6; got != want {
			t.Errorf("block %d resident %v, want %v", b, got, want)
		}
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestMooncakeBatchGone: a put that does not fit starts a batch, and every
// member leaves the tier at once (Mooncake erases them): none stays
// resident to be hit. Before, the batch was handed out one block per
// eviction while the rest stayed resident, and hitting.
func TestMooncakeBatchGone(t *testing.T) {
	c, d := coretest.NewCore(t, []core.Tier{{Name: "hbm", Capacity: 20}, {Name: "dram", Capacity: 200}},
		mooncakeOn(1, policy.Params{"high_watermark": 1, "evict_fraction": 0.25}))
	for b := range core.Block(20) {
		if !c.Preload(1, b, 10) {
			t.Fatalf("Preload %d failed", b)
		}
	}
	// R0 computes blocks 20 and 21 into HBM; R1's blocks 22 and 23 push
	// them down into the full DRAM: a batch of ceil(.25 x 20) = 5.
	c.Arrive(0, &core.Request{Seq: 0, InputTokens: 20, Blocks: []core.Block{20, 21}})
	d.Finish(c, 1)
	c.Arrive(2, &core.Request{Seq: 1, InputTokens: 20, Blocks: []core.Block{22, 23}})
	for b := range core.Block(20) {
		if got, want := c.Resident(b, 1), b >= 5; got != want {
			t.Errorf("preloaded block %d resident in DRAM %v, want %v", b, got, want)
		}
	}
	if !c.Resident(20, 1) || c.Stats.Evictions[1] != 5 || c.Stats.Drops[1] != 5 {
		t.Errorf("block 20 in DRAM %v, DRAM evictions %d drops %d; want true, 5, 5",
			c.Resident(20, 1), c.Stats.Evictions[1], c.Stats.Drops[1])
	}
	d.Finish(c, 3)
	// A doomed block asked for again is a miss, not a hit.
	c.Arrive(4, &core.Request{Seq: 2, InputTokens: 10, Blocks: []core.Block{4}})
	d.Finish(c, 5)
	if c.Stats.Hits[1] != 0 {
		t.Errorf("a block of the evicted batch hit in DRAM (%d hits)", c.Stats.Hits[1])
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
}
