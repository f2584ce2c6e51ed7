package hw

import (
	"kvsim/hw/accel"
	"kvsim/hw/store"
)

// hbm and pinned live on the accelerator when there is one, else in host
// memory (OpenStores notes why).
func init() {
	for _, kind := range []string{"hbm", "pinned"} {
		registerTierKind(kind, tierKind{gpu: true, hostMemory: gpuHostMemory, open: func(ss *Stores, t TierSpec, o TierOptions) (store.Store, string, error) {
			if ss.dev != nil {
				return accel.NewDeviceStore(ss.dev, t.Kind, o.SlotBytes, ss.pool), "", nil
			}
			return emulatedStore("emulated", o), "", nil
		}})
	}
}

// HBM is host memory only when emulated; pinned buffers always are.
func gpuHostMemory(t TierSpec, gpu bool) bool { return t.Kind == "pinned" || !gpu }
