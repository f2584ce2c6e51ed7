package hostmem

import (
	"errors"
	"testing"

	"kvsim/hw/store"
	"kvsim/hw/store/storetest"
)

// TestMemStoreConformance runs the store suite over a MemStore on heap
// chunks of one slot each, so a new block needs a new chunk: failing the
// chunk allocation (its only fault) fails a write.
func TestMemStoreConformance(t *testing.T) {
	const slot = 20000 // not a multiple of 4096
	failing := map[store.Store]*bool{}
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		fail := new(bool)
		m := NewMemStore("test", slot, 1, func(n int) (Chunk, error) {
			if *fail {
				return Chunk{}, errors.New("no memory")
			}
			return Chunk{Mem: make([]byte, n)}, nil
		})
		failing[m] = fail
		return m
	}, storetest.MaxBytes(slot), storetest.FailWrites(func(t *testing.T, s store.Store) { *failing[s] = true }))
}

// TestMemStoreAllocs: a write and a read of a held block allocate nothing.
func TestMemStoreAllocs(t *testing.T) {
	m := NewMemStore("test", 4096, 4, func(n int) (Chunk, error) { return Chunk{Mem: make([]byte, n)}, nil })
	defer m.Close()
	buf := make([]byte, 4096)
	if err := m.Put(1, buf); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := m.Put(1, buf); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Get(1, buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Put+Get allocate %.1f times", n)
	}
}
