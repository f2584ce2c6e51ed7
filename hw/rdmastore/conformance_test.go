//go:build linux && (amd64 || arm64)

package rdmastore

import (
	"testing"

	"kvsim/hw/store"
	"kvsim/hw/store/storetest"
)

// TestConformance runs the store suite over the fake libibverbs (a
// server and a client in this process): a write fails, and a block is
// lost, when the server stops (it takes every block with it).
func TestConformance(t *testing.T) {
	servers := map[store.Store]*Server{}
	stop := func(t *testing.T, s store.Store) { servers[s].Close() }
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		srv := serve(t, 200*slot, nil)
		s := open(t, srv, 64*slot, 2)
		servers[s] = srv
		return s
	}, storetest.MaxBytes(slot), storetest.FailWrites(stop),
		storetest.Lose(func(t *testing.T, s store.Store, _ int32) { stop(t, s) }))
}
