//go:build linux

package doctor

import (
	"testing"

	"kvsim/hw/internal/hwtest"
	"kvsim/hw/ioengine"
)

var (
	probeNeed           = hwtest.Need
	probeLacks          = hwtest.Lacks
	probeRoot           = hwtest.Root
	probeLeaks          = hwtest.Leaks
	probeUnmapped       = hwtest.Unmapped
	probeUnmappedExcept = hwtest.UnmappedExcept
	must                = hwtest.Must
	bufAddr             = hwtest.Addr
)

func probeDiskDir(t testing.TB) string {
	return hwtest.DiskDir(t, func(dir string) bool { _, _, err := ioengine.ProbeDirectIO(dir); return err == nil })
}

// probeUring skips (or fails under KVSIM_REQUIRE_ALL) when io_uring is off.
func probeUring(t testing.TB) {
	t.Helper()
	_, err := ioengine.ProbeUring(1)
	probeNeed(t, err == nil, "io_uring unavailable: %v", err)
}
