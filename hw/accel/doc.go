// Package accel is the accelerator side of the tiers: CUDA and HIP runtimes
// loaded without cgo (purego), an emulated device where none is present,
// the pinned host-buffer pool, device-memory stores, and copy-bandwidth
// measurement.
package accel
