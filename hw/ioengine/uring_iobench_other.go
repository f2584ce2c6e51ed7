//go:build !linux

package ioengine

import "fmt"

// IOBench is Linux only.
func IOBench(o IOBenchOptions) (IOBenchResult, error) {
	if err := o.defaults(); err != nil {
		return IOBenchResult{}, err
	}
	return IOBenchResult{}, fmt.Errorf("iobench: %w", ErrUnsupported)
}
