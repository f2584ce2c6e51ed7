//go:build !linux

package hostmem

import (
	"fmt"

	"kvsim/hw/ioengine"
)

// Pool is a memfd DRAM pool; Linux only.
type Pool struct{}

// NewPool is Linux only.
func NewPool(o PoolOptions) (*Pool, error) {
	if _, _, err := o.validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("memfd pool: %w", ioengine.ErrUnsupported)
}

// HugepageCounts is Linux only.
func HugepageCounts(size string) (reserved, free int64, err error) {
	return 0, 0, fmt.Errorf("hugepages: %w", ioengine.ErrUnsupported)
}

func (p *Pool) Bytes() []byte          { return nil }
func (p *Pool) Fd() int                { return -1 }
func (p *Pool) Size() int64            { return 0 }
func (p *Pool) PageSize() int64        { return 0 }
func (p *Pool) Backend() string        { return "" }
func (p *Pool) Fallback() string       { return "" }
func (p *Pool) Arena() *ioengine.Arena { return &ioengine.Arena{} }
func (p *Pool) Close() error           { return nil }
