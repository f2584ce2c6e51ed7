//go:build linux

package hw

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// dramStore keeps DRAM blocks in memfd pools (hugepages per o.Hugepages),
// the way Mooncake's store holds its DRAM segment.
// With a GPU, each pool is registered as pinned memory (cudaHostRegister)
// so copies to and from HBM need no staging buffer.
func dramStore(t TierSpec, o TierOptions, pinned *PinnedBufferPool) (Store, string, error) {
	per := slotsPerChunk(o.SlotBytes)
	// Probe once so a hugepage shortage fails (require) or is reported (try)
	// before the replay starts, not at the first demotion.
	probe, err := NewPool(PoolOptions{Size: int64(o.SlotBytes * per), Hugepages: o.Hugepages, HugepageSize: o.HugepageSize, Name: "kvsim-" + t.Name})
	if err != nil {
		return nil, "", err
	}
	// MAP_POPULATE maps a shared memfd's pages for reading only; touch
	// them once so a replay does not time first-write faults.
	clear(probe.Bytes())
	backend, note := probe.Backend(), probe.Fallback()
	if pinned != nil {
		if err := pinned.RegisterHost(probe.Bytes()); err != nil {
			note = strings.TrimPrefix(note+"; not registered with the GPU: "+err.Error(), "; ")
			pinned = nil
		} else {
			backend += "+registered"
		}
	}
	first := true
	s := NewMemStore(backend, o.SlotBytes, per, func(n int) (Chunk, error) {
		if first {
			first = false
			return Chunk{Mem: probe.Bytes(), Closer: probe}, nil
		}
		p, err := NewPool(PoolOptions{Size: int64(n), Hugepages: o.Hugepages, HugepageSize: o.HugepageSize, Name: "kvsim-" + t.Name})
		if err != nil {
			return Chunk{}, err
		}
		clear(p.Bytes())
		if pinned != nil {
			if err := pinned.RegisterHost(p.Bytes()); err != nil {
				p.Close()
				return Chunk{}, err
			}
		}
		return Chunk{Mem: p.Bytes()[:n], Closer: p}, nil
	})
	if note != "" && probe.Fallback() != "" {
		note = "hugepages: " + note
	}
	return s, note, nil
}

// bucketTier adapts a BucketStore to Store.
type bucketTier struct {
	s       *BucketStore
	backend string
}

func (b *bucketTier) Backend() string                      { return b.backend }
func (b *bucketTier) Put(k int32, data []byte) error       { return b.s.Put(uint64(k), data) }
func (b *bucketTier) Get(k int32, dst []byte) (int, error) { return b.s.Get(uint64(k), dst) }
func (b *bucketTier) Delete(k int32)                       { b.s.Delete(uint64(k)) }
func (b *bucketTier) Has(k int32) bool                     { return b.s.Has(uint64(k)) }
func (b *bucketTier) Flush() error                         { return b.s.Flush() }
func (b *bucketTier) Close() error                         { return b.s.Close() }

// Evicted reports blocks the store dropped on its own (watermark eviction,
// a failed bucket write).
func (b *bucketTier) Evicted() []int32 {
	keys := b.s.Evicted()
	out := make([]int32, len(keys))
	for i, k := range keys {
		out[i] = int32(k)
	}
	return out
}

// diskStore opens a bucket store in a fresh directory under o.Dir.
func diskStore(t TierSpec, o TierOptions) (Store, string, error) {
	dir := filepath.Join(o.Dir, "tier-"+t.Name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	if fs, err := FSType(dir); err == nil && fs == "tmpfs" {
		return nil, "", fmt.Errorf("store directory %s is on tmpfs, which has no O_DIRECT; put --dir on a disk filesystem (ext4, xfs)", dir)
	}
	so := DefaultStoreOptions(dir)
	so.EngineMode = o.Engine
	if o.QueueDepth > 0 {
		so.QueueDepth = o.QueueDepth
	}
	// Dead blocks hold their space until their whole bucket dies: leave
	// room so the store's own eviction rarely has to act.
	if t.Capacity > 0 {
		so.Capacity = 2*t.Capacity + 4*so.BucketBytes
	}
	s, rep, err := OpenBucketStore(so)
	if err != nil {
		return nil, "", err
	}
	backend := rep.Engine
	if rep.Direct {
		backend += "+O_DIRECT"
	} else {
		backend += " (buffered: " + rep.DirectNote + ")"
	}
	var notes []string
	if rep.EngineNote != "" {
		notes = append(notes, "io_uring unavailable: "+rep.EngineNote)
	}
	return &bucketTier{s: s, backend: backend}, strings.Join(notes, "; "), nil
}
