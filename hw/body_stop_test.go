package hw

import (
	"errors"
	"sync/atomic"
	"testing"

	"kvsim/core"
	"kvsim/hw/store"
	"kvsim/internal/coretest"
	"kvsim/policy"
)

// counting is vanishing that counts the calls reaching it.
type counting struct {
	vanishing
	calls int
}

func (c *counting) Get(b int32, dst []byte) (int, error) { c.calls++; return c.vanishing.Get(b, dst) }
func (c *counting) Put(int32, []byte) error              { c.calls++; return nil }
func (c *counting) Delete(int32)                         { c.calls++ }

// endless is a source that never ends: only a stop ends a run over it.
type endless struct{ n int64 }

func (e *endless) Next(r *core.Request) error {
	*r = core.Request{Seq: e.n, Arrival: e.n, InputTokens: 10, OutputTokens: 1, Blocks: []core.Block{core.Block(e.n % 7)}}
	e.n++
	return nil
}

// TestBodyStopped: once Stopped says so, the body touches no store (a
// move, a drop, the --verify sweep), and RunSequential returns ErrStopped
// instead of running on.
func TestBodyStopped(t *testing.T) {
	var stop atomic.Bool
	tiers := []core.Tier{{Name: "hbm", Capacity: 1 << 20}, {Name: "far", Capacity: 1 << 20}}
	newPolicy := func(_ int, capacity int64) (policy.Policy, error) {
		return policy.New("lru", policy.Config{Capacity: capacity})
	}
	c, _ := coretest.NewCore(t, tiers, newPolicy)
	for b := range core.Block(3) {
		c.Preload(1, b, 64)
	}
	hbm := emulatedStore("emulated", TierOptions{SlotBytes: 64})
	defer hbm.Close()
	far := &counting{}
	body, err := NewBody(BodyOptions{Stores: []store.Store{hbm, far}, RealBytes: func(n int64) int { return int(n) },
		MaxBytes: 64, Verify: true, Stopped: stop.Load})
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	body.SetCore(c)
	stop.Store(true)
	body.Move(0, -1, 1, 10, 1, 0, core.Load)
	body.Drop(0, 1, 1)
	body.VerifyStores(3)
	if far.calls != 0 || body.Checked != 0 {
		t.Errorf("stopped: %d calls reached the store, %d blocks checked", far.calls, body.Checked)
	}

	n := 0
	stopAfter := func() bool { n++; return n > 50 }
	body2, err := NewBody(BodyOptions{Stores: []store.Store{hbm, &counting{}}, RealBytes: func(n int64) int { return int(n) },
		MaxBytes: 64, Stopped: stopAfter})
	if err != nil {
		t.Fatal(err)
	}
	defer body2.Close()
	cfg := core.Config{Tiers: tiers, BytesPerToken: 1, BlockTokens: 10, NewPolicy: newPolicy}
	if _, err := body2.RunSequential(cfg, &endless{}, nil); !errors.Is(err, ErrStopped) {
		t.Errorf("RunSequential over an endless source: %v, want ErrStopped", err)
	}
}
