//go:build !linux

package hw

import (
	"fmt"

	"kvsim/hw/ioengine"
)

// Doctor is Linux only.
func Doctor(o DoctorOptions) ([]Check, error) {
	return nil, fmt.Errorf("doctor: %w", ioengine.ErrUnsupported)
}
