//go:build !linux

package hw

func faultSync(fd int) error { return ErrUnsupported }
