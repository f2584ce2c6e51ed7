package hw

import (
	"kvsim/hw/store"
)

// dram is a memfd pool (remote_dram: tierkind_remote.go).
func init() {
	registerTierKind("dram", tierKind{hostMemory: always, open: func(ss *Stores, t TierSpec, o TierOptions) (store.Store, string, error) {
		return dramStore(t, o, ss.pool)
	}})
}
