//go:build linux

package hw

import (
	"os"
	"path/filepath"
	"testing"

	"kvsim/hw/bucket"
	"kvsim/hw/ioengine"
	"kvsim/hw/store"
	"kvsim/hw/store/storetest"
)

// The store suite over the stores OpenStores makes here (the memory
// store alone, the GPU stores, the block device, Redis and RDMA run it in
// their own packages).

const conformSlot = 20000 // not a multiple of 4096: O_DIRECT pads it

func openTier(t *testing.T, spec TierSpec, o TierOptions) store.Store {
	t.Helper()
	o.SlotBytes = conformSlot
	ss, err := OpenStores([]TierSpec{spec}, o)
	if err != nil {
		t.Fatal(err)
	}
	return ss.List[0]
}

// TestDRAMConformance: a dram tier, a MemStore on memfd pools.
func TestDRAMConformance(t *testing.T) {
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		return openTier(t, TierSpec{Name: "dram", Kind: "dram", Capacity: 64 * conformSlot}, TierOptions{Hugepages: "off"})
	}, storetest.MaxBytes(conformSlot))
}

// TestEmulatedConformance: an hbm tier without a GPU, emulated in host memory.
func TestEmulatedConformance(t *testing.T) {
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		return openTier(t, TierSpec{Name: "hbm", Kind: "hbm", Capacity: 64 * conformSlot}, TierOptions{Device: "emulated"})
	}, storetest.MaxBytes(conformSlot))
}

// failBucket makes every later write of a bucket tier fail, the first
// one torn (4 KiB of it reach the file).
func failBucket(t *testing.T, s store.Store) {
	s.(*bucketTier).eng.(*bucket.FaultEngine).SetPlan(bucket.FaultPlan{FailWrite: 1, Torn: 4096, Sticky: true})
}

// TestSSDConformance: an ssd tier as a replay opens it (a bucket store in
// its marked folder), reopened as a replay reopens it.
func TestSSDConformance(t *testing.T) {
	dirs := map[store.Store]string{}
	open := func(t *testing.T, dir string) store.Store {
		s := openTier(t, TierSpec{Name: "ssd", Kind: "ssd", Capacity: 64 * conformSlot},
			TierOptions{Dir: dir, Engine: "pread", Identity: testIdentity, Faults: &bucket.FaultPlan{}})
		dirs[s] = dir
		return s
	}
	storetest.RunConformance(t, func(t *testing.T) store.Store { return open(t, tierTestDir(t)) },
		storetest.MaxBytes(conformSlot), storetest.FailWrites(failBucket),
		storetest.Reopen(func(t *testing.T, s store.Store) store.Store {
			s.Close() // may fail after a fault: the reopen is what is checked
			return open(t, dirs[s])
		}))
}

// TestSmallBucketConformance: a bucket tier of small buckets and a
// capacity the suite exceeds, so that it evicts on its own.
func TestSmallBucketConformance(t *testing.T) {
	dirs := map[store.Store]string{}
	open := func(t *testing.T, dir string) store.Store {
		o := bucket.DefaultStoreOptions(dir)
		o.BucketBytes, o.WriteBuffer, o.Capacity = 256<<10, 64<<10, 2<<20 // a write buffer of 3.2 blocks: a crash tears one
		eng := bucket.NewFaultEngine(ioengine.NewPreadEngine(), bucket.FaultPlan{})
		o.Engine = eng
		bs, _, err := bucket.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		s := &bucketTier{s: bs, backend: "small buckets", eng: eng}
		dirs[s] = dir
		return s
	}
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		dir := tierTestDir(t)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return open(t, dir)
	}, storetest.MaxBytes(conformSlot), storetest.FailWrites(failBucket), storetest.Evicts(200, nil),
		storetest.Reopen(func(t *testing.T, s store.Store) store.Store {
			s.Close()
			return open(t, dirs[s])
		}),
		storetest.Crash(func(t *testing.T, s store.Store) store.Store {
			// The files as they are, the open bucket's data file part
			// written and without its metadata: a crash image.
			img := tierTestDir(t)
			des, err := os.ReadDir(dirs[s])
			if err != nil {
				t.Fatal(err)
			}
			for _, de := range des {
				if de.Type().IsRegular() {
					b, err := os.ReadFile(filepath.Join(dirs[s], de.Name()))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(img, de.Name()), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			return open(t, img)
		}))
}
