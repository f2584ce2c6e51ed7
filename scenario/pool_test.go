package scenario

import (
	"strings"
	"testing"
)

// pooled is a cluster whose last tier is one pool of the nodes' DRAM.
const pooled = "[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n[[tier]]\nname = \"pool\"\nkind = \"dram\"\ncapacity = \"64GiB\"\nscope = \"cluster\"\n" +
	"[cluster]\ninstances = 4\n"

// TestPooledTier: scope defaults to "node", "cluster" marks the last tier
// as the cluster's pool (its capacity each node's share, its links like
// any tier's), the NIC keys take their defaults, and the description says
// so; --set turns the pool back into private DRAM.
func TestPooledTier(t *testing.T) {
	s, err := Parse([]byte(doc(pooled)), path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pool() != 2 || s.Tiers[0].Scope != "node" || s.Tiers[1].Scope != "node" || s.Tiers[2].Scope != "cluster" || s.Tiers[2].Capacity != 64<<30 {
		t.Fatalf("tiers %+v, pool %d", s.Tiers, s.Pool())
	}
	if len(s.Links) != 2 || s.Links[1].From != 1 || s.Links[1].To != 2 {
		t.Fatalf("links %+v: the pool is linked like any tier", s.Links)
	}
	if c := s.Cluster; c.NICBandwidth != 25e9 || c.NICLatency != 5000 || c.NICLanes != 8 || c.Instances != 4 || c.Prefill != 0 {
		t.Fatalf("cluster %+v", c)
	}
	d := s.Describe()
	for _, want := range []string{
		"(cluster-scoped: each node's share of one pool)\n",
		`cluster: 4 instances, tier "pool" pooled (4 x 64 GiB), NICs 25 GB/s each way, 5us, 8 lanes, router round_robin` + "\n",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q:\n%s", want, d)
		}
	}
	s, err = ParseWith([]byte(doc(pooled+"nic_bandwidth = \"100Gbit/s\"\nnic_latency = \"2us\"\nnic_lanes = 2\n")), path, []string{"tier.pool.scope=node"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Pool() != -1 || s.Tiers[2].Scope != "node" {
		t.Fatalf("--set tier.pool.scope=node: tiers %+v", s.Tiers)
	}
	if c := s.Cluster; c.NICBandwidth != 12.5e9 || c.NICLatency != 2000 || c.NICLanes != 2 {
		t.Fatalf("NIC keys: %+v", c)
	}
	if strings.Contains(s.Describe(), "NICs") {
		t.Errorf("no pool, no disaggregation: the NICs carry nothing, the description should not list them:\n%s", s.Describe())
	}
}

// TestPooledTierErrors: each misuse of scope is one line naming the file,
// line and key.
func TestPooledTierErrors(t *testing.T) {
	hbm, dram := "[[tier]]\nkind = \"hbm\"\n", "[[tier]]\nkind = \"dram\"\n"
	pool := "[[tier]]\nname = \"pool\"\nkind = \"dram\"\nscope = \"cluster\"\n"
	cl := "[cluster]\ninstances = 2\n"
	for _, c := range []struct{ src, want string }{
		{"[[tier]]\nkind = \"hbm\"\nscope = \"cluster\"\n" + cl, `x.toml:3: tier "hbm": scope: the hbm tier cannot be "cluster"`},
		{hbm + pool + dram + cl, `x.toml:6: tier "pool": scope: "cluster" only for the last tier (tier "dram" follows)`},
		{hbm + pool + "[[tier]]\nname = \"pool2\"\nkind = \"ssd\"\nscope = \"cluster\"\n" + cl, `x.toml:10: tier "pool2": scope: only one tier can be "cluster" (tier "pool" is)`},
		{hbm + pool, `x.toml:6: tier "pool": scope: "cluster" needs a [cluster] table`},
		{hbm + "[[tier]]\nkind = \"dram\"\nscope = \"global\"\n" + cl, `x.toml:5: tier "dram": scope: unknown scope "global" (known: node, cluster)`},
		{hbm + "[[tier]]\nkind = \"dram\"\nscope = 1\n" + cl, `x.toml:5: tier "dram": scope: must be a string`},
		{hbm + "[[tier]]\nname = \"pool\"\nkind = \"dram\"\ncapacity = \"1024PiB\"\nscope = \"cluster\"\n[cluster]\ninstances = 8\n",
			`x.toml:6: tier "pool": capacity: 1 EiB from each of 8 instances is past what kvsim can count in bytes`},
	} {
		_, err := Parse([]byte(doc(c.src)), path)
		if err == nil || !strings.HasPrefix(err.Error(), "scenarios/"+c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\ngot  %v\nwant %q", c.src, err, c.want)
		}
	}
}

// TestDisaggregation: prefill_instances and decode_instances stand for
// instances (their sum, the first ones prefill); exactly one of the two
// forms must be given.
func TestDisaggregation(t *testing.T) {
	s, err := Parse([]byte(doc("[cluster]\nprefill_instances = 2\ndecode_instances = 6\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Cluster; c.Instances != 8 || c.Prefill != 2 {
		t.Fatalf("cluster %+v", c)
	}
	if d := s.Describe(); !strings.Contains(d, "cluster: 8 instances (2 prefill, 6 decode), NICs 25 GB/s each way, 5us, 8 lanes, router round_robin\n") {
		t.Errorf("description:\n%s", d)
	}
	// All three agreeing: a colocated scenario split by --set.
	s, err = ParseWith([]byte(doc("[cluster]\ninstances = 4\n")), path, []string{"cluster.prefill_instances=1", "cluster.decode_instances=3"})
	if err != nil || s.Cluster.Instances != 4 || s.Cluster.Prefill != 1 {
		t.Fatalf("instances = 4 split 1 + 3 by --set: %+v, %v", s.Cluster, err)
	}
	for _, c := range []struct{ src, want string }{
		{"[cluster]\nrouter = \"kv_cost\"\n", "x.toml:1: cluster: instances: required (the number of instances; or prefill_instances and decode_instances)"},
		{"[cluster]\ninstances = 4\nprefill_instances = 1\n", "x.toml:3: cluster: prefill_instances: not alone with instances"},
		{"[cluster]\ninstances = 4\ndecode_instances = 1\n", "x.toml:3: cluster: decode_instances: not alone with instances"},
		{"[cluster]\ninstances = 4\nprefill_instances = 1\ndecode_instances = 2\n", "x.toml:2: cluster: instances: 4, but 1 prefill + 2 decode instances"},
		{"[cluster]\nprefill_instances = 1\n", "x.toml:2: cluster: prefill_instances: needs decode_instances too"},
		{"[cluster]\ndecode_instances = 3\n", "x.toml:2: cluster: decode_instances: needs prefill_instances too"},
		{"[cluster]\nprefill_instances = 0\ndecode_instances = 3\n", "x.toml:2: cluster: prefill_instances: must be >= 1"},
		{"[cluster]\nprefill_instances = 2\ndecode_instances = \"3\"\n", "x.toml:3: cluster: decode_instances: must be an integer"},
		{"[cluster]\nprefill_instances = 128\ndecode_instances = 129\n", "x.toml:3: cluster: decode_instances: 128 prefill + 129 decode instances: at most 256 in all"},
		{"[cluster]\ninstances = 2\nnic_lanes = 0\n", "x.toml:3: cluster: nic_lanes: must be >= 1"},
		{"[cluster]\ninstances = 2\nnic_bandwidth = 0\n", "x.toml:3: cluster: nic_bandwidth: must be > 0"},
		{"[cluster]\ninstances = 2\nnic_bandwidth = \"fast\"\n", "x.toml:3: cluster: nic_bandwidth: "},
		{"[cluster]\ninstances = 2\nnic_latency = 5\n", `x.toml:3: cluster: nic_latency: must be a duration like "10us"`},
	} {
		_, err := Parse([]byte(doc(c.src)), path)
		if err == nil || !strings.HasPrefix(err.Error(), "scenarios/"+c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\ngot  %v\nwant %q", c.src, err, c.want)
		}
	}
}
