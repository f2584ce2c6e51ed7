//go:build !linux

package bucket

import "kvsim/hw/ioengine"

func faultSync(fd int) error { return ioengine.ErrUnsupported }
