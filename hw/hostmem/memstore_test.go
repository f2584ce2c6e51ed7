package hostmem

import (
	"errors"
	"testing"

	"kvsim/hw/payload"
	"kvsim/hw/store"
)

// TestMemStore: blocks of any size up to a slot, across chunks, reused
// slots after deletes, and chunks only added when every slot is taken.
func TestMemStore(t *testing.T) {
	chunks := 0
	m := NewMemStore("test", 64, 4, func(n int) (Chunk, error) {
		chunks++
		return Chunk{Mem: make([]byte, n)}, nil
	})
	buf := make([]byte, 64)
	for b := int32(0); b < 10; b++ { // 3 chunks of 4 slots
		payload.Fill(buf[:16+b], b)
		if err := m.Put(b, buf[:16+b]); err != nil {
			t.Fatal(err)
		}
	}
	if chunks != 3 || m.Len() != 10 {
		t.Fatalf("%d chunks, %d blocks", chunks, m.Len())
	}
	for b := int32(0); b < 10; b += 2 {
		m.Delete(b)
	}
	for b := int32(10); b < 15; b++ { // the five freed slots take these
		payload.Fill(buf[:20], b)
		if err := m.Put(b, buf[:20]); err != nil {
			t.Fatal(err)
		}
	}
	if chunks != 3 || m.Len() != 10 {
		t.Fatalf("after reuse: %d chunks, %d blocks", chunks, m.Len())
	}
	for b := int32(0); b < 15; b++ {
		n, err := m.Get(b, buf)
		switch {
		case b < 10 && b%2 == 0:
			if !errors.Is(err, store.ErrNotStored) || m.Has(b) {
				t.Errorf("block %d: deleted but %v", b, err)
			}
		case err != nil || !payload.Verify(buf[:n], b):
			t.Errorf("block %d: %v, verifies %v", b, err, err == nil && payload.Verify(buf[:n], b))
		}
	}
	if err := m.Put(99, make([]byte, 65)); err == nil {
		t.Error("a block larger than a slot was accepted")
	}
	if err := m.Close(); err != nil || m.Len() != 0 {
		t.Errorf("close: %v, %d left", err, m.Len())
	}
}
