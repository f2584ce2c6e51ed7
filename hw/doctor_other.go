//go:build !linux

package hw

import "fmt"

// Doctor is Linux only.
func Doctor(o DoctorOptions) ([]Check, error) { return nil, fmt.Errorf("doctor: %w", ErrUnsupported) }

// FindCUDARuntime is Linux only.
func FindCUDARuntime() []string { return nil }
