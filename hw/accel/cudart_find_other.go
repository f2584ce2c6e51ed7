//go:build !linux

package accel

// FindCUDARuntime is Linux only.
func FindCUDARuntime() []string { return nil }

// FindCUDARuntimeIn is Linux only.
func FindCUDARuntimeIn(root string) []string { return nil }
