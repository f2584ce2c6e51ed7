//go:build !linux

package bucket

import (
	"fmt"
	"os"

	"kvsim/hw/ioengine"
)

// Store needs O_DIRECT, statx and flock: Linux only.
type Store struct{}

// Open is Linux only.
func Open(o StoreOptions) (*Store, OpenReport, error) {
	return nil, OpenReport{}, fmt.Errorf("bucket store: %w", ioengine.ErrUnsupported)
}

func (s *Store) Put(key uint64, data []byte) error           { return ioengine.ErrUnsupported }
func (s *Store) PutBatch(keys []uint64, data [][]byte) error { return ioengine.ErrUnsupported }
func (s *Store) Get(key uint64, dst []byte) (int, error)     { return 0, ioengine.ErrUnsupported }
func (s *Store) GetBatch(keys []uint64, dst [][]byte, n []int, errs []error) error {
	return ioengine.ErrUnsupported
}
func (s *Store) Delete(key uint64) bool      { return false }
func (s *Store) Has(key uint64) bool         { return false }
func (s *Store) Size(key uint64) (int, bool) { return 0, false }
func (s *Store) Keys() []uint64              { return nil }
func (s *Store) Flush() error                { return ioengine.ErrUnsupported }
func (s *Store) Stats() StoreStats           { return StoreStats{} }
func (s *Store) Evicted() []uint64           { return nil }
func (s *Store) Close() error                { return nil }

// MkdirAll is os.MkdirAll here.
func MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }
