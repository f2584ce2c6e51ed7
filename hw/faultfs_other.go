//go:build !linux

package hw

import "kvsim/hw/ioengine"

func faultSync(fd int) error { return ioengine.ErrUnsupported }
