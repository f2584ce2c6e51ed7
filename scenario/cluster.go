package scenario

import (
	"fmt"
	"strings"

	"kvsim/cluster"
)

// Cluster is the [cluster] table: Instances copies of the GPU and the
// tiers, and the router choosing each request's instance.
type Cluster struct {
	// Instances is key instances, or prefill_instances + decode_instances;
	// 0: no [cluster], one GPU.
	Instances int
	Router    string `key:"router"`
	// The routers' keys, each router's declared in its file (each reads
	// its own); slo_reject needs [slo] ttft_ms.
	cluster.Keys

	// Prefill is key prefill_instances: the first Prefill instances
	// prefill, the rest decode; 0 without disaggregation.
	Prefill int `json:",omitempty"`
	// Every node's NIC (keys nic_bandwidth, bytes/s each way, nic_latency,
	// ns, nic_lanes). Empty in JSON: a run's ID hashes them only when a
	// pool or disaggregation sends bytes through them (experiment's runID).
	NICBandwidth float64 `json:",omitempty" key:"nic_bandwidth"`
	NICLatency   int64   `json:",omitempty" key:"nic_latency"`
	NICLanes     int     `json:",omitempty" key:"nic_lanes"`
	// PeerFetch is key peer_fetch: an instance may read a block from
	// another instance's host-memory tier (PeerTier) over the NICs.
	PeerFetch bool `json:",omitempty" key:"peer_fetch"`
	// PeerStage is key peer_stage: "host" lands a peer read in the
	// reader's own peer tier on its way to HBM; "" (key "direct", the
	// default) reads it straight into HBM. Empty in JSON when direct, so
	// run IDs stay as they were.
	PeerStage string `json:",omitempty" key:"peer_stage"`
	// ViewDelay is key view_delay, ns: how late the router sees the cluster.
	ViewDelay int64 `json:",omitempty" key:"view_delay"`
	// Events is key events: where kvsim run publishes the instances' KV
	// events (--publish-events). Not in JSON: publishing changes no result.
	Events string `json:"-" key:"events"`
}

// Pool is the index of the cluster-scoped tier (scope = "cluster"), -1
// when there is none.
func (s *Scenario) Pool() int {
	for i, t := range s.Tiers {
		if t.Scope == ScopeCluster {
			return i
		}
	}
	return -1
}

// PeerTier is the tier peer fetch reads from another instance: the first
// node-scoped host-memory tier (pinned or dram) below hbm, -1 when there is
// none.
func (s *Scenario) PeerTier() int {
	for i := 1; i < len(s.Tiers); i++ {
		if t := s.Tiers[i]; t.Scope != ScopeCluster && (t.Kind == "pinned" || t.Kind == "dram") {
			return i
		}
	}
	return -1
}

func parseCluster(t *table, slo SLO) (Cluster, error) {
	var c Cluster
	var err error
	if c.Instances, c.Prefill, err = t.instances(); err != nil {
		return c, err
	}
	if err := t.bind(&c); err != nil {
		return c, err
	}
	for _, k := range cluster.RouterKeys() {
		v, err := t.value(k.Name, k.Default)
		if err != nil {
			return c, err
		}
		c.Set(k.Name, v)
	}
	if c.SLOReject && !(slo.TTFTms > 0) {
		return c, t.errf("slo_reject", "needs [slo] ttft_ms")
	}
	if c.PeerStage == "direct" {
		c.PeerStage = ""
	}
	if c.PeerStage != "" && !c.PeerFetch {
		return c, t.errf("peer_stage", "needs peer_fetch = true")
	}
	return c, nil
}

// instances reads [cluster]'s size: instances, or prefill_instances and
// decode_instances (then prefill is the first).
func (t *table) instances() (total, prefill int, err error) {
	var n [3]int64 // instances, prefill_instances, decode_instances; 0: absent
	for i, key := range []string{"instances", "prefill_instances", "decode_instances"} {
		if n[i], err = t.optInt(key, 0); err != nil { // types and ranges first
			return 0, 0, err
		}
	}
	whole, pre, dec := n[0] > 0, n[1] > 0, n[2] > 0
	switch {
	case whole && pre && dec && n[0] == n[1]+n[2]:
		// All three agree: a colocated scenario split by --set.
	case whole && (pre || dec):
		key := "prefill_instances"
		if !pre {
			key = "decode_instances"
		} else if dec {
			return 0, 0, t.errf("instances", "%d, but %d prefill + %d decode instances: give instances, or the two, or all three agreeing", n[0], n[1], n[2])
		}
		return 0, 0, t.errf(key, "not alone with instances: give instances, or prefill_instances and decode_instances (all three when they agree)")
	case whole:
		return int(n[0]), 0, nil
	case pre != dec:
		have, want := "prefill_instances", "decode_instances"
		if dec {
			have, want = want, have
		}
		return 0, 0, t.errf(have, "needs %s too (prefill/decode disaggregation)", want)
	case !pre:
		return 0, 0, t.errf("instances", "required (the number of instances; or prefill_instances and decode_instances)")
	case n[1]+n[2] > MaxInstances:
		return 0, 0, t.errf("decode_instances", "%d prefill + %d decode instances: at most %d in all", n[1], n[2], MaxInstances)
	}
	return int(n[1] + n[2]), int(n[1]), nil
}

// routerKeys describes the router's own keys: " (k=v ...)", a true
// boolean by its name, a false one left out; "" for none.
func routerKeys(c Cluster) string {
	var parts []string
	for _, r := range cluster.Routers() {
		if r.Name != c.Router {
			continue
		}
		for _, k := range r.Keys {
			if k.Name == "peer_weight" && !c.PeerFetch {
				continue // shapes nothing without peer fetch: earlier descriptions stay as they were
			}
			switch v := c.Get(k.Name).(type) {
			case bool:
				if v {
					parts = append(parts, k.Name)
				}
			case float64:
				parts = append(parts, fmt.Sprintf("%s=%g", k.Name, v))
			default:
				parts = append(parts, fmt.Sprintf("%s=%v", k.Name, v))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, " ") + ")"
}
