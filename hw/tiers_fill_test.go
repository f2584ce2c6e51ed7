//go:build linux

package hw

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"kvsim/hw/payload"
	"kvsim/hw/remote/remotetest"
	"kvsim/hw/store"
)

// TestTiersHoldTheirCapacity: every store kind, given a tier of capacity
// C, holds what the replay's core may put there without refusing a write
// or dropping a copy on its own: C in full blocks, and, where the store
// bounds the blocks (fixed slots: the core is told Slots()), that many
// short ones. Where it does not, C's worth of short blocks (each of which
// a store of slots would give a whole slot). Block sizes are a 4 KiB
// multiple and not (slots rounded up to the O_DIRECT alignment). The
// device store gave a slot per 10000-byte block a 12288-byte slot of C:
// 6 slots for 8 full blocks. The RDMA store's own test is in rdmastore
// (TestStoreHoldsCapacity): it needs the fake verbs library.
func TestTiersHoldTheirCapacity(t *testing.T) {
	const full = 8 // full blocks of capacity
	for _, bb := range []int{4096, 10000} {
		c := int64(full * bb)
		kinds := []TierSpec{
			{Name: "dram", Kind: "dram"},
			{Name: "hbm", Kind: "hbm"},
			{Name: "pinned", Kind: "pinned"},
			{Name: "ssd", Kind: "ssd"},
			{Name: "nvmeof", Kind: "nvmeof"},
			{Name: "dev", Kind: "nvmeof", Device: "ns.img"},
			{Name: "remote", Kind: "remote_dram"},
			{Name: "redis", Kind: "remote_dram", Endpoint: "redis"}, // a server of its own
		}
		for _, k := range kinds {
			t.Run(fmt.Sprintf("%s/%d", k.Name, bb), func(t *testing.T) {
				dir := tierTestDir(t)
				k.Capacity = c
				if k.Endpoint == "redis" {
					k.Endpoint = remotetest.Start(t).Endpoint()
				}
				if k.Device != "" {
					k.Device = filepath.Join(dir, k.Device)
					// Room for what the tier needs, and no more.
					if err := os.WriteFile(k.Device, nil, 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Truncate(k.Device, 1<<20+full*int64((bb+4095)/4096*4096)); err != nil {
						t.Fatal(err)
					}
				}
				ss, err := OpenStores([]TierSpec{k}, TierOptions{Dir: dir, SlotBytes: bb, Engine: "auto", Hugepages: "off"})
				if err != nil {
					t.Fatal(err)
				}
				defer ss.Close()
				s := ss.List[0]
				sizes := make([]int, 0, full)
				for range full {
					sizes = append(sizes, bb)
				}
				short := 16 // the shortest block a replay moves
				if sl, ok := s.(interface{ Slots() int }); ok {
					if sl.Slots() < full {
						t.Fatalf("%d slots for a capacity of %d full blocks", sl.Slots(), full)
					}
					sizes = sizes[:0]
					for i := range sl.Slots() {
						sizes = append(sizes, max(short, bb*(i%2)))
					}
				} else {
					for range int(c) / short {
						sizes = append(sizes, short)
					}
				}
				fill(t, s, sizes[:full], 0)    // C in full blocks (or mixed, for slots)
				fill(t, s, sizes[full:], full) // and the rest beside them
			})
		}
	}
}

// fill puts blocks first.. of the given sizes into s, reads them back,
// and fails t on any refusal or drop.
func fill(t *testing.T, s store.Store, sizes []int, first int) {
	t.Helper()
	maxSize := 0
	for _, n := range sizes {
		maxSize = max(maxSize, n)
	}
	buf := make([]byte, maxSize)
	for i, n := range sizes {
		k := int32(first + i)
		payload.Fill(buf[:n], k)
		if err := s.Put(k, buf[:n]); err != nil {
			t.Fatalf("block %d of %d bytes (%d held): %v", k, n, first+i, err)
		}
	}
	if f, ok := s.(store.Flusher); ok {
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if d, ok := s.(store.Dropper); ok {
		if ev, failed := d.Dropped(); len(ev)+len(failed) > 0 {
			t.Fatalf("the store dropped %d blocks and lost %d", len(ev), len(failed))
		}
	}
	if d, ok := s.(store.LossReporter); ok {
		if ev := d.Lost(); len(ev) > 0 {
			t.Fatalf("the store lost %d blocks", len(ev))
		}
	}
	for i, n := range sizes {
		k := int32(first + i)
		got, err := s.Get(k, buf)
		if err != nil || got != n || !payload.Verify(buf[:n], k) {
			t.Fatalf("block %d: %d bytes of %d, %v", k, got, n, err)
		}
	}
}
