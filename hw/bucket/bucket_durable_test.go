//go:build linux

package bucket

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kvsim/hw/internal/hwtest"
	"kvsim/hw/ioengine"
)

// crashImage copies the store's files as they are now into a new
// directory: what a kill -9 at this moment would leave (the kernel has
// every write; only power loss could lose more).
func crashImage(t *testing.T, dir string) string {
	t.Helper()
	img := bucketTestDir(t)
	var walk func(from, to string)
	walk = func(from, to string) {
		des, err := os.ReadDir(from)
		must(t, err)
		for _, de := range des {
			src, dst := filepath.Join(from, de.Name()), filepath.Join(to, de.Name())
			if de.IsDir() {
				must(t, os.MkdirAll(dst, 0o755))
				walk(src, dst)
				continue
			}
			b, err := os.ReadFile(src)
			must(t, err)
			must(t, os.WriteFile(dst, b, 0o644))
		}
	}
	walk(dir, img)
	return img
}

func tinyOpts(dir string) StoreOptions {
	o := smallOpts(dir)
	o.MaxKeys = 4
	return o
}

// TestBucketOverwriteKeepsDurableCopy: overwriting every key of a sealed
// bucket must not remove it while the new copies sit unsealed.
func TestBucketOverwriteKeepsDurableCopy(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	s, _ := openBucketTest(t, tinyOpts(dir))
	for k := uint64(0); k < 4; k++ {
		must(t, s.Put(k, bucketPayload(k, 5000)))
	}
	must(t, s.Flush())
	for k := uint64(0); k < 4; k++ {
		must(t, s.Put(k, bucketPayload(100+k, 3000)))
	}
	// Killed now: the old copies are the durable ones.
	img := crashImage(t, dir)
	c, rep := openBucketTest(t, tinyOpts(img))
	if rep.Blocks != 4 {
		t.Fatalf("after a crash with the overwrites unsealed: %+v", rep)
	}
	for k := uint64(0); k < 4; k++ {
		checkBlock(t, c, k, 5000)
	}
	c.Close()
	// Once they are sealed the old bucket goes, and the new copies win.
	must(t, s.Flush())
	if data, _ := bucketFiles(t, dir); len(data) != 1 {
		t.Fatalf("%d data files, want the new bucket only", len(data))
	}
	must(t, s.Close())
	s2, _ := openBucketTest(t, tinyOpts(dir))
	for k := uint64(0); k < 4; k++ {
		n, err := s2.Get(k, make([]byte, 5000))
		if err != nil || n != 3000 {
			t.Fatalf("key %d: %d bytes, %v", k, n, err)
		}
	}
}

// TestBucketNoStaleAfterUnlink: a key overwritten into a newer bucket,
// whose older copy is dead only in memory, then deleted so that the newer
// bucket empties: the older copy must not come back after a crash.
func TestBucketNoStaleAfterUnlink(t *testing.T) {
	for _, how := range []string{"delete", "evict"} {
		t.Run(how, func(t *testing.T) {
			bucketFDCheck(t)
			dir := bucketTestDir(t)
			o := tinyOpts(dir)
			o.Evict = "lru"
			s, _ := openBucketTest(t, o)
			for k := uint64(0); k < 4; k++ { // bucket A
				must(t, s.Put(k, bucketPayload(k, 5000)))
			}
			must(t, s.Flush())
			for k := uint64(10); k < 13; k++ { // bucket B: key 0 again, sealed when full
				must(t, s.Put(k, bucketPayload(k, 5000)))
			}
			must(t, s.Put(0, bucketPayload(1000, 6000)))
			must(t, s.Put(20, bucketPayload(20, 5000))) // seals B
			if s.Stats().Buckets != 2 {
				t.Fatalf("stats %+v", s.Stats())
			}
			if how == "delete" {
				for _, k := range []uint64{10, 11, 12, 0} {
					s.Delete(k)
				}
			} else {
				// Read A so that LRU takes B, the newer bucket.
				checkBlock(t, s, 1, 5000)
				s.mu.Lock()
				s.o.Capacity = s.st.DiskBytes - 1
				s.o.HighWater, s.o.LowWater = 0.99, 0.99
				s.maybeEvict()
				s.mu.Unlock()
				if ev := s.Evicted(); !slices.Contains(ev, 0) {
					t.Fatalf("evicted %v", ev)
				}
			}
			if s.Has(0) {
				t.Fatal("key 0 still served")
			}
			img := crashImage(t, dir)
			c, _ := openBucketTest(t, tinyOpts(img))
			if c.Has(0) {
				n, _ := c.Get(0, make([]byte, 6000))
				t.Fatalf("after a crash key 0 is back with %d bytes: a superseded copy", n)
			}
			checkBlock(t, c, 2, 5000)
		})
	}
}

// TestBucketFlushAfterFailedSeal: a seal that fails does not stop Flush
// from recording the deaths of other buckets.
func TestBucketFlushAfterFailedSeal(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	o := smallOpts(dir)
	fe := NewFaultEngine(ioengine.NewPreadEngine(), FaultPlan{})
	o.Engine = fe
	s, _ := openBucketTest(t, o)
	for k := uint64(0); k < 20; k++ {
		must(t, s.Put(k, bucketPayload(k, 3000)))
	}
	must(t, s.Flush())
	s.Delete(3)
	must(t, s.Put(100, bucketPayload(100, 3000)))
	fe.SetPlan(FaultPlan{FailSync: 1})
	if err := s.Flush(); !errors.Is(err, unix.EIO) {
		t.Fatalf("flush: %v", err)
	}
	img := crashImage(t, dir)
	c, _ := openBucketTest(t, StoreOptions{Dir: img, Direct: true, MaxKeys: o.MaxKeys, BucketBytes: o.BucketBytes})
	if c.Has(3) {
		t.Fatal("key 3, deleted before the failed Flush, is back after a crash")
	}
	checkBlock(t, c, 4, 3000)
}

// TestBucketReadArenaReleased: a read buffer replaced by a larger one is
// unmapped at once (only the first, which the engine may have registered,
// stays until Close).
func TestBucketReadArenaReleased(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	o := smallOpts(dir)
	o.BucketBytes = 16 << 20
	s, _ := openBucketTest(t, o)
	first := s.ra0
	released := 0
	for i := range 6 {
		k := uint64(i)
		size := (3 + 2*i) << 20
		must(t, s.Put(k, bucketPayload(k, size)))
		must(t, s.Flush())
		before := s.ra
		addr, n := bufAddr(before.Bytes()), len(before.Bytes())
		mapped := hwtest.Mapped(t, addr, n)
		checkBlock(t, s, k, size)
		if s.ra == before {
			t.Fatalf("read %d: no larger buffer", i)
		}
		if s.ra0 != first || first.Bytes() == nil {
			t.Fatal("the first read buffer was unmapped")
		}
		if before == first {
			continue
		}
		released++
		hwtest.Gone(t, addr, n, mapped)
	}
	if released == 0 {
		t.Fatal("no read buffer was replaced")
	}
}

// TestBucketParentSynced: a store directory made by the open is made
// durable: each new directory's parent is fsynced after the mkdir.
func TestBucketParentSynced(t *testing.T) {
	bucketFDCheck(t)
	root := bucketTestDir(t)
	dir := filepath.Join(root, "a", "b")
	fs := NewFaultFS()
	o := smallOpts(dir)
	o.FS = fs
	s, _ := openBucketTest(t, o)
	s.Close()
	calls := strings.Join(fs.Calls(), "\n")
	for _, want := range []string{
		"mkdir " + filepath.Join(root, "a") + "\nopen " + root + "\nsyncdir " + root,
		"mkdir " + dir + "\nopen " + filepath.Join(root, "a") + "\nsyncdir " + filepath.Join(root, "a"),
	} {
		if !strings.Contains(calls, want) {
			t.Errorf("calls do not contain %q:\n%s", want, calls)
		}
	}
}

// transientDataset builds a store with work for open to do: clean
// buckets, deaths, a bucket whose metadata lost one entry, one whose
// metadata is garbage (both files go to quarantine), a metadata file
// without its data, a data file never sealed, a leftover temp file.
func transientDataset(t *testing.T) (StoreOptions, map[uint64]int) {
	o, ids := tornSetup(t)
	s, _ := openBucketTest(t, o)
	s.Delete(3)
	s.Delete(104)
	must(t, s.Flush())
	must(t, s.Put(1000, bucketPayload(1000, 7000))) // an unsealed bucket, left behind below
	s.mu.Lock()
	must(t, s.flushBuf())
	s.mu.Unlock()
	img := crashImage(t, o.Dir)
	s.Close()
	o.Dir = img
	meta := func(id uint64) string { return filepath.Join(img, bucketFileName(id, bucketMetaExt)) }
	b, err := os.ReadFile(meta(ids[2]))
	must(t, err)
	b[bucketMetaHead+5*bucketMetaEnt+2] ^= 4 // entry 5: key 205
	must(t, os.WriteFile(meta(ids[2]), b, 0o644))
	b, err = os.ReadFile(meta(ids[1]))
	must(t, err)
	b[0] ^= 1 // no magic: bucket 1 (keys 100..115) is quarantined whole
	must(t, os.WriteFile(meta(ids[1]), b, 0o644))
	must(t, os.Remove(filepath.Join(img, bucketFileName(ids[4], bucketDataExt))))
	must(t, os.WriteFile(filepath.Join(img, bucketFileName(ids[5], bucketTmpExt)), []byte("x"), 0o644))
	want := map[uint64]int{}
	for bk := uint64(0); bk < 6; bk++ {
		for i := uint64(0); i < 16; i++ {
			if k := 100*bk + i; k != 3 && k != 205 && bk != 1 && bk != 4 {
				want[k] = bucketSize(k, 12000)
			}
		}
	}
	return o, want
}

func dirListing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

func checkKeys(t *testing.T, s *Store, want map[uint64]int) {
	t.Helper()
	if got := len(s.Keys()); got != len(want) {
		t.Errorf("%d keys served, want %d", got, len(want))
	}
	for k, size := range want {
		checkBlock(t, s, k, size)
	}
}

var fsOps = []string{FSOpen, FSStat, FSRead, FSReadDir, FSRename, FSLink, FSUnlink, FSMkdir, FSSyncDir, FSLock}

// TestBucketTransientOpen: a transient failure of any file-system call
// during open (each call in turn, with EIO, EMFILE or ENOMEM) either fails
// the open, leaving every file where it was, or completes it; and a
// clean open afterwards serves exactly what an open without the fault
// serves. Nothing is deleted on a hiccup.
func TestBucketTransientOpen(t *testing.T) {
	bucketFDCheck(t)
	o, want := transientDataset(t)
	ref, _ := openBucketTest(t, StoreOptions{Dir: crashImage(t, o.Dir), Direct: true, BucketBytes: o.BucketBytes, MaxKeys: o.MaxKeys})
	checkKeys(t, ref, want)
	ref.Close()
	errnos := []error{unix.EIO, unix.EMFILE, unix.ENOMEM}
	tries, failed := 0, 0
	for _, op := range fsOps {
		for n := 1; ; n++ {
			o2 := o
			o2.Dir = crashImage(t, o.Dir)
			before := dirListing(t, o2.Dir)
			fs := NewFaultFS(FSFault{Op: op, Nth: n, Err: errnos[n%len(errnos)]})
			o2.FS = fs
			s, _, err := Open(o2)
			if fs.Faults() == 0 {
				if err == nil {
					s.Close()
				}
				break
			}
			tries++
			// Every metadata file, and every data file that has one, is
			// where it was or in quarantine, after the faulted open and
			// after a clean one. (Only crash residue, a data file never
			// sealed or a temp file, may be gone.)
			kept := func(when string) {
				after := dirListing(t, o2.Dir)
				for _, f := range before {
					sealed := strings.HasSuffix(f, bucketMetaExt) ||
						strings.HasSuffix(f, bucketDataExt) && slices.Contains(before, strings.TrimSuffix(f, bucketDataExt)+bucketMetaExt)
					if sealed && !slices.Contains(after, f) && !slices.Contains(after, "/"+bucketQuarDir+f) {
						t.Errorf("%s #%d: %s (open error %v), %s is gone:\n%q", op, n, when, err, f, after)
					}
				}
			}
			if err != nil {
				failed++
				if !errors.Is(err, errnos[n%len(errnos)]) {
					t.Errorf("%s #%d: error %v does not carry the errno", op, n, err)
				}
				kept("after the failed open")
			} else {
				s.Close()
			}
			o2.FS = nil
			s2, rep := openBucketTest(t, o2)
			kept("after a clean reopen")
			checkKeys(t, s2, want)
			if t.Failed() {
				t.Fatalf("%s #%d (open error %v): clean reopen %+v; calls %q", op, n, err, rep, fs.Calls())
			}
			s2.Close()
		}
	}
	t.Logf("%d injected faults, %d failed the open", tries, failed)
	if tries < 20 || failed == 0 {
		t.Fatalf("only %d faults injected, %d failed the open", tries, failed)
	}
}

// TestBucketTransientRun: a transient failure of any file-system call
// while the store runs (puts, overwrites, deletes that empty buckets,
// evictions, Flush, Close) never loses a key the workload did not touch,
// and never serves wrong bytes.
func TestBucketTransientRun(t *testing.T) {
	bucketFDCheck(t)
	tries, evictions := 0, 0
	for _, op := range fsOps {
		for _, n := range []int{1, 2, 3, 4, 6, 9, 13, 19, 28, 40} { // early calls, then a sample
			dir := bucketTestDir(t)
			fs := NewFaultFS()
			o := tinyOpts(dir)
			o.FS = fs
			o.Capacity = 32 * 8192
			s, _ := openBucketTest(t, o)
			for k := uint64(0); k < 16; k++ {
				must(t, s.Put(k, bucketPayload(k, 5000)))
			}
			must(t, s.Flush())
			fs.SetFaults(FSFault{Op: op, Nth: n})
			replaced := map[uint64]bool{}
			for k := uint64(0); k < 4; k++ { // overwrite bucket 0
				replaced[k] = s.Put(k, bucketPayload(1000+k, 5000)) == nil
			}
			for k := uint64(4); k < 8; k++ { // empty bucket 1
				s.Delete(k)
			}
			s.Flush()
			for k := uint64(100); k < 120; k++ { // evict the oldest
				s.Put(k, bucketPayload(k, 5000))
			}
			s.Close()
			if fs.Faults() == 0 {
				break
			}
			tries++
			o.FS = nil
			s2, rep := openBucketTest(t, o)
			if len(rep.Quarantined) != 0 {
				t.Errorf("%s #%d: quarantined %q", op, n, rep.Quarantined)
			}
			dst := make([]byte, 5000)
			for _, k := range s2.Keys() {
				got, err := s2.Get(k, dst)
				if err != nil || (!bytes.Equal(dst[:got], bucketPayload(k, 5000)) && !bytes.Equal(dst[:got], bucketPayload(1000+k, 5000))) {
					t.Errorf("%s #%d: key %d: wrong bytes (%v)", op, n, k, err)
				}
				// A key replaced by a Put that succeeded never comes back
				// with its old bytes (its new copy may be lost, reported).
				if replaced[k] && bytes.Equal(dst[:got], bucketPayload(k, 5000)) {
					t.Errorf("%s #%d: key %d is back with its superseded copy (calls %q)", op, n, k, fs.Calls())
				}
				if k >= 4 && k < 8 {
					t.Errorf("%s #%d: key %d, deleted before Close, is back", op, n, k)
				}
			}
			// Keys 8..15 were not touched, but eviction may take them;
			// what it left must be there.
			ev := map[uint64]bool{}
			for _, k := range s.Evicted() {
				ev[k] = true
			}
			evictions += int(s.Stats().EvictedBuckets)
			for k := uint64(8); k < 16; k++ {
				if !ev[k] && !s2.Has(k) {
					t.Errorf("%s #%d: untouched key %d lost (calls %q)", op, n, k, fs.Calls())
				}
			}
			s2.Close()
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	t.Logf("%d injected faults, %d evictions", tries, evictions)
}

// TestBucketEvictSealsReplacements: evicting a bucket whose copies were
// replaced in the open bucket seals that bucket first: else a crash would
// lose the replaced keys, old and new copy alike.
func TestBucketEvictSealsReplacements(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	s, _ := openBucketTest(t, tinyOpts(dir))
	for k := uint64(0); k < 8; k++ { // buckets A (0-3) and B (4-7)
		must(t, s.Put(k, bucketPayload(k, 5000)))
	}
	must(t, s.Flush())
	must(t, s.Put(0, bucketPayload(100, 3000))) // the open bucket replaces A's key 0
	s.mu.Lock()
	s.o.Capacity = s.st.DiskBytes - 1
	s.o.HighWater, s.o.LowWater = 0.99, 0.99
	s.maybeEvict() // FIFO: A goes
	s.mu.Unlock()
	ev := s.Evicted()
	if slices.Contains(ev, 0) || !slices.Contains(ev, 1) {
		t.Fatalf("evicted %v", ev)
	}
	img := crashImage(t, dir)
	c, _ := openBucketTest(t, tinyOpts(img))
	if n, err := c.Get(0, make([]byte, 5000)); err != nil || n != 3000 {
		t.Fatalf("after a crash key 0: %d bytes, %v; want its new copy", n, err)
	}
}

// TestBucketMkdirAll: the exported MkdirAll makes nested folders (its
// fsyncs are TestBucketParentSynced's), again without error, and refuses
// a file in the way.
func TestBucketMkdirAll(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "x", "y", "z")
	for range 2 {
		must(t, MkdirAll(dir))
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	file := filepath.Join(root, "f")
	must(t, os.WriteFile(file, nil, 0o644))
	if err := MkdirAll(filepath.Join(file, "sub")); !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("a file in the way: %v", err)
	}
}

// TestBucketSalvageNoStale: damage to a newer bucket must not bring back
// the older copy of a key it replaced, which stays live on disk until the
// next Flush writes its death. An entry lost to damage (checksum, a data
// file cut short, a data file gone) still shadows older copies of the key
// it names: at worst a block is lost, never a superseded one served; the
// damaged files stay in quarantine.
func TestBucketSalvageNoStale(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, data, meta string)
		others bool // B's other blocks survive
	}{
		{"entry checksum", func(t *testing.T, data, meta string) {
			b, err := os.ReadFile(meta)
			must(t, err)
			b[bucketMetaHead+16] ^= 1 // entry 0 (key 0): its size
			must(t, os.WriteFile(meta, b, 0o644))
		}, true},
		{"data file cut", func(t *testing.T, data, meta string) { must(t, os.Truncate(data, 0)) }, false},
		{"data file gone", func(t *testing.T, data, meta string) { must(t, os.Remove(data)) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			bucketFDCheck(t)
			dir := bucketTestDir(t)
			s, _ := openBucketTest(t, tinyOpts(dir))
			for k := uint64(0); k < 4; k++ { // bucket A
				must(t, s.Put(k, bucketPayload(k, 5000)))
			}
			must(t, s.Flush())
			must(t, s.Put(0, bucketPayload(1000, 6000))) // bucket B: key 0 again, first entry
			for k := uint64(10); k < 13; k++ {
				must(t, s.Put(k, bucketPayload(k, 5000)))
			}
			must(t, s.Put(20, bucketPayload(20, 5000))) // seals B; A's copy of 0 is dead in memory only
			img := crashImage(t, dir)
			_, meta := bucketFiles(t, img)
			slices.Sort(meta)
			b := meta[len(meta)-1]
			c.damage(t, filepath.Join(img, bucketFileName(b, bucketDataExt)), filepath.Join(img, bucketFileName(b, bucketMetaExt)))
			for reopen := range 2 {
				r, rep := openBucketTest(t, tinyOpts(img))
				named := 0
				for _, r := range append(rep.DamagedBuckets, rep.DiscardedBuckets...) {
					if strings.Contains(r, bucketFileName(b, "")) {
						named++
					}
				}
				if reopen == 0 && named != 1 {
					t.Fatalf("report %+v", rep)
				}
				if reopen == 1 && len(rep.DamagedBuckets)+len(rep.DiscardedBuckets)+len(rep.Quarantined) != 0 {
					t.Fatalf("second reopen found damage again: %+v", rep)
				}
				dst := make([]byte, 6000)
				if n, err := r.Get(0, dst); err == nil {
					t.Fatalf("reopen %d: key 0 served with %d bytes (the superseded copy: %v)", reopen, n, bytes.Equal(dst[:n], bucketPayload(0, 5000)))
				}
				for _, k := range []uint64{1, 2, 3} {
					checkBlock(t, r, k, 5000)
				}
				for _, k := range []uint64{10, 11, 12} {
					if !c.others {
						if r.Has(k) {
							t.Fatalf("key %d of the damaged bucket served", k)
						}
						continue
					}
					checkBlock(t, r, k, 5000)
				}
				must(t, r.Close())
			}
			q := filepath.Join(img, bucketQuarDir, bucketFileName(b, bucketMetaExt))
			if _, err := os.Stat(q); err != nil {
				t.Errorf("damaged metadata not kept: %v", err)
			}
			if c.name == "data file cut" {
				if _, err := os.Stat(filepath.Join(img, bucketQuarDir, bucketFileName(b, bucketDataExt))); err != nil {
					t.Errorf("damaged data file not kept: %v", err)
				}
			}
		})
	}
}

// TestBucketSealRetry: a seal whose metadata write fails in a file-system
// call (the rename, the temporary file's open, the directory fsync) keeps
// the open bucket, whose data is written and synced, instead of dropping
// its blocks; the replaced copies stay the durable ones until a later
// seal succeeds. Close drops a bucket it still cannot seal, reporting its
// blocks.
func TestBucketSealRetry(t *testing.T) {
	for _, op := range []string{FSRename, FSOpen, FSSyncDir} {
		t.Run(op, func(t *testing.T) {
			bucketFDCheck(t)
			dir := bucketTestDir(t)
			fs := NewFaultFS()
			o := smallOpts(dir)
			o.FS = fs
			s, _ := openBucketTest(t, o)
			for k := uint64(0); k < 4; k++ {
				must(t, s.Put(k, bucketPayload(k, 5000)))
			}
			must(t, s.Flush())
			for k := uint64(0); k < 4; k++ {
				must(t, s.Put(k, bucketPayload(100+k, 3000)))
			}
			must(t, s.Put(10, bucketPayload(10, 5000)))
			fs.SetFaults(FSFault{Op: op, Nth: 1, Err: unix.EMFILE})
			if err := s.Flush(); !errors.Is(err, unix.EMFILE) {
				t.Fatalf("flush: %v", err)
			}
			if st := s.Stats(); st.LostBlocks != 0 || len(s.Evicted()) != 0 || st.OpenBlocks != 5 {
				t.Fatalf("after the failed seal: %+v", st)
			}
			checkBlock(t, s, 10, 5000)
			if n, err := s.Get(2, make([]byte, 5000)); err != nil || n != 3000 {
				t.Fatalf("key 2: %d bytes, %v", n, err)
			}
			// Killed now: whatever the failed seal left, each key is one of
			// its versions and key 10's is whole.
			c, _ := openBucketTest(t, StoreOptions{Dir: crashImage(t, dir), Direct: true, MaxKeys: o.MaxKeys, BucketBytes: o.BucketBytes})
			for k := uint64(0); k < 4; k++ {
				dst := make([]byte, 5000)
				n, err := c.Get(k, dst)
				if err != nil || (!bytes.Equal(dst[:n], bucketPayload(k, 5000)) && !bytes.Equal(dst[:n], bucketPayload(100+k, 3000))) {
					t.Fatalf("after a crash, key %d: %d bytes, %v", k, n, err)
				}
			}
			c.Close()
			must(t, s.Flush()) // the fault is spent: this seal succeeds
			must(t, s.Put(20, bucketPayload(20, 5000)))
			fs.SetFaults(FSFault{Op: op, Err: unix.EIO}) // every call fails: Close gives up
			if err := s.Close(); !errors.Is(err, unix.EIO) {
				t.Fatalf("close: %v", err)
			}
			if st := s.Stats(); st.LostBlocks != 1 || !slices.Equal(s.Evicted(), []uint64{20}) {
				t.Fatalf("after Close gave up: %+v", st)
			}
			r, _ := openBucketTest(t, StoreOptions{Dir: dir, Direct: true, MaxKeys: o.MaxKeys, BucketBytes: o.BucketBytes})
			for k := uint64(0); k < 4; k++ {
				dst := make([]byte, 5000)
				if n, err := r.Get(k, dst); err != nil || !bytes.Equal(dst[:n], bucketPayload(100+k, 3000)) {
					t.Fatalf("reopened, key %d: %d bytes, %v; want its new copy", k, n, err)
				}
			}
			checkBlock(t, r, 10, 5000)
			if r.Has(20) {
				t.Fatal("key 20, dropped by Close, is served")
			}
		})
	}
}
