package scenario

import (
	"fmt"
	"strings"

	"kvsim/core"
	"kvsim/internal/endpoint"
	"kvsim/tierkind"
)

// ScopeCluster is the scope of a tier shared by a cluster's instances.
const ScopeCluster = "cluster"

// Tier is one level of the memory hierarchy.
type Tier struct {
	Name      string  `key:"name"`
	Kind      string  `key:"kind"`        // tierkind's registry: hbm, pinned, dram, ssd, nvmeof, remote_dram
	Capacity  int64   `key:"capacity"`    // bytes
	Bandwidth float64 `key:"bandwidth"`   // bytes/s
	Latency   int64   `key:"latency"`     // ns
	CostPerGB float64 `key:"cost_per_gb"` // dollars per 1e9 bytes
	// Shared: every transfer into or out of the tier, over any link and in
	// either direction, also queues for one pipe of Bandwidth, as an SSD's
	// reads and writes share its flash.
	Shared bool `key:"shared_bandwidth"`
	// Scope is "node" (the default: each instance has its own
	// copy) or "cluster": one pool shared by a [cluster]'s instances, to
	// which each node contributes Capacity. "" reads as "node". A run's ID
	// hashes it for a cluster tier only, so that IDs of scenarios without
	// a pool stay as they were.
	Scope string `json:",omitempty" key:"scope"`
	// Endpoint (remote_dram only) is the Redis or Valkey server replay
	// --real keeps the tier in; "" emulates it. Left out of JSON when
	// empty, so run ids of scenarios without it do not change.
	Endpoint string `json:",omitempty" key:"endpoint"`
	// Device (nvmeof only) is the block device or file replay --real
	// keeps the tier in; "" a bucket store. Left out of JSON when empty.
	Device string `json:",omitempty" key:"device"`
	// Endurance ratings and service life (docs/ledger.md); 0 is none
	// (ServiceYears: 5), omitted from JSON so run ids stay as they were.
	DWPD         float64 `json:",omitempty" key:"dwpd"`          // drive writes per day over ServiceYears
	TBW          float64 `json:",omitempty" key:"tbw"`           // terabytes (1e12 bytes) written
	ServiceYears float64 `json:",omitempty" key:"service_years"` // rating period and amortisation
}

// DefaultServiceYears is service_years when not given: the usual
// warranty of a data-center drive, over which its DWPD is rated.
const DefaultServiceYears = 5.0

// Years is t's service_years, or the default.
func (t Tier) Years() float64 {
	if t.ServiceYears > 0 {
		return t.ServiceYears
	}
	return DefaultServiceYears
}

// CheckEndpoint checks a remote_dram endpoint: redis:// or valkey://, a
// host, a port, and at most a database number for a path; or rdma://, a
// host, a port, and at most the local device and GID index as
// parameters (internal/endpoint, which the stores read it with too).
func CheckEndpoint(s string) error {
	_, err := endpoint.Parse(s)
	return err
}

// Kinds lists the tier kinds in hierarchy order (tierkind's registry).
func Kinds() []string { return tierkind.Names() }

// KindDefaults returns the defaults of a tier kind (Name is empty).
func KindDefaults(kind string) (Tier, bool) {
	k, ok := tierkind.Lookup(kind)
	if !ok {
		return Tier{}, false
	}
	return Tier{Kind: kind, Capacity: k.Capacity, Bandwidth: k.Bandwidth, Latency: k.Latency, CostPerGB: k.CostPerGB}, true
}

func (p *parser) parseTiers(ts []*table, g GPU, m Model) ([]Tier, error) {
	if len(ts) == 0 {
		return nil, &Error{Path: p.path, Line: p.lines.line("", 0, "tier"), Msg: "missing [[tier]]: at least one tier (the hbm tier) is required"}
	}
	if len(ts) > core.MaxTiers {
		return nil, ts[core.MaxTiers].errf("", "too many tiers: at most %d", core.MaxTiers)
	}
	out := make([]Tier, len(ts))
	seen := map[string]int{}
	pool := -1 // the cluster-scoped tier
	for i, t := range ts {
		name, err := t.str("name")
		if err != nil {
			return nil, err
		}
		_, named := t.m["name"]
		if named {
			if strings.TrimSpace(name) == "" {
				return nil, t.errf("name", "must not be empty")
			}
			t.label = fmt.Sprintf("tier %q", name)
		}
		kind, err := t.str("kind")
		if err != nil {
			return nil, err
		}
		def, _ := KindDefaults(kind)
		if !named {
			name = kind // an unnamed tier is called by its kind
			t.label = fmt.Sprintf("tier %q", name)
		} else if err := CheckName(name); err != nil {
			return nil, t.errf("name", "%q %v", name, err)
		}
		if j, dup := seen[name]; dup {
			return nil, t.errf("name", "duplicate tier name (tier %d has it too)", j+1)
		}
		seen[name] = i
		if i == 0 && kind != "hbm" {
			return nil, t.errf("kind", `the first tier must be "hbm", got %q`, kind)
		}
		if i > 0 && kind == "hbm" {
			return nil, t.errf("kind", `only one "hbm" tier is allowed (the first)`)
		}
		// A kind's own keys only on a tier of that kind: a type error
		// first, then the kind's; bind below checks their values.
		for _, k := range tierkind.Keys() {
			if raw, given := t.m[k.Name]; given {
				if _, err := t.convert(t.decl.field(k.Name), raw, true, nil); err != nil {
					return nil, err
				}
				if owner := tierkind.Owner(k.Name); owner != kind {
					o, _ := tierkind.Lookup(owner)
					return nil, t.errf(k.Name, `only %s %q tier has one (this tier is %q)`, o.Article, owner, kind)
				}
			}
		}
		tier := def
		tier.Name = name
		err = t.bind(&tier, func(key string) (any, error) {
			switch key {
			case "name":
				return keep, nil
			case "capacity":
				if kind == "hbm" {
					c, why := hbmDefault(g, m, def.Capacity)
					if why != "" {
						return nil, t.errf("capacity", "%s", why)
					}
					return c, nil
				}
			}
			return presetDefault(&def, key), nil
		})
		if err != nil {
			return nil, err
		}
		if tier.Scope == ScopeCluster {
			switch {
			case i == 0:
				return nil, t.errf("scope", `the hbm tier cannot be "cluster": each instance has its own HBM`)
			case pool >= 0:
				return nil, t.errf("scope", `only one tier can be "cluster" (tier %q is)`, out[pool].Name)
			}
			pool = i
		}
		out[i] = tier
	}
	if pool >= 0 && pool != len(out)-1 {
		return nil, ts[pool].errf("scope", `"cluster" only for the last tier (tier %q follows)`, out[pool+1].Name)
	}
	return out, nil
}
