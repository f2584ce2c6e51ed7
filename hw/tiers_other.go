//go:build !linux

package hw

import (
	"kvsim/hw/ioengine"

	"kvsim/hw/hostmem"
)

func dramStore(t TierSpec, o TierOptions, _ *PinnedBufferPool) (hostmem.Store, string, error) {
	return nil, "", ioengine.ErrUnsupported
}
func diskStore(t TierSpec, o TierOptions) (hostmem.Store, string, StoreOpen, error) {
	return nil, "", StoreOpen{}, ioengine.ErrUnsupported
}
