// Package tierkind is the registry of tier kinds: one file per kind
// declares its defaults, the calibrate store that stands for it, whether it
// keeps blocks on disk, and the keys only a tier of that kind takes. The
// scenario loader and reference, kvsim calibrate's profile and the replay
// read it; the real store of each kind is registered in hw (tierkind_*.go).
// A new kind is its spec here and its store there (experiment's
// TestTierKindsMatch pairs them); its row in the tier defaults tables of
// scenario/doc.go and the README is rendered from the spec (scenario's
// TestDocTables).
package tierkind

import (
	"slices"

	"kvsim/param"
)

// Spec describes a tier kind.
type Spec struct {
	Name  string
	Brief string
	// Rank is the kind's place in the hierarchy: lists (Names, the
	// reference's enum, calibrate's profile) follow it.
	Rank int
	// Added orders the kinds' keys in the reference: the order the kinds
	// were added, so that a new kind's keys come last.
	Added int
	// Defaults of a [[tier]] of this kind (background document, section 1).
	Capacity  int64   // bytes
	Bandwidth float64 // bytes/s
	Latency   int64   // ns
	CostPerGB float64 // dollars per 1e9 bytes
	// Calibrated is the kvsim calibrate store whose moves stand for this
	// kind's ("hbm", "pinned", "dram", "ssd" or "remote"): the same store
	// implementation in replay --real.
	Calibrated string
	// OnDisk: the tier keeps its blocks in replay's --dir across runs, so
	// they are keyed by what they depend on (the store identity).
	OnDisk bool
	// Keys are the [[tier]] keys only this kind takes; scenario.Tier has a
	// field tagged with each (the store reads it).
	Keys []param.Key
	// Article is "a" or "an", as said before the kind's name in messages.
	Article string
}

// Ident names the kind to its registry.
func (s Spec) Ident() (string, int) { return s.Name, s.Rank }

var kinds = param.Registry[Spec]{What: "tier kind"}

// Register adds a kind; called from init functions of this package.
func Register(s Spec) {
	for _, k := range kinds.All() {
		if k.Added == s.Added {
			panic("tierkind: " + s.Name + " is Added as " + k.Name)
		}
	}
	kinds.Add(s)
}

// Specs lists the kinds in hierarchy order.
func Specs() []Spec { return kinds.All() }

// Names lists the kinds in hierarchy order.
func Names() []string { return kinds.Names() }

// Lookup returns the spec of kind name.
func Lookup(name string) (Spec, bool) { return kinds.Lookup(name) }

// Keys lists every kind's own keys, kinds in the order they were added.
func Keys() []param.Key {
	byAdded := slices.SortedFunc(slices.Values(kinds.All()), func(a, b Spec) int { return a.Added - b.Added })
	var out []param.Key
	for _, k := range byAdded {
		out = append(out, k.Keys...)
	}
	return out
}

// Owner is the kind whose key name is, "" if none declares it.
func Owner(name string) string {
	for _, k := range kinds.All() {
		if param.Find(k.Keys, name) != nil {
			return k.Name
		}
	}
	return ""
}
