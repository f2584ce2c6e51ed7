package experiment

import (
	"context"
	"strings"
	"testing"

	"kvsim/trace"
)

// TestPeerFetchConfig: peer_fetch reads the scenario's first node-scoped
// host-memory tier, is refused without one, changes the run ID only when
// on (and then with the NICs it sends through), and a run's sources add up
// to its block accesses with some blocks from peers.
func TestPeerFetchConfig(t *testing.T) {
	const path = "../scenarios/cluster_routers.toml"
	cfgOf := func(sets ...string) (int, error) {
		sc := load(t, path, sets...)
		cc, err := ClusterConfig(sc, SimConfig(sc, sc.Policies[0], nil))
		return cc.PeerTier, err
	}
	if pt, err := cfgOf(); pt != 0 || err != nil {
		t.Fatalf("off: peer tier %d, %v", pt, err)
	}
	if pt, err := cfgOf("cluster.peer_fetch=true"); pt != 1 || err != nil {
		t.Fatalf("on: peer tier %d (want the pinned host tier, 1), %v", pt, err)
	}
	if _, err := cfgOf("cluster.peer_fetch=true", "tier.host.kind=ssd"); err == nil || !strings.Contains(err.Error(), "peer_fetch") {
		t.Fatalf("no host-memory tier: %v", err)
	}
	id := func(sets ...string) string {
		s, err := runID(load(t, path, sets...), trace.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	off, offNIC := id(), id("cluster.nic_lanes=2")
	on, onNIC := id("cluster.peer_fetch=true"), id("cluster.peer_fetch=true", "cluster.nic_lanes=2")
	if off != offNIC || off == on || on == onNIC || id("cluster.peer_fetch=false") != off {
		t.Fatalf("run IDs: off %s, off with other NICs %s, on %s, on with other NICs %s", off, offNIC, on, onNIC)
	}
	sum, err := Run(context.Background(), load(t, path, "cluster.peer_fetch=true"), Options{Limit: 400})
	if err != nil {
		t.Fatal(err)
	}
	p := sum.Policies[0]
	var peer, all int64
	for _, in := range p.Instances {
		peer += in.Sources.Peer
		all += in.Sources.Total()
	}
	if peer == 0 || all != p.BlockAccesses {
		t.Fatalf("%d peer blocks; sources add to %d of %d accesses", peer, all, p.BlockAccesses)
	}
}
