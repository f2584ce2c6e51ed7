//go:build !linux

package hw

import (
	"kvsim/hw/accel"
	"kvsim/hw/ioengine"
	"kvsim/hw/store"
)

func dramStore(t TierSpec, o TierOptions, _ *accel.PinnedBufferPool) (store.Store, string, error) {
	return nil, "", ioengine.ErrUnsupported
}
func diskStore(t TierSpec, o TierOptions) (store.Store, string, StoreOpen, error) {
	return nil, "", StoreOpen{}, ioengine.ErrUnsupported
}

func deviceStore(t TierSpec, o TierOptions) (store.Store, string, error) {
	return nil, "", ioengine.ErrUnsupported
}

// MemInfo is 0: there is no /proc/meminfo to read.
func MemInfo(string) int64 { return 0 }
