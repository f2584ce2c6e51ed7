//go:build linux

package blockdev

import (
	"sync/atomic"
	"syscall"
	"testing"

	"kvsim/hw/ioengine"
	"kvsim/hw/store"
	"kvsim/hw/store/storetest"
)

// failingEngine fails every write once fail is set (EIO), as a dying
// device would.
type failingEngine struct {
	ioengine.Engine
	fail atomic.Bool
}

func (f *failingEngine) Do(ops []ioengine.Op) error {
	if f.fail.Load() {
		for _, op := range ops {
			if op.Write {
				return syscall.EIO
			}
		}
	}
	return f.Engine.Do(ops)
}

// Close leaves the inner engine to the store, which closes it.
func (f *failingEngine) Close() error { return nil }

// TestConformance runs the store suite over a file-backed device; its
// slot index lives in memory, so it is not durable (no Reopen).
func TestConformance(t *testing.T) {
	const slot = 20000 // a slot of 20480: O_DIRECT pads every block
	engines := map[store.Store]*failingEngine{}
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		fe := &failingEngine{}
		s, err := Open(Options{Path: device(t, headerBytes+200*20480), SlotBytes: slot, Capacity: 64 * slot, Engine: "auto",
			WrapEngine: func(e ioengine.Engine) ioengine.Engine { fe.Engine = e; return fe }})
		if err != nil {
			t.Fatal(err)
		}
		engines[s] = fe
		return s
	}, storetest.MaxBytes(slot), storetest.FailWrites(func(t *testing.T, s store.Store) { engines[s].fail.Store(true) }))
}
