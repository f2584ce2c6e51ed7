package scenario

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"kvsim/core"
	"kvsim/param"
	"kvsim/policy"
)

// Policy is one [[policy]] entry: an eviction strategy and its knobs.
type Policy struct {
	Name string // label in results; default Eviction
	// Eviction is a policy.Names() entry when every tier runs that policy,
	// else the per-tier table rendered in tier order: "hbm=lru,ssd=fifo".
	Eviction  string
	Evictions []string // the policy.Names() entry of each tier, in Scenario.Tiers order
	Params    map[string]float64

	// Reserved for strategies beyond eviction; "" / 0 mean the default.
	Admission       string `key:"admission"`
	Promotion       string `key:"promotion"`
	Write           string `key:"write"`
	Prefetch        string `key:"prefetch"`
	Recompute       string `key:"recompute"`        // "never" (default) or "when-cheaper"
	PrefetchTimeout int64  `key:"prefetch_timeout"` // ns
	Stage           string `key:"stage"`            // "copy" (default) or "pass"
	// IdleRank is "off" (""), "observed" or "oracle": whether and how the
	// tiers' policies rank idle sessions' blocks (policy.IdleRank). Left out
	// of JSON when off, so run IDs stay as they were.
	IdleRank string `key:"idle_rank" json:",omitempty"`

	// Strategy is the above as the core reads them, parsed and checked at
	// load. Left out of JSON: it only restates the strings (kvsim's run_id
	// hashes the scenario's JSON and must not change with it).
	Strategy core.Strategy `json:"-"`
}

// PolicyIndex is the index of the [[policy]] named name, -1 if there is none.
func (s *Scenario) PolicyIndex(name string) int {
	return slices.IndexFunc(s.Policies, func(p Policy) bool { return p.Name == name })
}

// extraKeys are the keys of a [[policy]] entry it does not declare: the
// eviction policy's parameters.
func (t *table) extraKeys() []string {
	var out []string
	for k := range t.m {
		if t.decl.field(k) == nil {
			out = append(out, k)
		}
	}
	return out
}

func (p *parser) parsePolicies(ts []*table, tiers []Tier, closed bool) ([]Policy, error) {
	if len(ts) == 0 {
		return nil, &Error{Path: p.path, Line: p.lines.line("", 0, "policy"), Msg: "missing [[policy]]: at least one policy is required"}
	}
	if len(ts) > MaxPolicies {
		return nil, ts[MaxPolicies].errf("", "too many policies: at most %d", MaxPolicies)
	}
	out := make([]Policy, len(ts))
	seen := map[string]int{}
	for i, t := range ts {
		var pol Policy
		var err error
		if pol.Name, err = t.str("name"); err != nil {
			return nil, err
		}
		_, named := t.m["name"]
		if named {
			if strings.TrimSpace(pol.Name) == "" {
				return nil, t.errf("name", "must not be empty")
			}
			t.label = fmt.Sprintf("policy %q", pol.Name)
		}
		if _, ok := t.m["eviction"]; !ok {
			// A misspelt "eviction" is likelier than a missing one.
			if extra := t.extraKeys(); len(extra) > 0 {
				k := t.byLine(extra)[0]
				return nil, &Error{Path: p.path, Line: t.line(k), Msg: fmt.Sprintf("unknown key %q in [[policy]]", k)}
			}
			return nil, t.errf("eviction", "required (known: %s)", strings.Join(policy.Names(), ", "))
		}
		if pol.Evictions, err = t.evictions(tiers); err != nil {
			return nil, err
		}
		pol.Eviction = renderEvictions(pol.Evictions, tiers)
		if !named {
			if strings.Contains(pol.Eviction, "=") {
				return nil, t.errf("name", "required when tiers differ in eviction (%s): it labels the results and --set", pol.Eviction)
			}
			pol.Name = pol.Eviction
			t.label = fmt.Sprintf("policy %q", pol.Name)
		}
		if j, dup := seen[pol.Name]; dup {
			return nil, t.errf("name", "duplicate policy name (policy %d has it too); give each [[policy]] its own name", j+1)
		}
		seen[pol.Name] = i
		err = t.bind(&pol, func(key string) (any, error) {
			if key == "prefetch_timeout" {
				return nil, nil
			}
			return keep, nil // "" stands for the declared default (core's)
		})
		if err != nil {
			return nil, err
		}
		if pol.Strategy, err = strategy(t, &pol); err != nil {
			return nil, err
		}
		if err = idleRank(t, &pol, tiers, closed); err != nil {
			return nil, err
		}
		pol.Params = map[string]float64{}
		var takes []string // the parameters of the tiers' policies
		for _, e := range pol.Evictions {
			spec, _ := policy.Lookup(e)
			for _, k := range param.Names(spec.Params) {
				if !slices.Contains(takes, k) {
					takes = append(takes, k)
				}
			}
		}
		for _, k := range t.byLine(t.extraKeys()) { // file order: the first problem is the one shown
			if !slices.Contains(takes, k) {
				what := "takes no parameters"
				if len(takes) > 0 {
					what = "takes " + strings.Join(takes, ", ")
				}
				return nil, &Error{Path: p.path, Line: t.line(k), Msg: fmt.Sprintf("unknown key %q in [[policy]] %q (eviction %q %s)", k, pol.Name, pol.Eviction, what)}
			}
			if pol.Params[k], err = t.param(k); err != nil {
				return nil, err
			}
		}
		out[i] = pol
	}
	return out, nil
}

// idleRank checks idle_rank: it needs closed-loop sessions (a call's end
// and its session's next call) and policies IdleRank can wrap.
func idleRank(t *table, pol *Policy, tiers []Tier, closed bool) error {
	if pol.IdleRank == "off" {
		pol.IdleRank = ""
	}
	if pol.IdleRank == "" {
		return nil
	}
	if !closed {
		return t.errf("idle_rank", `needs [workload] mode = "closed": an idle session is one waiting for its next call`)
	}
	for i, e := range pol.Evictions {
		spec, _ := policy.Lookup(e)
		if spec.Offline {
			return t.errf("idle_rank", "tier %q: cannot wrap offline policy %q", tiers[i].Name, e)
		}
		if base, err := policy.New(e, policy.Config{Capacity: max(tiers[i].Capacity, 1), Params: pol.TierParams(i)}); err == nil {
			if _, err := policy.IdleRank(base); err != nil {
				return t.errf("idle_rank", "tier %q (%s): %v", tiers[i].Name, e, err)
			}
		}
	}
	return nil
}

// evictions reads the eviction key: one policy name for every tier, or an
// inline table by tier name with an optional "default" entry.
func (t *table) evictions(tiers []Tier) ([]string, error) {
	known := func(name string) error {
		if _, ok := policy.Lookup(name); !ok {
			return fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(policy.Names(), ", "))
		}
		return nil
	}
	out := make([]string, len(tiers))
	switch v := t.m["eviction"].(type) {
	case string:
		if err := known(v); err != nil {
			return nil, t.errf("eviction", "%v", err)
		}
		for i := range out {
			out[i] = v
		}
		return out, nil
	case map[string]any:
		names := make([]string, len(tiers))
		for i, tr := range tiers {
			names[i] = tr.Name
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		bad := func(k, format string, args ...any) error {
			return t.errf("eviction", "%s: %s", k, fmt.Sprintf(format, args...))
		}
		for _, k := range keys {
			if k != "default" && !slices.Contains(names, k) {
				return nil, bad(k, "unknown tier %q (tiers: %s; or default)", k, strings.Join(names, ", "))
			}
			name, ok := v[k].(string)
			if !ok {
				return nil, bad(k, "must be a policy name, got %s", describe(v[k]))
			}
			if err := known(name); err != nil {
				return nil, bad(k, "%v", err)
			}
		}
		for i, n := range names {
			e, ok := v[n].(string)
			if !ok {
				if e, ok = v["default"].(string); !ok {
					return nil, t.errf("eviction", "no policy for tier %q: name it in the table or add default = \"...\"", n)
				}
			}
			out[i] = e
		}
		return out, nil
	}
	return nil, t.errf("eviction", `must be a policy name or a table of them by tier name ({ hbm = "lru", ssd = "fifo" }), got %s`, describe(t.m["eviction"]))
}

// renderEvictions is Policy.Eviction: the one name when every tier runs
// it, else "tier=name" in tier order, comma-separated.
func renderEvictions(ev []string, tiers []Tier) string {
	same := true
	for _, e := range ev {
		same = same && e == ev[0]
	}
	if same && len(ev) > 0 {
		return ev[0]
	}
	parts := make([]string, len(ev))
	for i, e := range ev {
		parts[i] = tiers[i].Name + "=" + e
	}
	return strings.Join(parts, ",")
}

// TierEviction is the eviction policy of tier i.
func (p *Policy) TierEviction(i int) string {
	if i < len(p.Evictions) {
		return p.Evictions[i]
	}
	return p.Eviction // a Policy built by hand, one name
}

// TierParams are the parameters tier i's policy declares: all of Params
// when every tier runs one policy (policy.New then checks them), else
// those of Params its policy takes.
func (p *Policy) TierParams(i int) map[string]float64 {
	name := p.TierEviction(i)
	if name == p.Eviction {
		return p.Params
	}
	spec, _ := policy.Lookup(name)
	out := map[string]float64{}
	for k, v := range p.Params {
		if param.Find(spec.Params, k) != nil {
			out[k] = v
		}
	}
	return out
}

// Offline reports whether any tier's policy needs the trace's future
// (policy.Offline).
func (p *Policy) Offline() bool {
	if len(p.Evictions) == 0 {
		return policy.Offline(p.Eviction)
	}
	return slices.ContainsFunc(p.Evictions, policy.Offline)
}

// strategy reads the strategy keys with the core's own parsers, so that a
// loaded policy carries the values the core runs with.
func strategy(t *table, pol *Policy) (core.Strategy, error) {
	st := core.Strategy{PrefetchTimeout: pol.PrefetchTimeout}
	var err error
	if st.AdmitAfter, err = core.ParseAdmission(pol.Admission); err != nil {
		return st, t.errf("admission", "%v", err)
	}
	if st.WriteThrough, err = core.ParseWrite(pol.Write); err != nil {
		return st, t.errf("write", "%v", err)
	}
	if st.Promotion, err = core.ParsePromotion(pol.Promotion); err != nil {
		return st, t.errf("promotion", "%v", err)
	}
	if st.RecomputeWhenCheaper, err = core.ParseRecompute(pol.Recompute); err != nil {
		return st, t.errf("recompute", "%v", err)
	}
	if st.Prefetch, err = core.ParsePrefetch(pol.Prefetch); err != nil {
		return st, t.errf("prefetch", "%v", err)
	}
	if st.Stage, err = core.ParseStage(pol.Stage); err != nil {
		return st, t.errf("stage", "%v", err)
	}
	if st.Prefetch == core.PrefetchTimeout && pol.PrefetchTimeout <= 0 {
		return st, t.errf("prefetch", "\"timeout\" needs prefetch_timeout > 0")
	}
	return st, nil
}
