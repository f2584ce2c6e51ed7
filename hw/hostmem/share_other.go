//go:build !linux

package hostmem

import (
	"context"
	"fmt"

	"kvsim/hw/ioengine"
)

// ServePool is Linux only.
func ServePool(ctx context.Context, socketPath string, p *Pool) error {
	return fmt.Errorf("serve pool: %w", ioengine.ErrUnsupported)
}

// ReceivePool is Linux only.
func ReceivePool(socketPath string) (*Pool, error) {
	return nil, fmt.Errorf("receive pool: %w", ioengine.ErrUnsupported)
}
