package core

import (
	"strings"
	"testing"

	"kvsim/policy"
)

// TestPreload: blocks placed in a lower tier before the first request are
// resident there, count against its capacity, and serve the first request
// as hits (loads, not prefills); nothing is placed once a request came,
// in HBM, twice, over capacity, or at a size other than the block's.
func TestPreload(t *testing.T) {
	cfg := Config{
		Tiers:         []Tier{{Name: "hbm", Capacity: 100}, {Name: "ssd", Capacity: 30}},
		BytesPerToken: 1, BlockTokens: 10,
		NewPolicy: func(int, int64) (policy.Policy, error) { return policy.NewLRU(), nil },
	}
	rec := &recorder{names: []string{"a", "b", "c", "d"}, out: &strings.Builder{}}
	c, err := New(cfg, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.c = c
	for _, tc := range []struct {
		tier  int
		b     Block
		bytes int64
		want  bool
	}{
		{1, 0, 10, true},
		{1, 1, 10, true},
		{1, 1, 10, false}, // already there
		{0, 2, 10, false}, // HBM is never warm
		{1, 2, 0, false},
		{1, 2, 25, false}, // 20 + 25 > 30
		{1, 2, 5, true},   // the last of a request: fewer tokens
		{1, 3, 10, false}, // full: 25 + 10 > 30
	} {
		if got := c.Preload(tc.tier, tc.b, tc.bytes); got != tc.want {
			t.Errorf("Preload(%d, %d, %d) = %v, want %v", tc.tier, tc.b, tc.bytes, got, tc.want)
		}
	}
	if c.Used(1) != 25 || !c.Resident(0, 1) || !c.Resident(2, 1) || c.Resident(3, 1) || c.BlockBytes(2) != 5 {
		t.Errorf("used %d, resident %v %v %v", c.Used(1), c.Resident(0, 1), c.Resident(2, 1), c.Resident(3, 1))
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	c.Arrive(0, &Request{InputTokens: 25, OutputTokens: 1, Blocks: []Block{0, 1, 2}})
	if !strings.Contains(rec.out.String(), "move a ssd->hbm load") || !strings.Contains(rec.out.String(), "move c ssd->hbm load 5B") {
		t.Errorf("the first request should load its warm blocks:\n%s", rec.out)
	}
	if c.Preload(1, 3, 1) {
		t.Error("Preload after a request arrived")
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
}
