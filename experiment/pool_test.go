package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
)

// TestPooledClusterRun: the shipped pooled scenario reports each node's NIC
// traffic, the pool's use and every instance's blocks by source; the
// sources add up to the block accesses and agree with the hits by tier,
// the pool's remote hits are the instances', every byte sent is received,
// and no NIC is busy longer than the run.
func TestPooledClusterRun(t *testing.T) {
	sc := load(t, "../scenarios/cluster_pool.toml")
	out := t.TempDir()
	sum, err := Run(context.Background(), sc, Options{Out: out, Limit: 600, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Tiers[2].Scope != "cluster" || sum.Tiers[1].Scope != "" {
		t.Errorf("tiers %+v: only the pool is cluster-scoped", sum.Tiers)
	}
	for _, p := range sum.Policies {
		pl := p.Pool
		if pl == nil || pl.Tier != "pool" || pl.ShareBytes != 16<<30 || pl.CapacityBytes != 4*pl.ShareBytes || len(pl.NodeUsedBytes) != 4 ||
			pl.PeakUsedBytes > pl.CapacityBytes || pl.UsedBytes > pl.PeakUsedBytes || pl.PeakUsedBytes != p.PeakUsedBytes["pool"] {
			t.Fatalf("%s: pool %+v, peak used %d", p.Name, pl, p.PeakUsedBytes["pool"])
		}
		var nodeUsed int64
		for _, u := range pl.NodeUsedBytes {
			nodeUsed += u
			if u > pl.ShareBytes {
				t.Errorf("%s: a node holds %d bytes of its %d-byte share", p.Name, u, pl.ShareBytes)
			}
		}
		if nodeUsed != pl.UsedBytes {
			t.Errorf("%s: nodes hold %d bytes, the pool %d", p.Name, nodeUsed, pl.UsedBytes)
		}
		var accesses, remote int64
		for i, in := range p.Instances {
			s := in.Sources
			if s == nil || in.Role != "" {
				t.Fatalf("%s: instance %d: sources %v, role %q", p.Name, i, s, in.Role)
			}
			if s.LocalHBM != in.Hits["hbm"] || s.LocalTier != in.Hits["host"] || s.PoolLocal+s.PoolRemote != in.Hits["pool"] || s.PoolLocal < 0 || s.Recomputed < 0 {
				t.Errorf("%s: instance %d: sources %+v, hits %v", p.Name, i, *s, in.Hits)
			}
			accesses += s.Total()
			remote += s.PoolRemote
		}
		if accesses != p.BlockAccesses || remote != pl.RemoteHits || remote == 0 || remote > p.Hits["pool"] {
			t.Errorf("%s: sources add to %d of %d accesses; %d remote pool hits, pool says %d, of %d", p.Name, accesses, p.BlockAccesses, remote, pl.RemoteHits, p.Hits["pool"])
		}
		if len(p.NICs) != 4 {
			t.Fatalf("%s: NICs %+v", p.Name, p.NICs)
		}
		var sent, recvd int64
		for i, n := range p.NICs {
			if n.Node != i || n.SendBusyShare < 0 || n.SendBusyShare > 1 || n.RecvBusyShare < 0 || n.RecvBusyShare > 1 ||
				(n.SendBytes > 0) != (n.SendBusyShare > 0) || (n.RecvBytes > 0) != (n.RecvBusyShare > 0) {
				t.Errorf("%s: NIC %+v", p.Name, n)
			}
			sent += n.SendBytes
			recvd += n.RecvBytes
		}
		if sent != recvd || sent == 0 {
			t.Errorf("%s: %d bytes sent, %d received", p.Name, sent, recvd)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, sc.Name, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"scope": "cluster"`, `"nics": [`, `"send_busy_share": `, `"pool": {`, `"remote_hits": `, `"sources": {`, `"pool_remote": `} {
		if !strings.Contains(string(b), want) {
			t.Errorf("summary.json lacks %s", want)
		}
	}
	if strings.Contains(string(b), `"role"`) {
		t.Error("summary.json names roles without disaggregation")
	}
}

// TestPrivateTierSources: the same scenario with the pool made private
// DRAM has no pool and no NIC traffic to report, and its DRAM hits are the
// instances' own tiers'.
func TestPrivateTierSources(t *testing.T) {
	sc := load(t, "../scenarios/cluster_pool.toml", "tier.pool.scope=node")
	sum, err := Run(context.Background(), sc, Options{Limit: 300})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sum.Policies {
		if p.Pool != nil || p.NICs != nil {
			t.Errorf("%s: pool %+v, NICs %+v", p.Name, p.Pool, p.NICs)
		}
		for i, in := range p.Instances {
			s := in.Sources
			if s == nil || s.PoolLocal != 0 || s.PoolRemote != 0 || s.LocalTier != in.Hits["host"]+in.Hits["pool"] || s.LocalHBM != in.Hits["hbm"] {
				t.Errorf("%s: instance %d: sources %+v, hits %v", p.Name, i, s, in.Hits)
			}
		}
	}
}

// TestOneNodePool: a pool of one node is that node's own tier: the same
// hits, bytes and latencies as the tier node-scoped, and nothing crosses
// its NIC.
func TestOneNodePool(t *testing.T) {
	run := func(sets ...string) results.Policy {
		sc := load(t, "../scenarios/cluster_pool.toml", append([]string{"cluster.instances=1"}, sets...)...)
		sum, err := Run(context.Background(), sc, Options{Limit: 300})
		if err != nil {
			t.Fatal(err)
		}
		return sum.Policies[0]
	}
	pooled, private := run(), run("tier.pool.scope=node")
	if pooled.Pool == nil || pooled.Pool.RemoteHits != 0 || len(pooled.NICs) != 1 || pooled.NICs[0].SendBytes != 0 || pooled.NICs[0].RecvBytes != 0 {
		t.Fatalf("one-node pool %+v, NICs %+v", pooled.Pool, pooled.NICs)
	}
	if !reflect.DeepEqual(pooled.Hits, private.Hits) || !reflect.DeepEqual(pooled.BytesMoved, private.BytesMoved) ||
		!reflect.DeepEqual(*pooled.TTFTms, *private.TTFTms) || pooled.Instances[0].Sources.PoolLocal != private.Instances[0].Sources.LocalTier-private.Hits["host"] {
		t.Errorf("one-node pool: hits %v, moved %v, TTFT %+v\nprivate tier: hits %v, moved %v, TTFT %+v",
			pooled.Hits, pooled.BytesMoved, *pooled.TTFTms, private.Hits, private.BytesMoved, *private.TTFTms)
	}
}

// TestRunIDCluster: a run's ID changes with what shapes its results (the
// scope of a tier, the NICs a pool sends through) and not with NIC keys
// that carry nothing (no pool, no disaggregation), so that scenarios
// written before those keys keep their IDs.
func TestRunIDCluster(t *testing.T) {
	id := func(sets ...string) string {
		sc := load(t, "../scenarios/cluster_pool.toml", sets...)
		s, err := runID(sc, trace.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pool, fastPool := id(), id("cluster.nic_bandwidth=50GB/s")
	private, fastPrivate := id("tier.pool.scope=node"), id("tier.pool.scope=node", "cluster.nic_bandwidth=50GB/s")
	if pool == fastPool || pool == private || private != fastPrivate {
		t.Errorf("run IDs: pool %s, pool with faster NICs %s, private %s, private with faster NICs %s", pool, fastPool, private, fastPrivate)
	}
}

// TestClusterConfig: the scenario's pool, NICs and prefill instances reach
// the cluster: the pooled tier's capacity is each node's share, the NIC
// keys are bytes/s, ns and lanes, and the instances are the prefill ones
// plus the decode ones.
func TestClusterConfig(t *testing.T) {
	sc := load(t, "../scenarios/cluster_pool.toml", "cluster.nic_bandwidth=50GB/s", "cluster.nic_latency=2us", "cluster.nic_lanes=4")
	cfg := SimConfig(sc, sc.Policies[0], nil)
	cc, err := ClusterConfig(sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cc.PoolShare != 16<<30 || cc.NIC != (sim.NICSpec{Bandwidth: 50e9, Latency: 2000, Lanes: 4}) || cc.Prefill != 0 || len(cc.Instances) != 4 || cc.Router.Name() != "round_robin" {
		t.Errorf("pooled: share %d, NIC %+v, prefill %d, %d instances, router %s", cc.PoolShare, cc.NIC, cc.Prefill, len(cc.Instances), cc.Router.Name())
	}
	if len(cfg.Links) != 2 || cfg.Links[1].From != 1 || cfg.Links[1].To != 2 {
		t.Errorf("the pooled tier's links %+v", cfg.Links)
	}
	sc = disaggregated(t, 1, 3, "tier.pool.scope=node")
	if cc, err = ClusterConfig(sc, SimConfig(sc, sc.Policies[0], nil)); err != nil {
		t.Fatal(err)
	}
	if cc.PoolShare != 0 || cc.Prefill != 1 || len(cc.Instances) != 4 || cc.NIC.Bandwidth != 25e9 {
		t.Errorf("disaggregated: share %d, prefill %d, %d instances, NIC %+v", cc.PoolShare, cc.Prefill, len(cc.Instances), cc.NIC)
	}
}

// disaggregated is cluster_pool.toml with prefill and decode instances in
// place of instances.
func disaggregated(t *testing.T, prefill, decode int, sets ...string) *scenario.Scenario {
	t.Helper()
	const path = "../scenarios/cluster_pool.toml"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "\ninstances = 4\n", fmt.Sprintf("\nprefill_instances = %d\ndecode_instances = %d\n", prefill, decode), 1)
	sc, err := scenario.ParseWith([]byte(src), path, sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestDisaggregatedRoles: under disaggregation summary.json names each
// instance's role, the prefill ones first.
func TestDisaggregatedRoles(t *testing.T) {
	sc := disaggregated(t, 1, 2)
	if sc.Cluster.Instances != 3 || sc.Cluster.Prefill != 1 {
		t.Fatalf("cluster %+v", sc.Cluster)
	}
	sum, err := Run(context.Background(), sc, Options{Limit: 60})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, in := range sum.Policies[0].Instances {
		roles = append(roles, in.Role)
	}
	if strings.Join(roles, ",") != "prefill,decode,decode" {
		t.Errorf("roles %v", roles)
	}
	// A decode instance's blocks come over the NICs or from its own cache,
	// never "recomputed" (it computes the last token only); a prefill
	// instance transfers nothing in.
	var moved int64
	for i, in := range sum.Policies[0].Instances {
		src := in.Sources
		if src.Total() != in.Hits["hbm"]+in.Hits["host"]+in.Hits["pool"]+src.Recomputed+src.Transferred {
			t.Errorf("instance %d: sources %+v, hits %v", i, *src, in.Hits)
		}
		switch {
		case in.Role == "decode" && src.Recomputed != 0:
			t.Errorf("decode instance %d: %d blocks recomputed", i, src.Recomputed)
		case in.Role == "prefill" && src.Transferred != 0:
			t.Errorf("prefill instance %d: %d blocks transferred in", i, src.Transferred)
		}
		moved += src.Transferred
	}
	if moved == 0 {
		t.Error("no block crossed to a decode instance")
	}
}
