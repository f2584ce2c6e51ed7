package hw

import (
	"slices"
	"testing"

	"kvsim/core"
	"kvsim/hw/payload"
	"kvsim/hw/store"
)

// dropping holds one block: a put evicts the one it held, as a bucket
// store full to its capacity evicts on its own, and says so in Dropped.
type dropping struct {
	held    int32
	evicted []int32
}

func (d *dropping) Backend() string { return "test" }
func (d *dropping) Put(b int32, _ []byte) error {
	if d.held >= 0 && d.held != b {
		d.evicted = append(d.evicted, d.held)
	}
	d.held = b
	return nil
}
func (d *dropping) Delete(b int32) {
	if d.held == b {
		d.held = -1
	}
}
func (d *dropping) Has(b int32) bool { return d.held == b }
func (d *dropping) Close() error     { return nil }
func (d *dropping) Get(b int32, dst []byte) (int, error) {
	if b != d.held {
		return 0, store.ErrNotStored
	}
	payload.Fill(dst, b)
	return len(dst), nil
}

var _ store.Dropper = (*dropping)(nil)

func (d *dropping) Dropped() (evicted, failed []int32) {
	e := d.evicted
	d.evicted = nil
	return e, nil
}

// TestStoreEvictedWithinEvent: a store that evicts block 1 on its own to
// take block 2, in the same event in which the core then moves block 1
// out of it (it could not know yet), has not lost block 1: the read is a
// miss, counted once as the store's eviction, not as a lost copy (which
// would make replay exit 3). A copy the failed move was to make in a
// lower tier is forgotten too, and the load's next hop out of it is the
// same miss: the request recomputes the block.
func TestStoreEvictedWithinEvent(t *testing.T) {
	for _, to := range []int{0, 1} {
		hbm := emulatedStore("emulated", TierOptions{SlotBytes: 64})
		dram := emulatedStore("emulated", TierOptions{SlotBytes: 64})
		ssd := &dropping{held: 1}
		body, err := NewBody(BodyOptions{Stores: []store.Store{hbm, dram, ssd}, RealBytes: func(n int64) int { return int(n) }, MaxBytes: 64})
		if err != nil {
			t.Fatal(err)
		}
		payload.Fill(body.buf[:64], 2)
		if err := hbm.Put(2, body.buf[:64]); err != nil {
			t.Fatal(err)
		}
		body.Move(0, 0, 2, 64, 0, 2, core.Demote) // the store evicts block 1
		body.Move(0, 1, 1, 64, 2, to, core.Load)  // chosen before the core heard
		if to == 1 {
			body.Move(0, 1, 1, 64, 1, 0, core.Load) // the load's second hop
		}
		if body.Lost[2] != 0 || body.Lost[1] != 0 || body.Lost[0] != 0 || body.StoreEvicted[2] != 1 {
			t.Errorf("to %d: lost %v, store-evicted %v; want no loss and one eviction", to, body.Lost, body.StoreEvicted)
		}
		if ls := body.link(2, to); ls.Failed != 0 {
			t.Errorf("to %d: the miss counted as a failed move", to)
		}
		var got []LostCopy
		for _, l := range body.TakeLost() {
			got = append(got, LostCopy{Block: l.Block, Tier: l.Tier})
		}
		want := []LostCopy{{Block: 1, Tier: 2}}
		if to != 0 {
			want = append(want, LostCopy{Block: 1, Tier: to})
		}
		if !slices.Equal(got, want) {
			t.Errorf("to %d: the core forgets %v, want %v", to, got, want)
		}
		if !hbm.Has(1) {
			t.Error("the recomputed block is not in HBM")
		}
		body.Close()
		hbm.Close()
		dram.Close()
	}
}
