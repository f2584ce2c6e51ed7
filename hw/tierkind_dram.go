package hw

import (
	"kvsim/hw/hostmem"
)

// dram is a memfd pool (remote_dram: tierkind_remote.go).
func init() {
	registerTierKind("dram", tierKind{hostMemory: always, open: func(ss *Stores, t TierSpec, o TierOptions) (hostmem.Store, string, error) {
		return dramStore(t, o, ss.pool)
	}})
}
