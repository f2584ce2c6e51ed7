package mrc

import (
	"context"
	"testing"
)

// TestMooncakeBatches: block-mode replay treats Mooncake as the core does:
// above the 0.90 watermark one batch leaves at once (ceil(.06 x 91) = 6
// when the 91st block of 100 comes in), so a scan of 200 blocks never holds
// more than 90, and every block of a batch is a miss when asked again.
func TestMooncakeBatches(t *testing.T) {
	reqs := make([][]int64, 200)
	for i := range reqs {
		reqs[i] = []int64{int64(i)}
	}
	tr := FromRequests(reqs)
	p, err := newPolicy(mustSpec(t, "mooncake"), 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newSim(p, 100, tr.Distinct)
	for q := range tr.Requests() {
		if err := s.run(context.Background(), tr, q, q+1, 0); err != nil {
			t.Fatal(err)
		}
		if s.used > 90 {
			t.Fatalf("after block %d: %d resident, want at most 90", q, s.used)
		}
		if q == 90 {
			if s.used != 85 {
				t.Errorf("%d resident after the 91st block, want 85", s.used)
			}
			for b := range 6 { // the first batch: gone, not just doomed
				if s.resident[b] {
					t.Errorf("block %d of the first batch is resident", b)
				}
			}
		}
	}
}
