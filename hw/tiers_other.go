//go:build !linux

package hw

import (
	"kvsim/hw/ioengine"

	"kvsim/hw/hostmem"

	"kvsim/hw/accel"
)

func dramStore(t TierSpec, o TierOptions, _ *accel.PinnedBufferPool) (hostmem.Store, string, error) {
	return nil, "", ioengine.ErrUnsupported
}
func diskStore(t TierSpec, o TierOptions) (hostmem.Store, string, StoreOpen, error) {
	return nil, "", StoreOpen{}, ioengine.ErrUnsupported
}
