package hw

import (
	"fmt"
)

// TierSpec is one tier of a replay, with its capacity already scaled to
// real bytes.
type TierSpec struct {
	Name     string
	Kind     string // hbm, pinned, dram, ssd, nvmeof, remote_dram
	Capacity int64
}

// TierOptions are the knobs of the real stores.
type TierOptions struct {
	Dir          string // where storage tiers keep their files
	SlotBytes    int    // largest block, in real bytes
	Hugepages    string // DRAM pools: off, try, require
	HugepageSize string // 2MB or 1GB
	Engine       string // auto, io_uring, pread
	QueueDepth   int
}

// OpenStores builds one store per tier. GPU tiers (hbm, pinned) are
// emulated in host memory until a GPU backend exists; remote DRAM is
// emulated without an RDMA device; DRAM is a memfd pool; SSD and NVMe-oF
// are bucket files in o.Dir. Notes say where a fallback happened.
func OpenStores(tiers []TierSpec, o TierOptions) (stores []Store, notes []string, err error) {
	defer func() {
		if err != nil {
			for _, s := range stores {
				s.Close()
			}
			stores = nil
		}
	}()
	for _, t := range tiers {
		var s Store
		var note string
		switch t.Kind {
		case "hbm", "pinned", "remote_dram":
			s = emulatedStore(t, o)
		case "dram":
			s, note, err = dramStore(t, o)
		case "ssd", "nvmeof":
			s, note, err = diskStore(t, o)
		default:
			err = fmt.Errorf("tier %q: unknown kind %q", t.Name, t.Kind)
		}
		if err != nil {
			return stores, notes, fmt.Errorf("tier %q: %w", t.Name, err)
		}
		stores = append(stores, s)
		if note != "" {
			notes = append(notes, fmt.Sprintf("tier %q: %s", t.Name, note))
		}
	}
	return stores, notes, nil
}

// slotsPerChunk sizes memory chunks at about 64 MiB.
func slotsPerChunk(slot int) int { return max(1, (64<<20)/max(slot, 1)) }

func emulatedStore(t TierSpec, o TierOptions) Store {
	label := "emulated"
	if t.Kind == "remote_dram" {
		label = "emulated (no RDMA)"
	}
	return NewMemStore(label, o.SlotBytes, slotsPerChunk(o.SlotBytes), func(n int) (Chunk, error) {
		a, err := NewArena(n)
		if err != nil {
			return Chunk{}, err
		}
		return Chunk{Mem: a.Bytes(), Closer: a}, nil
	})
}
