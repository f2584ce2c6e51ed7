//go:build linux

package doctor

import (
	"testing"

	"kvsim/hw/internal/hwtest"
	"kvsim/hw/ioengine"
)

// The shared test helpers, under the names this package's tests use.
var (
	probeLacks = hwtest.Lacks
	probeLeaks = hwtest.Leaks
)

func probeDiskDir(t testing.TB) string {
	return hwtest.DiskDir(t, func(dir string) bool { _, _, err := ioengine.ProbeDirectIO(dir); return err == nil })
}
