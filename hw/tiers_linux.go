//go:build linux

package hw

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"kvsim/hw/blockdev"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"kvsim/hw/accel"
	"kvsim/hw/bucket"
	"kvsim/hw/hostmem"
	"kvsim/hw/ioengine"
	"kvsim/hw/store"
)

// dramStore keeps DRAM blocks in memfd pools (hugepages per o.Hugepages),
// the way Mooncake's store holds its DRAM segment.
// With a GPU, each pool is registered as pinned memory (cudaHostRegister)
// so copies to and from HBM need no staging buffer.
func dramStore(t TierSpec, o TierOptions, pinned *accel.PinnedBufferPool) (store.Store, string, error) {
	per := slotsPerChunk(o.SlotBytes)
	// Probe once so a hugepage shortage fails (require) or is reported (try)
	// before the replay starts, not at the first demotion.
	probe, err := hostmem.NewPool(hostmem.PoolOptions{Size: int64(o.SlotBytes * per), Hugepages: o.Hugepages, HugepageSize: o.HugepageSize, Name: "kvsim-" + t.Name})
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
	s := hostmem.NewMemStore(backend, o.SlotBytes, per, func(n int) (hostmem.Chunk, error) {
		if first {
			first = false
			return hostmem.Chunk{Mem: probe.Bytes(), Closer: probe}, nil
		}
		p, err := hostmem.NewPool(hostmem.PoolOptions{Size: int64(n), Hugepages: o.Hugepages, HugepageSize: o.HugepageSize, Name: "kvsim-" + t.Name})
		if err != nil {
			return hostmem.Chunk{}, err
		}
		clear(p.Bytes())
		if pinned != nil {
			if err := pinned.RegisterHost(p.Bytes()); err != nil {
				p.Close()
				return hostmem.Chunk{}, err
			}
		}
		return hostmem.Chunk{Mem: p.Bytes()[:n], Closer: p}, nil
	})
	if note != "" && probe.Fallback() != "" {
		note = "hugepages: " + note
	}
	return s, note, nil
}

// bucketTier adapts a bucket.Store to store.Store. It holds the store folder's
// marker, locked, until Close.
type bucketTier struct {
	s       *bucket.Store
	backend string
	lock    *os.File
	eng     ioengine.Engine // made here (the fault seam): closed after the store
	lost    int64           // the store's LostBlocks already reported
	evicted int64           // and its EvictedBlocks
	closed  bool
}

var (
	_ store.Store      = (*bucketTier)(nil)
	_ store.Flusher    = (*bucketTier)(nil)
	_ store.Recoverer  = (*bucketTier)(nil)
	_ store.Dropper    = (*bucketTier)(nil)
	_ store.Concurrent = (*bucketTier)(nil)
)

func (b *bucketTier) Backend() string { return b.backend }
func (b *bucketTier) Put(k int32, data []byte) error {
	if k < 0 { // a key Blocks could not list
		return fmt.Errorf("bucket store: block %d: negative id", k)
	}
	return b.s.Put(uint64(k), data)
}
func (b *bucketTier) Get(k int32, dst []byte) (int, error) { return b.s.Get(uint64(k), dst) }
func (b *bucketTier) Delete(k int32)                       { b.s.Delete(uint64(k)) }
func (b *bucketTier) Has(k int32) bool                     { return b.s.Has(uint64(k)) }
func (b *bucketTier) Flush() error                         { return b.s.Flush() }

// ConcurrentSafe implements store.Concurrent: the bucket store has one mutex.
func (b *bucketTier) ConcurrentSafe() {}

// Close closes the store, then releases its lock.
func (b *bucketTier) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	err := b.s.Close()
	if b.eng != nil {
		b.eng.Close()
	}
	if b.lock != nil {
		b.lock.Close()
	}
	return err
}

// Blocks lists the blocks the store holds (recovered ones included) with
// their sizes, in key order. Keys that cannot be a block are deleted.
func (b *bucketTier) Blocks() (keys []int32, sizes []int) {
	all := b.s.Keys()
	slices.Sort(all)
	for _, k := range all {
		n, ok := b.s.Size(k)
		if !ok {
			continue
		}
		if k > math.MaxInt32 {
			b.s.Delete(k)
			continue
		}
		keys, sizes = append(keys, int32(k)), append(sizes, n)
	}
	return keys, sizes
}

// Dropped reports the blocks the store dropped on its own since the last
// call: evicted by its capacity watermark, or failed with a bucket whose
// write failed (ENOSPC, EIO). When one call saw both, all count as failed:
// a loss may be over-reported, never hidden.
func (b *bucketTier) Dropped() (evicted, failed []int32) {
	keys := b.s.Evicted()
	if len(keys) == 0 {
		return nil, nil
	}
	st := b.s.Stats()
	nl, ne := st.LostBlocks-b.lost, st.EvictedBlocks-b.evicted
	b.lost, b.evicted = st.LostBlocks, st.EvictedBlocks
	out := make([]int32, len(keys))
	for i, k := range keys {
		out[i] = int32(k)
	}
	if nl == 0 && ne > 0 {
		return out, nil
	}
	return nil, out
}

type storeMarker struct {
	Version  int          `json:"kvsim_store"`
	Identity []StoreField `json:"identity"`
}

// claimStoreDir makes dir a kvsim store folder or finds that it is one, and
// locks it (a second process fails at once). A folder that exists without
// the marker is refused unless empty. have is the marker's record: nil for
// a new store; damaged says the marker could not be read back.
func claimStoreDir(dir string) (lock *os.File, have *storeMarker, damaged bool, err error) {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := bucket.MkdirAll(dir); err != nil {
			return nil, nil, false, err
		}
	case err != nil:
		return nil, nil, false, err
	case !fi.IsDir():
		return nil, nil, false, fmt.Errorf("%s exists and is not a folder; kvsim keeps a storage tier there and will not replace it: remove it or give another --dir", dir)
	}
	mpath := filepath.Join(dir, StoreMarker)
	f, err := os.OpenFile(mpath, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	made := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(mpath, os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, nil, false, err
	}
	only := func() (bool, error) {
		des, err := os.ReadDir(dir)
		if err != nil {
			return false, err
		}
		return len(des) == 1 && des[0].Name() == StoreMarker, nil
	}
	if made {
		if ok, err := only(); err != nil || !ok {
			f.Close()
			os.Remove(mpath) // ours, made just now
			if err != nil {
				return nil, nil, false, err
			}
			return nil, nil, false, fmt.Errorf("%s exists, is not empty and was not made by kvsim (it has no %s file); kvsim will not use or empty it: give another --dir or remove the folder yourself", dir, StoreMarker)
		}
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, false, fmt.Errorf("store %s is in use by another process (another replay on the same --dir?); wait for it to finish or give another --dir", dir)
		}
		return nil, nil, false, &os.PathError{Op: "flock", Path: mpath, Err: err}
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, nil, false, err
	}
	var m storeMarker
	if len(raw) == 0 {
		ok, err := only()
		if err != nil {
			f.Close()
			return nil, nil, false, err
		}
		return f, nil, !ok, nil
	}
	if json.Unmarshal(raw, &m) != nil || m.Version != 1 {
		return f, nil, true, nil
	}
	return f, &m, false, nil
}

// writeMarker records id in the locked marker, durably.
func writeMarker(f *os.File, id []StoreField) error {
	b, err := json.Marshal(storeMarker{Version: 1, Identity: id})
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		return err
	}
	return f.Sync()
}

// identityMismatch says how have differs from want, or "" when it does not.
func identityMismatch(have, want []StoreField) string {
	get := func(fs []StoreField, k string) string {
		for _, f := range fs {
			if f.Key == k {
				return f.Value
			}
		}
		return "(none)"
	}
	for _, f := range want {
		if h := get(have, f.Key); h != f.Value {
			return fmt.Sprintf("%s %s (this replay: %s)", f.Key, h, f.Value)
		}
	}
	for _, f := range have {
		if get(want, f.Key) == "(none)" {
			return fmt.Sprintf("%s %s (this replay: none)", f.Key, f.Value)
		}
	}
	return ""
}

// diskStore opens the bucket store of tier t in o.Dir/tier-<name>: new,
// reopened, or emptied (o.Fresh). See OpenStores for what is refused.
func diskStore(t TierSpec, o TierOptions) (_ store.Store, _ string, op StoreOpen, err error) {
	dir := filepath.Join(o.Dir, "tier-"+t.Name)
	op = StoreOpen{Tier: t.Name, Dir: dir}
	lock, have, damaged, err := claimStoreDir(dir)
	if err != nil {
		return nil, "", op, err
	}
	var eng ioengine.Engine
	defer func() {
		if err != nil {
			if eng != nil {
				eng.Close()
			}
			lock.Close()
		}
	}()
	if fst, err := ioengine.FSType(dir); err == nil && fst == "tmpfs" {
		return nil, "", op, fmt.Errorf("store directory %s is on tmpfs, which has no O_DIRECT; put --dir on a disk filesystem (ext4, xfs)", dir)
	}
	// Without an identity the blocks mean nothing beyond this run (kvsim
	// calibrate's scratch): such a store is always emptied, and so is one
	// left by such a run.
	scratch := len(o.Identity) == 0 || (have != nil && len(have.Identity) == 0)
	if !o.Fresh && !scratch {
		if damaged {
			return nil, "", op, fmt.Errorf("store %s: its %s file cannot be read back, so what its blocks mean is unknown; replay with --fresh to empty the store", dir, StoreMarker)
		}
		if have != nil {
			if d := identityMismatch(have.Identity, o.Identity); d != "" {
				return nil, "", op, fmt.Errorf("store %s holds blocks written with %s; replay with that, or with --fresh to empty the store, or give another --dir", dir, d)
			}
		}
	}
	so := bucket.DefaultStoreOptions(dir)
	so.EngineMode = o.Engine
	if o.QueueDepth > 0 {
		so.QueueDepth = o.QueueDepth
	}
	if o.Faults != nil {
		eng = bucket.NewFaultEngine(ioengine.NewPreadEngine(), *o.Faults)
		so.Engine = eng
	}
	// Dead blocks hold their space until their whole bucket dies: leave
	// room so the store's own eviction rarely has to act.
	if t.Capacity > 0 {
		so.Capacity = 2*t.Capacity + 4*so.BucketBytes
	}
	s, rep, err := bucket.Open(so)
	if err != nil {
		return nil, "", op, err
	}
	op.Buckets, op.Blocks, op.Discarded = rep.Buckets, rep.Blocks, rep.DiscardedBuckets
	switch {
	case have == nil && !damaged:
		op.State = "new"
	case o.Fresh || scratch:
		op.State = "emptied"
	default:
		op.State = "reopened"
	}
	if op.State != "reopened" {
		for _, k := range s.Keys() {
			s.Delete(k)
		}
		if err := s.Flush(); err != nil {
			s.Close()
			return nil, "", op, fmt.Errorf("emptying store %s: %w", dir, err)
		}
	}
	if have == nil || identityMismatch(have.Identity, o.Identity) != "" {
		// After emptying: a crash between leaves an empty store under the
		// old record, never old blocks under a new one.
		if err := writeMarker(lock, o.Identity); err != nil {
			s.Close()
			return nil, "", op, fmt.Errorf("store %s: writing %s: %w", dir, StoreMarker, err)
		}
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
	return &bucketTier{s: s, backend: backend, lock: lock, eng: eng}, strings.Join(notes, "; "), op, nil
}

// deviceStore keeps an nvmeof tier in slots of its device (blockdev),
// labelled by what the device really is.
func deviceStore(t TierSpec, o TierOptions) (store.Store, string, error) {
	s, err := blockdev.Open(blockdev.Options{Path: t.Device, SlotBytes: o.SlotBytes, Capacity: t.Capacity,
		Engine: o.Engine, QueueDepth: o.QueueDepth})
	if err != nil {
		return nil, "", fmt.Errorf("device %w", err)
	}
	desc, _ := DescribeNamespace("", t.Device, s.Kind == "block device")
	note := fmt.Sprintf("%s, %d slots of %d bytes (the tier holds at most that many blocks), %s", desc, s.Slots(), s.SlotBytes(), s.Backend())
	if s.Claimed {
		note += "; claimed now (it was blank)"
	}
	return s, note, nil
}

// MemInfo is a /proc/meminfo figure in bytes ("MemTotal",
// "MemAvailable"), or 0 where it cannot be read.
func MemInfo(key string) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb >= 0 && kb < 1<<53 {
					return kb << 10
				}
			}
		}
	}
	return 0
}
