//go:build linux

package ioengine

import (
	"testing"

	"kvsim/hw/internal/hwtest"
)

// The shared test helpers, under the names this package's tests use.
var (
	probeNeed  = hwtest.Need
	probeLacks = hwtest.Lacks
	probeRoot  = hwtest.Root
	probeLeaks = hwtest.Leaks
	must       = hwtest.Must
)

func probeDiskDir(t testing.TB) string {
	return hwtest.DiskDir(t, func(dir string) bool { _, _, err := ProbeDirectIO(dir); return err == nil })
}

// probeUring skips (or fails under KVSIM_REQUIRE_ALL) when io_uring is off.
func probeUring(t testing.TB) {
	t.Helper()
	u, _, err := newUring(1, nil)
	probeNeed(t, err == nil, "io_uring unavailable: %v", err)
	u.Close()
}
