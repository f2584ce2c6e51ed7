//go:build !linux

package hostmem

import (
	"fmt"

	"kvsim/hw/ioengine"
)

// SetHugepages is Linux only.
func SetHugepages(size string, n int64) (prev, got int64, err error) {
	return 0, 0, fmt.Errorf("hugepages: %w", ioengine.ErrUnsupported)
}
