package hw

import (
	"fmt"
	"testing"

	"kvsim/core"
	"kvsim/hw/payload"
	"kvsim/hw/store"
	"kvsim/internal/coretest"
	"kvsim/policy"
)

// vanishing holds every block; block 1 has vanished from it (a remote
// server evicted it), block 2 reads back wrong.
type vanishing struct{}

func (vanishing) Backend() string         { return "test" }
func (vanishing) Put(int32, []byte) error { return nil }
func (vanishing) Delete(int32)            {}
func (vanishing) Has(int32) bool          { return true }
func (vanishing) Close() error            { return nil }
func (vanishing) Get(b int32, dst []byte) (int, error) {
	switch b {
	case 1:
		return 0, fmt.Errorf("evicted: %w", store.ErrNotStored)
	case 2:
		payload.Fill(dst, 3)
	default:
		payload.Fill(dst, b)
	}
	return len(dst), nil
}

// TestVerifyStoresGoneIsLostNotCorrupt: the end-of-replay sweep counts a
// block its store no longer holds as lost, and only wrong bytes as corrupt.
func TestVerifyStoresGoneIsLostNotCorrupt(t *testing.T) {
	c, _ := coretest.NewCore(t, []core.Tier{{Name: "hbm", Capacity: 100}, {Name: "far", Capacity: 1000}},
		func(_ int, capacity int64) (policy.Policy, error) {
			return policy.New("lru", policy.Config{Capacity: capacity})
		})
	for b := range core.Block(3) {
		if !c.Preload(1, b, 64) {
			t.Fatal("preload")
		}
	}
	hbm := emulatedStore("emulated", TierOptions{SlotBytes: 64})
	defer hbm.Close()
	body, err := NewBody(BodyOptions{Stores: []store.Store{hbm, vanishing{}}, RealBytes: func(n int64) int { return int(n) }, MaxBytes: 64, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	body.SetCore(c)
	body.VerifyStores(3)
	if body.Checked != 3 || body.Corrupt != 1 || body.Lost[1] != 2 {
		t.Errorf("checked %d, corrupt %d, lost %d; want 3, 1, 2", body.Checked, body.Corrupt, body.Lost[1])
	}
}
