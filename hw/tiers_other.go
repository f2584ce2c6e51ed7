//go:build !linux

package hw

func dramStore(t TierSpec, o TierOptions, _ *PinnedBufferPool) (Store, string, error) {
	return nil, "", ErrUnsupported
}
func diskStore(t TierSpec, o TierOptions) (Store, string, StoreOpen, error) {
	return nil, "", StoreOpen{}, ErrUnsupported
}
