//go:build !linux

package ioengine

import "fmt"

func newUring(queueDepth int, arenas []*Arena) (Engine, string, error) {
	return nil, "", fmt.Errorf("io_uring: %w", ErrUnsupported)
}
