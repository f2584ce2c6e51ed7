package hw

import (
	"fmt"
	"strings"

	"kvsim/hw/hostmem"
	"kvsim/hw/rdmastore"
	"kvsim/hw/remote"
	"kvsim/hw/store"
)

// remote_dram is a Redis or Valkey server when the tier names a redis://
// or valkey:// endpoint (hw/remote), the DRAM a kvsim serve exposes over
// RDMA for rdma:// (hw/rdmastore; emulated, with a note saying why, where
// this machine has no verbs path), else emulated in local memory.
// kvsim calibrate --remote measures the server's moves as "remote"; without
// it the profile gives the emulated tier's figures.
func init() {
	registerTierKind("remote_dram", tierKind{hostMemory: func(t TierSpec, _ bool) bool { return t.Endpoint == "" }, open: func(ss *Stores, t TierSpec, o TierOptions) (store.Store, string, error) {
		if t.Endpoint == "" {
			ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: remote DRAM is emulated in local memory (%s; give the tier an endpoint = \"redis://HOST:PORT\", or \"rdma://HOST:PORT\" of a kvsim serve --rdma, to use a real store)", t.Name, rdmaState("")))
			return emulatedStore("emulated (no RDMA)", o), "", nil
		}
		if strings.HasPrefix(t.Endpoint, "rdma:") {
			return rdmaTier(ss, t, o)
		}
		s, err := remote.Open(remote.Options{Endpoint: t.Endpoint, Tier: t.Name, Conns: t.Lanes, Capacity: t.Capacity})
		if err != nil {
			return nil, "", err
		}
		if n := s.Note(); n != "" {
			ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: %s", t.Name, n))
		}
		// Whether they were deleted is said at Close: the server may stall.
		ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: blocks are keys kvsim:{%s:%s:BLOCK}:kv_bytes and :metadata in %s", t.Name, s.Run(), t.Name, s.Backend()))
		return s, "", nil
	}})
}

// rdmaTier opens the tier in a kvsim serve's memory; where this machine
// has no verbs path (no library, no device, no active port) it falls back
// to local memory, and the note and backend say why.
func rdmaTier(ss *Stores, t TierSpec, o TierOptions) (store.Store, string, error) {
	s, err := rdmastore.Open(rdmastore.Options{Endpoint: t.Endpoint, Tier: t.Name, Lanes: t.Lanes, SlotBytes: o.SlotBytes, Capacity: t.Capacity})
	if rdmastore.Unavailable(err) {
		why := strings.TrimPrefix(err.Error(), "rdma: ")
		ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: %s is not used: no RDMA verbs path here (%s): remote DRAM is emulated in local memory", t.Name, t.Endpoint, why))
		return hostmem.NewMemStore("emulated (no RDMA verbs path: "+why+")", o.SlotBytes, slotsPerChunk(o.SlotBytes), emulatedChunk), "", nil
	}
	if err != nil {
		return nil, "", err
	}
	ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: %s", t.Name, s.Describe()))
	return s, "", nil
}
