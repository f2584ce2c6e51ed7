package hw

import (
	"fmt"

	"kvsim/hw/hostmem"
	"kvsim/hw/remote"
)

// remote_dram is a Redis or Valkey server when the tier names an endpoint
// (hw/remote), else emulated in local memory (there is no RDMA driver).
// kvsim calibrate --remote measures the server's moves as "remote"; without
// it the profile gives the emulated tier's figures.
func init() {
	registerTierKind("remote_dram", tierKind{calibrated: "remote", open: func(ss *Stores, t TierSpec, o TierOptions) (hostmem.Store, string, error) {
		if t.Endpoint == "" {
			ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: remote DRAM is emulated in local memory (%s; give the tier an endpoint = \"redis://HOST:PORT\" to use a real store)", t.Name, rdmaState("")))
			return emulatedStore(t, o), "", nil
		}
		s, err := remote.Open(remote.Options{Endpoint: t.Endpoint, Tier: t.Name, Conns: t.Lanes})
		if err != nil {
			return nil, "", err
		}
		ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: blocks are keys kvsim:{%s:%s:BLOCK}:kv_bytes and :metadata in %s, deleted at the end", t.Name, s.Run(), t.Name, s.Backend()))
		return s, "", nil
	}})
}
