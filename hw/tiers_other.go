//go:build !linux

package hw

import "kvsim/hw/ioengine"

func dramStore(t TierSpec, o TierOptions, _ *PinnedBufferPool) (Store, string, error) {
	return nil, "", ioengine.ErrUnsupported
}
func diskStore(t TierSpec, o TierOptions) (Store, string, StoreOpen, error) {
	return nil, "", StoreOpen{}, ioengine.ErrUnsupported
}
