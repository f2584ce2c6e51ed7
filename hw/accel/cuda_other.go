//go:build !(linux && (amd64 || arm64))

package accel

import "runtime"

// openRuntimes: purego loads libraries without cgo on linux/amd64 and
// linux/arm64 only, so elsewhere every device is emulated.
func openRuntimes() (Device, []ProbeTry) {
	return nil, []ProbeTry{{Backend: "cuda", Path: "-", Err: "runtime loading is built for linux/amd64 and linux/arm64, not " + runtime.GOOS + "/" + runtime.GOARCH}}
}
