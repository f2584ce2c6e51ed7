//go:build !linux

package bucket

import (
	"fmt"

	"kvsim/hw/ioengine"
)

// BucketStore needs O_DIRECT, statx and flock: Linux only.
type BucketStore struct{}

// OpenBucketStore is Linux only.
func OpenBucketStore(o StoreOptions) (*BucketStore, OpenReport, error) {
	return nil, OpenReport{}, fmt.Errorf("bucket store: %w", ioengine.ErrUnsupported)
}

func (s *BucketStore) Put(key uint64, data []byte) error           { return ioengine.ErrUnsupported }
func (s *BucketStore) PutBatch(keys []uint64, data [][]byte) error { return ioengine.ErrUnsupported }
func (s *BucketStore) Get(key uint64, dst []byte) (int, error)     { return 0, ioengine.ErrUnsupported }
func (s *BucketStore) GetBatch(keys []uint64, dst [][]byte, n []int, errs []error) error {
	return ioengine.ErrUnsupported
}
func (s *BucketStore) Delete(key uint64) bool      { return false }
func (s *BucketStore) Has(key uint64) bool         { return false }
func (s *BucketStore) Size(key uint64) (int, bool) { return 0, false }
func (s *BucketStore) Keys() []uint64              { return nil }
func (s *BucketStore) Flush() error                { return ioengine.ErrUnsupported }
func (s *BucketStore) Stats() StoreStats           { return StoreStats{} }
func (s *BucketStore) Evicted() []uint64           { return nil }
func (s *BucketStore) Close() error                { return nil }
