//go:build !linux

package doctor

import (
	"fmt"

	"kvsim/hw/ioengine"
)

// Run is Linux only.
func Run(o Options) ([]Check, error) {
	return nil, fmt.Errorf("doctor: %w", ioengine.ErrUnsupported)
}
