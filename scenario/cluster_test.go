package scenario

import (
	"reflect"
	"strings"
	"testing"

	"kvsim/cluster"
)

// TestCluster: [cluster] is absent by default, takes the routers' defaults,
// and refuses bad values naming the file, line and key.
func TestCluster(t *testing.T) {
	s, err := Parse([]byte(doc("")), path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Cluster.Instances != 0 {
		t.Fatalf("no [cluster]: %+v", s.Cluster)
	}
	s, err = Parse([]byte(doc("[cluster]\ninstances = 4\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	want := Cluster{Instances: 4, Router: "round_robin",
		Keys:         cluster.Keys{CacheThreshold: 0.5, BalanceAbs: 32, BalanceRel: 1.0001, OverlapWeight: 1, HostWeight: 0.75},
		NICBandwidth: 25e9, NICLatency: 5000, NICLanes: 8}
	if !reflect.DeepEqual(s.Cluster, want) {
		t.Fatalf("defaults %+v, want %+v", s.Cluster, want)
	}
	if !strings.Contains(s.Describe(), "cluster: 4 instances, router round_robin\n") {
		t.Fatalf("description lacks the cluster:\n%s", s.Describe())
	}
	for _, st := range []string{"direct", "host"} {
		s, err = Parse([]byte(doc("[cluster]\ninstances = 2\npeer_fetch = true\npeer_stage = \""+st+"\"\n")), path)
		if want := map[string]string{"direct": "", "host": "host"}[st]; err != nil || s.Cluster.PeerStage != want {
			t.Fatalf("peer_stage %s: %q, %v", st, s.Cluster.PeerStage, err)
		}
	}
	s, err = Parse([]byte(doc("[slo]\nttft_ms = 500\n[cluster]\ninstances = 2\nrouter = \"mooncake\"\nslo_reject = true\n")), path)
	if err != nil || !s.Cluster.SLOReject || s.Cluster.Router != "mooncake" {
		t.Fatalf("mooncake with slo_reject: %+v, %v", s.Cluster, err)
	}
	for _, c := range []struct{ src, want string }{
		{"[cluster]\nrouter = \"kv_cost\"\n", "x.toml:1: cluster: instances: required"},
		{"[cluster]\ninstances = 0\n", "x.toml:2: cluster: instances: must be >= 1"},
		{"[cluster]\ninstances = 2\nrouter = \"random\"\n", `x.toml:3: cluster: router: unknown router "random"`},
		{"[cluster]\ninstances = 2\ncache_threshold = 1.5\n", "x.toml:3: cluster: cache_threshold: must be within 0..1"},
		{"[cluster]\ninstances = 2\nbalance_rel = 0.5\n", "x.toml:3: cluster: balance_rel: must be >= 1"},
		{"[cluster]\ninstances = 2\nhost_weight = 2\n", "x.toml:3: cluster: host_weight: must be within 0..1"},
		// Both ends of a range come from the schema, with the value.
		{"[cluster]\ninstances = 2\ncache_threshold = -0.5\n", "x.toml:3: cluster: cache_threshold: must be within 0..1, got -0.5"},
		{"[cluster]\ninstances = 2\nbalance_rel = -1\n", "x.toml:3: cluster: balance_rel: must be >= 1, got -1"},
		{"[cluster]\ninstances = 2\nhost_weight = -0.25\n", "x.toml:3: cluster: host_weight: must be within 0..1 (above 1 a lower-tier hit would beat an hbm hit), got -0.25"},
		{"[cluster]\ninstances = 2\nhost_weight = 1.5\n", "got 1.5"},
		{"[cluster]\ninstances = 2\nslo_reject = true\n", "x.toml:3: cluster: slo_reject: needs [slo] ttft_ms"},
		{"[cluster]\ninstances = 2\nscope = \"cluster\"\n", `x.toml:3: unknown key "scope"`},
		{"[cluster]\ninstances = 2\npeer_stage = \"host\"\n", "x.toml:3: cluster: peer_stage: needs peer_fetch = true"},
		{"[cluster]\ninstances = 2\npeer_fetch = true\npeer_stage = \"gpu\"\n", `x.toml:4: cluster: peer_stage: unknown peer_stage "gpu" (known: direct, host)`},
	} {
		_, err := Parse([]byte(doc(c.src)), path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
}
