package accel

import (
	"testing"

	"kvsim/hw/store"
	"kvsim/hw/store/storetest"
)

// TestDeviceStoreConformance runs the store suite over the GPU tiers'
// stores on the fake device (device memory, pinned host memory) and
// emulated: a real GPU runs the same in TestGPUDeviceStoreConformance.
func TestDeviceStoreConformance(t *testing.T) {
	const slot = 20000
	for _, kind := range []string{"hbm", "pinned", "emulated"} {
		t.Run(kind, func(t *testing.T) {
			devs := map[store.Store]*fakeDev{}
			var opts []storetest.Option
			if kind == "hbm" { // its copies are its fault hook
				opts = append(opts, storetest.FailWrites(func(t *testing.T, s store.Store) {
					f := devs[s]
					f.mu.Lock()
					f.failH2D = true
					f.mu.Unlock()
				}))
			}
			storetest.RunConformance(t, func(t *testing.T) store.Store {
				f := newFakeDev()
				var s store.Store
				if kind == "emulated" {
					s = NewDeviceStore(nil, "hbm", slot, nil)
				} else {
					s = NewDeviceStore(f, kind, slot, nil)
				}
				devs[s] = f
				return s
			}, append(opts, storetest.MaxBytes(slot))...)
		})
	}
}

// TestGPUDeviceStoreConformance: the suite over device and pinned memory
// of a real accelerator (skipped without one, as every *GPU* test).
func TestGPUDeviceStoreConformance(t *testing.T) {
	dev := needGPU(t)
	for _, kind := range []string{"hbm", "pinned"} {
		t.Run(kind, func(t *testing.T) {
			storetest.RunConformance(t, func(t *testing.T) store.Store {
				return NewDeviceStore(dev, kind, 20000, nil)
			}, storetest.MaxBytes(20000))
		})
	}
}
