package remote_test

import (
	"strconv"
	"strings"
	"testing"

	"kvsim/hw/remote"
	"kvsim/hw/remote/remotetest"
	"kvsim/hw/store"
	"kvsim/hw/store/storetest"
)

// TestConformance runs the store suite over a redis-server of the test's
// own (skipped without one; failed under KVSIM_REQUIRE_ALL=1). Its faults
// are the server's: a maxmemory that refuses writes (noeviction), keys
// deleted behind the store's back, and a maxmemory that evicts.
func TestConformance(t *testing.T) {
	const slot = 65536 + 100
	servers := map[store.Store]*remotetest.Server{}
	setMax := func(t *testing.T, srv *remotetest.Server, policy string, room int64) {
		used := int64(0)
		for l := range strings.SplitSeq(srv.Do(t, "INFO", "memory").(string), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
				used, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		srv.Do(t, "CONFIG", "SET", "maxmemory-policy", policy)
		srv.Do(t, "CONFIG", "SET", "maxmemory", strconv.FormatInt(max(used+room, 1), 10))
	}
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		srv := remotetest.Start(t)
		s := open(t, srv)
		servers[s] = srv
		return s
	}, storetest.MaxBytes(slot),
		storetest.FailWrites(func(t *testing.T, s store.Store) { setMax(t, servers[s], "noeviction", -(1 << 20)) }),
		storetest.Lose(func(t *testing.T, s store.Store, b int32) {
			r := s.(*remote.Store)
			servers[s].Do(t, "DEL", r.Key(b, "kv_bytes"), r.Key(b, "metadata"))
		}),
		storetest.Evicts(64, func(t *testing.T, s store.Store) { setMax(t, servers[s], "allkeys-random", 1<<20) }))
}
