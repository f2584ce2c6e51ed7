package policy

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	"kvsim/param"
)

// Block is a dense block index.
type Block = int32

// None is the "no block" sentinel used by intrusive links.
const None Block = -1

// Pinned tells a policy which resident blocks are in use and must not be
// evicted. The hierarchy core implements it; block-mode simulations pass
// NoPins.
type Pinned interface {
	Pinned(b Block) bool
}

type noPins struct{}

func (noPins) Pinned(Block) bool { return false }

// NoPins is a Pinned that pins nothing.
var NoPins Pinned = noPins{}

// Policy is the eviction contract. The caller owns residency and capacity;
// the policy only orders blocks.
//
//   - Insert: b became resident (size in bytes, or 1 for unit-size blocks).
//     b is never resident already.
//   - Access: b was referenced while resident.
//   - Evict: choose an unpinned resident block, forget it, and return it;
//     ok is false when every resident block is pinned (or none is resident).
//   - Remove: b left for another reason (the caller dropped it).
//
// None of them may allocate in steady state.
type Policy interface {
	Insert(b Block, size int64, now int64)
	Access(b Block, now int64)
	Evict(now int64, pinned Pinned) (b Block, ok bool)
	Remove(b Block)
	Len() int
}

// Holder is implemented by recency-based policies that, like vLLM's
// free-block queue and SGLang's radix cache, take a block out of the
// running while a request uses it and age it from its release. The core
// calls Acquire when a resident block becomes in use (or is inserted in
// use) and Release when the last request using it finishes, for a
// request's blocks in prefix order with one now. A held block stays
// resident (Len counts it, Remove may be called on it) but Evict never
// considers it, so evictions need not walk past blocks in use. Frequency
// policies do not implement it: a release is not an access.
type Holder interface {
	Acquire(b Block)
	Release(b Block, now int64)
}

// Expecter is implemented by policies whose victim depends on the block
// about to come in: ARC adapts its target on a ghost hit before REPLACE
// chooses. A caller that evicts to make room for one block b may call
// Expect(b) before those evictions and must then Insert b. Callers that
// do not (the core, which makes room for a batch) get a victim chosen as
// if b were new.
type Expecter interface {
	Expect(b Block)
}

// Batcher is implemented by policies that, like Mooncake Store, evict a
// batch of blocks at once and also evict ahead of need, when use passes a
// watermark. The caller keeps calling Evict while Pending is true, so a
// chosen batch leaves the tier at once (a member is never left resident to
// be hit); after it inserts a block it asks Overfull with the tier's use and
// capacity, in bytes, and if true evicts one batch (Evict, then Evict while
// Pending). Callers that ignore Batcher get the batch one block per Evict.
type Batcher interface {
	Overfull(used, capacity int64) bool
	Pending() bool
}

// Sequencer is implemented by offline policies whose clock is the order of
// requests rather than time: the caller calls SetSeq with the position of
// the request it serves (its index in the trace) before it inserts,
// accesses or evicts on that request's behalf, and the policy asks Future
// for references after that position. Callers that never call it (one
// reference per position, as mrc feeds them) key the future by now.
type Sequencer interface {
	SetSeq(seq int64)
}

// Params are the numeric knobs of one policy (keys of its [[policy]] entry).
type Params map[string]float64

// Config is what a factory gets: the capacity of the tier the policy
// orders (bytes, or blocks in unit-size mode) and its parameters.
type Config struct {
	Capacity int64
	Params   Params
	// Future is the oracle of offline policies (Belady); nil elsewhere.
	Future Future
}

// Future answers "when is b referenced next after at" for offline
// policies; math.MaxInt64 means never. The caller that feeds accesses
// builds it from the trace on its own clock: the position of the request
// it serves when it calls SetSeq (see Sequencer), else the now it passes.
type Future interface {
	NextUse(b Block, at int64) int64
}

// Get returns p[key] or def: for a parameter declared without a default.
func (p Params) Get(key string, def float64) float64 {
	if v, ok := p[key]; ok {
		return v
	}
	return def
}

// Factory builds a policy.
type Factory func(c Config) (Policy, error)

// Spec describes a registered policy.
type Spec struct {
	Name   string
	Brief  string
	Params []param.Key // accepted parameters: numbers; New fills in their defaults
	New    Factory
	// Offline policies need the trace's future (Config.Future): callers
	// read the whole trace first for them.
	Offline bool
}

var registry = map[string]Spec{}

// Register adds a policy; called from init functions of this package.
func Register(s Spec) {
	if _, dup := registry[s.Name]; dup {
		panic("policy: duplicate " + s.Name)
	}
	registry[s.Name] = s
}

// Names lists registered policies, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the spec of a policy.
func Lookup(name string) (Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// Offline reports whether the named policy is registered as offline.
func Offline(name string) bool { return registry[name].Offline }

// New builds the named policy after checking its parameters.
func New(name string, c Config) (Policy, error) {
	s, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown eviction policy %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	for k, v := range c.Params {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("policy %q: parameter %s must be a finite number, got %g", name, k, v)
		}
		if param.Find(s.Params, k) == nil {
			if len(s.Params) == 0 {
				return nil, fmt.Errorf("policy %q takes no parameter %q", name, k)
			}
			return nil, fmt.Errorf("policy %q has no parameter %q (known: %s)", name, k, strings.Join(param.Names(s.Params), ", "))
		}
	}
	c.Params = withDefaults(s.Params, c.Params)
	return s.New(c)
}

// withDefaults is p with each declared default where p has no value; p
// itself is left alone (callers share it).
func withDefaults(keys []param.Key, p Params) Params {
	out := Params{}
	for _, k := range keys {
		if d, ok := k.Default.(float64); ok {
			out[k.Name] = d
		}
	}
	maps.Copy(out, p)
	return out
}
