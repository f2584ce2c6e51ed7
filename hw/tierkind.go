package hw

import (
	"slices"

	"kvsim/hw/store"
)

// A tier kind's store is registered by the one file that implements it
// (tierkind_*.go): adding a kind to the real body is adding such a file
// beside the kind's spec (kvsim/tierkind, which says what it is).
type tierKind struct {
	gpu bool // uses the accelerator device when there is one
	// hostMemory says whether the tier keeps its blocks in this
	// machine's memory (gpu: a GPU runtime was found), for the check that
	// the tiers fit it before any is made.
	hostMemory func(t TierSpec, gpu bool) bool
	// open makes the tier's store; it may add notes and StoreOpens to ss
	// before it returns, and returns a note of its own ("" for none).
	open func(ss *Stores, t TierSpec, o TierOptions) (store.Store, string, error)
}

var tierKinds = map[string]tierKind{}

func registerTierKind(name string, k tierKind) {
	if _, dup := tierKinds[name]; dup {
		panic("hw: tier kind " + name + " registered twice")
	}
	tierKinds[name] = k
}

// TierKinds lists the tier kinds OpenStores knows, sorted.
func TierKinds() []string {
	var names []string
	for n := range tierKinds {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
