package cluster

import (
	"fmt"
	"strings"

	"kvsim/param"
)

// Params tunes the routers; each router reads only its own keys, but
// NewRouter validates all of them so a bad value never waits for the router
// that would read it. docs/routers.md gives each default's source.
type Params struct {
	// Keys are the routers' [cluster] keys (router_*.go declare them).
	Keys
	// mooncake: refuse a request whose best estimated TTFT exceeds SLOTTFT
	// (ns; 0: no SLO) when SLOReject is set. [slo] ttft_ms, not a key here.
	SLOTTFT int64
	// StaleNs is how late a router sees the cluster (ns): the
	// coordinator honours it (Config.StaleNs, lag.go); the routers
	// themselves ignore it.
	StaleNs int64
	// MaxTreeBlocks bounds each instance's tree of routed prefixes in
	// cache_aware (SGLang's max_tree_size); least recently routed leaves go.
	MaxTreeBlocks int
	// BlockTokens converts the View's token counts to blocks in kv_cost;
	// 0: ceil(InputTokens/len(Blocks)) of the request being routed.
	BlockTokens int
	// SlidingWindow is the model's sliding-window attention span in tokens
	// (0: full attention only): llmd_precise's hybrid rule.
	SlidingWindow int
}

// Keys holds the values of the routers' keys. A key whose router file
// declares a field here (tag key:"NAME") is that field; any other is in
// Extra when it differs from its default. The fields are the keys routers
// had before the registry: a scenario's run_id hashes them by these names,
// so they stay; and a new router's defaults add nothing to it.
type Keys struct {
	CacheThreshold float64 `key:"cache_threshold"`
	BalanceAbs     float64 `key:"balance_abs"`
	BalanceRel     float64 `key:"balance_rel"`
	OverlapWeight  float64 `key:"overlap_weight"`
	HostWeight     float64 `key:"host_weight"`
	SLOReject      bool    `key:"slo_reject"`
	// Extra holds the keys of routers without a field (a new router's)
	// whose values are not the declared defaults.
	Extra map[string]any `json:",omitempty"`
}

// Get returns the value of key name: int64, float64, string or bool.
func (k *Keys) Get(name string) any {
	if x, ok := param.Get(k, name); ok {
		return x
	}
	if x, ok := k.Extra[name]; ok {
		return x
	}
	if d := param.Find(RouterKeys(), name); d != nil {
		return d.Default
	}
	return nil
}

// Set stores x, a value of key name.
func (k *Keys) Set(name string, x any) {
	if param.Set(k, name, x) {
		return
	}
	if d := param.Find(RouterKeys(), name); d != nil && d.Default == x {
		delete(k.Extra, name)
		return
	}
	if k.Extra == nil {
		k.Extra = map[string]any{}
	}
	k.Extra[name] = x
}

// DefaultKeys holds every router key's declared default.
func DefaultKeys() Keys {
	var k Keys
	for _, key := range RouterKeys() {
		if key.Default != nil {
			k.Set(key.Name, key.Default)
		}
	}
	return k
}

// DefaultParams returns the real systems' defaults (docs/routers.md).
func DefaultParams() Params {
	return Params{
		Keys: DefaultKeys(),
		// SGLang's 2^24 characters at ~4 per token, in blocks of 512.
		MaxTreeBlocks: 8192,
	}
}

// Validate reports the first bad field, named as a scenario key would be.
func (p Params) Validate() error {
	if err := param.Check(RouterKeys(), p.Keys.Get); err != nil {
		return err
	}
	switch {
	case p.SLOTTFT < 0:
		return fmt.Errorf("slo_ttft: must be >= 0, got %d", p.SLOTTFT)
	case p.SLOReject && p.SLOTTFT == 0:
		return fmt.Errorf("slo_reject: needs an slo_ttft > 0")
	case p.StaleNs < 0:
		return fmt.Errorf("stale: must be >= 0, got %d", p.StaleNs)
	case p.MaxTreeBlocks < 1:
		return fmt.Errorf("max_tree_blocks: must be >= 1, got %d", p.MaxTreeBlocks)
	case p.SlidingWindow < 0:
		return fmt.Errorf("sliding_window: must be >= 0, got %d", p.SlidingWindow)
	case p.BlockTokens < 0:
		return fmt.Errorf("block_tokens: must be >= 0, got %d", p.BlockTokens)
	}
	return nil
}

// RouterSpec describes a router: registered by the one file that
// implements it (router_*.go), which declares its keys, their defaults and
// docs. The scenario's [cluster] keys, its reference and docs/routers.md
// follow the registry.
type RouterSpec struct {
	Name  string
	Brief string      // one line: what it chooses
	Rank  int         // its place in lists (names, keys, docs): the order routers were added
	Keys  []param.Key // its [cluster] keys
	Reads string      // docs/routers.md: what it reads from the View
	State string      // docs/routers.md: the state it keeps of its own
	New   func(p Params) Router
}

// Ident names the router to its registry.
func (s RouterSpec) Ident() (string, int) { return s.Name, s.Rank }

var routers = param.Registry[RouterSpec]{What: "router"}

// RegisterRouter adds a router; called from init functions of this package.
func RegisterRouter(s RouterSpec) { routers.Add(s) }

// Routers lists the registered routers, by rank.
func Routers() []RouterSpec { return routers.All() }

// RouterNames lists the routers NewRouter knows.
func RouterNames() []string { return routers.Names() }

// RouterKeys lists every router's keys, by router rank.
func RouterKeys() []param.Key {
	var out []param.Key
	for _, r := range routers.All() {
		out = append(out, r.Keys...)
	}
	return out
}

// NewRouter returns a fresh router (each keeps its own state: one per run).
func NewRouter(name string, p Params) (Router, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("router %q: %w", name, err)
	}
	for _, r := range routers.All() {
		if r.Name == name {
			return r.New(p), nil
		}
	}
	return nil, fmt.Errorf("router: unknown %q (known: %s)", name, strings.Join(RouterNames(), ", "))
}
