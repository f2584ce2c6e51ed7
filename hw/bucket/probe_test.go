//go:build linux

package bucket

import (
	"kvsim/hw/internal/hwtest"
)

// The shared test helpers, under the names this package's tests use.
var (
	must    = hwtest.Must
	bufAddr = hwtest.Addr
)
