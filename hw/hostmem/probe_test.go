//go:build linux

package hostmem

import (
	"testing"

	"kvsim/hw/internal/hwtest"
	"kvsim/hw/ioengine"
)

// The shared test helpers, under the names this package's tests use.
var (
	probeNeed  = hwtest.Need
	probeLacks = hwtest.Lacks
	probeRoot  = hwtest.Root
	probeLeaks = hwtest.Leaks
	must       = hwtest.Must
	bufAddr    = hwtest.Addr
)

func probeDiskDir(t testing.TB) string {
	return hwtest.DiskDir(t, func(dir string) bool { _, _, err := ioengine.ProbeDirectIO(dir); return err == nil })
}
