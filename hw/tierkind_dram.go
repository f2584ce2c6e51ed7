package hw

import (
	"fmt"

	"kvsim/hw/hostmem"
)

// dram is a memfd pool; remote_dram is emulated in local memory until
// there is an RDMA driver.
func init() {
	registerTierKind("dram", tierKind{calibrated: "dram", open: func(ss *Stores, t TierSpec, o TierOptions) (hostmem.Store, string, error) {
		return dramStore(t, o, ss.pool)
	}})
	registerTierKind("remote_dram", tierKind{calibrated: "pinned", open: func(ss *Stores, t TierSpec, o TierOptions) (hostmem.Store, string, error) {
		ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: remote DRAM is emulated in local memory (%s)", t.Name, rdmaState("")))
		return emulatedStore(t, o), "", nil
	}})
}
