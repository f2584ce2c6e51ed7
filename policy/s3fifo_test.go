package policy

import (
	"strings"
	"testing"
)

// TestS3FIFOGhostSize: the ghost holds as many blocks as main unless
// ghost_fraction sizes it from the capacity, int(fraction x c) as
// libCacheSim does (1644 for 1827 blocks, where main holds 1645).
func TestS3FIFOGhostSize(t *testing.T) {
	for _, c := range []struct {
		params      Params
		ghost, mCap int64
	}{
		{nil, 1645, 1645},
		{Params{"ghost_fraction": 0.9}, 1644, 1645},
		{Params{"ghost_fraction": 0}, 0, 1645},
		{Params{"ghost_fraction": 0.5, "small_fraction": 0.5}, 913, 914},
	} {
		p, err := New("s3fifo", Config{Capacity: 1827, Params: c.params})
		if err != nil {
			t.Fatal(err)
		}
		s := p.(*S3FIFO)
		if s.ghost.cap != c.ghost || s.mCap != c.mCap {
			t.Errorf("%v: ghost %d, main %d; want %d, %d", c.params, s.ghost.cap, s.mCap, c.ghost, c.mCap)
		}
	}
	for _, bad := range []float64{-0.1, 1.5} {
		if _, err := New("s3fifo", Config{Capacity: 10, Params: Params{"ghost_fraction": bad}}); err == nil || !strings.Contains(err.Error(), "ghost_fraction") {
			t.Errorf("ghost_fraction %g: %v", bad, err)
		}
	}
}
