//go:build linux

package bucket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"kvsim/hw/ioengine"
	"kvsim/hw/store"
	"kvsim/internal/testenv"
)

// bucketTestDir is a fresh directory on a disk filesystem, so O_DIRECT is
// real: the system temp dir unless it is tmpfs, else beside the repository.
func bucketTestDir(t testing.TB) string {
	t.Helper()
	if fs, err := ioengine.FSType(os.TempDir()); err == nil && fs != "tmpfs" && fs != "ramfs" {
		return t.TempDir()
	}
	parent, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if fs, err := ioengine.FSType(parent); err != nil || fs == "tmpfs" || fs == "ramfs" {
		t.Skipf("no disk filesystem for the bucket store: %s is %s, %s is %s", os.TempDir(), "tmpfs", parent, fs)
	}
	dir, err := os.MkdirTemp(parent, ".kvsim-bucket-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// bucketFDCheck fails the test if it leaves more fds open than it found.
// Call it first so that its cleanup runs last.
func bucketFDCheck(t testing.TB) {
	t.Helper()
	// The runtime's poller keeps two fds once started, and the first pipe
	// (a crash test's child) starts it: start it now, so a test run on its
	// own does not count them as its leak.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	count := func() int {
		des, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(des)
	}
	before := count()
	t.Cleanup(func() {
		if after := count(); after > before {
			t.Errorf("fd leak: %d open before, %d after", before, after)
		}
	})
}

// bucketPayload is a deterministic function of the key: a PCG stream
// seeded by it, so any block read back can be checked on its own.
func bucketPayload(key uint64, size int) []byte {
	b := make([]byte, size)
	bucketFillPayload(key, b)
	return b
}

func bucketFillPayload(key uint64, b []byte) {
	r := rand.NewPCG(key, 0x6b7673696d)
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		copy(b[i:], w[:])
	}
}

// bucketSize gives odd sizes, most not a multiple of 4 KiB (partial final
// pages), a few empty or exactly aligned.
func bucketSize(key uint64, maxSize int) int {
	switch key % 23 {
	case 0:
		return 0
	case 1:
		return 4096
	case 2:
		return 1
	}
	r := rand.New(rand.NewPCG(key, 7))
	return 1 + r.IntN(maxSize)
}

func openBucketTest(t testing.TB, o StoreOptions) (*Store, OpenReport) {
	t.Helper()
	s, rep, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rep
}

func checkBlock(t testing.TB, s *Store, key uint64, size int) {
	t.Helper()
	dst := make([]byte, size+100)
	n, err := s.Get(key, dst)
	if err != nil {
		t.Fatalf("get %#x: %v", key, err)
	}
	if n != size || !bytes.Equal(dst[:n], bucketPayload(key, size)) {
		t.Fatalf("get %#x: %d bytes, want %d, equal=%v", key, n, size, bytes.Equal(dst[:min(n, size)], bucketPayload(key, size)[:min(n, size)]))
	}
}

func bucketFiles(t testing.TB, dir string) (data, meta []uint64) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		id, ext, ok := parseBucketName(de.Name())
		switch {
		case !ok:
		case ext == bucketDataExt:
			data = append(data, id)
		case ext == bucketMetaExt:
			meta = append(meta, id)
		default:
			t.Errorf("leftover %s", de.Name())
		}
	}
	return data, meta
}

func smallOpts(dir string) StoreOptions {
	o := DefaultStoreOptions(dir)
	o.BucketBytes = 256 << 10
	o.MaxKeys = 16
	o.WriteBuffer = 64 << 10 // smaller than a bucket: blocks get streamed and straddle the buffer
	return o
}

func TestBucketRoundTrip(t *testing.T) {
	for _, mode := range []string{"pread", "io_uring"} {
		t.Run(mode, func(t *testing.T) {
			bucketFDCheck(t)
			dir := bucketTestDir(t)
			o := smallOpts(dir)
			o.EngineMode = mode
			s, rep, err := Open(o)
			if err != nil {
				if mode == "io_uring" && !testenv.RequireAll() {
					t.Skipf("io_uring: %v", err)
				}
				t.Fatal(err)
			}
			defer s.Close()
			if !rep.Direct {
				t.Errorf("no O_DIRECT on %s: %s", dir, rep.DirectNote)
			}
			if rep.Align < 4096 || rep.Engine == "" {
				t.Errorf("report %+v", rep)
			}
			sizes := map[uint64]int{}
			const n = 300
			for k := uint64(1); k <= n; k++ {
				size := bucketSize(k, 70<<10)
				if k == 77 {
					size = 2500 << 10 // bigger than a bucket (its own) and than the read buffer
				}
				sizes[k] = size
				if err := s.Put(k, bucketPayload(k, size)); err != nil {
					t.Fatal(err)
				}
				// Blocks of the open bucket are served from memory or from
				// the part already streamed.
				checkBlock(t, s, k, size)
				if k > 5 {
					checkBlock(t, s, k-5, sizes[k-5])
				}
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			if st.LiveBlocks != n || st.Buckets < n/16 || st.OpenBlocks != 0 {
				t.Fatalf("stats %+v", st)
			}
			for k, size := range sizes {
				checkBlock(t, s, k, size)
			}
			// GetBatch over everything, including unknown keys.
			keys := append(slices.Sorted(mapsKeys(sizes)), 9999)
			dst := make([][]byte, len(keys))
			for i, k := range keys {
				dst[i] = make([]byte, sizes[k]+10)
			}
			ns, errs := make([]int, len(keys)), make([]error, len(keys))
			if err := s.GetBatch(keys, dst, ns, errs); !errors.Is(err, ErrBucketNotFound) {
				t.Fatalf("GetBatch: %v", err)
			}
			for i, k := range keys[:len(keys)-1] {
				if errs[i] != nil || ns[i] != sizes[k] || !bytes.Equal(dst[i][:ns[i]], bucketPayload(k, sizes[k])) {
					t.Fatalf("GetBatch key %d: n=%d err=%v", k, ns[i], errs[i])
				}
			}
			if !errors.Is(errs[len(keys)-1], ErrBucketNotFound) || !errors.Is(errs[len(keys)-1], store.ErrNotStored) {
				t.Fatalf("unknown key: %v", errs[len(keys)-1])
			}
			// Short destination.
			if n, err := s.Get(77, make([]byte, 10)); !errors.Is(err, ErrBucketShortDst) || n != 2500<<10 {
				t.Fatalf("short dst: %d %v", n, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s2, rep2 := openBucketTest(t, o)
			if len(rep2.DiscardedBuckets) != 0 || rep2.Blocks != n || rep2.Buckets != st.Buckets {
				t.Fatalf("reopen: %+v (had %d buckets)", rep2, st.Buckets)
			}
			if got := len(s2.Keys()); got != n {
				t.Fatalf("Keys: %d", got)
			}
			for k, size := range sizes {
				checkBlock(t, s2, k, size)
				if sz, ok := s2.Size(k); !ok || sz != size {
					t.Fatalf("Size(%d) = %d, %v", k, sz, ok)
				}
			}
		})
	}
}

func mapsKeys(m map[uint64]int) func(func(uint64) bool) {
	return func(yield func(uint64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestBucketDeleteOverwrite(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	o := smallOpts(dir)
	s, _ := openBucketTest(t, o)
	put := func(k uint64, size int) {
		t.Helper()
		if err := s.Put(k, bucketPayload(k, size)); err != nil {
			t.Fatal(err)
		}
	}
	for k := uint64(0); k < 64; k++ {
		put(k, 5000)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	data, _ := bucketFiles(t, dir)
	if len(data) != 4 {
		t.Fatalf("%d buckets, want 4", len(data))
	}
	// Emptying the first bucket removes it from disk.
	for k := uint64(0); k < 16; k++ {
		if !s.Delete(k) {
			t.Fatalf("delete %d", k)
		}
	}
	if s.Delete(3) || s.Has(3) {
		t.Fatal("deleted twice")
	}
	if data, _ := bucketFiles(t, dir); len(data) != 3 {
		t.Fatalf("%d buckets after emptying one, want 3", len(data))
	}
	// Overwrite with another size; delete some in surviving buckets.
	put(20, 777)
	put(21, 9000)
	s.Delete(30)
	s.Delete(40)
	checkBlock(t, s, 20, 777)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, rep := openBucketTest(t, o)
	if len(rep.DiscardedBuckets) != 0 || rep.Blocks != 64-16-2 {
		t.Fatalf("reopen %+v", rep)
	}
	for _, k := range []uint64{3, 30, 40} {
		if s2.Has(k) {
			t.Errorf("deleted key %d is back", k)
		}
	}
	checkBlock(t, s2, 20, 777)
	checkBlock(t, s2, 21, 9000)
	checkBlock(t, s2, 22, 5000)
	// Deleting a key whose only live copy is newer than a dead older one,
	// then reopening twice, must not resurrect the old copy.
	s2.Delete(20)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s3, _ := openBucketTest(t, o)
		if s3.Has(20) {
			t.Fatal("key 20 resurrected")
		}
		s3.Close()
	}
}

func TestBucketLocked(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	openBucketTest(t, smallOpts(dir))
	s, _, err := Open(smallOpts(dir))
	if err == nil {
		s.Close()
		t.Fatal("second open of the same directory succeeded")
	}
	if !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("second open: %v", err)
	}
	// A lock that fails for another reason is not blamed on a process.
	o := smallOpts(bucketTestDir(t))
	o.FS = NewFaultFS(FSFault{Op: FSLock, Err: unix.ENOLCK})
	if s, _, err = Open(o); err == nil {
		s.Close()
		t.Fatal("open with a failing lock succeeded")
	}
	if !errors.Is(err, unix.ENOLCK) || strings.Contains(err.Error(), "in use") {
		t.Errorf("failed lock: %v", err)
	}
}

func TestBucketTmpfsFallback(t *testing.T) {
	bucketFDCheck(t)
	if fs, err := ioengine.FSType("/dev/shm"); err != nil || fs != "tmpfs" {
		t.Skip("no tmpfs at /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "kvsim-bucket-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(dir)
	s, rep := openBucketTest(t, smallOpts(dir))
	if rep.Direct || rep.DirectNote == "" {
		t.Fatalf("tmpfs: %+v", rep)
	}
	for k := uint64(0); k < 40; k++ {
		if err := s.Put(k, bucketPayload(k, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush()
	checkBlock(t, s, 7, 3000)
	s.Close()
}

// tornSetup writes 6 sealed buckets of 16 blocks (keys 100*bucket + i)
// and returns the data file ids in order.
func tornSetup(t *testing.T) (StoreOptions, []uint64) {
	dir := bucketTestDir(t)
	o := smallOpts(dir)
	s, _, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for b := uint64(0); b < 6; b++ {
		for i := uint64(0); i < 16; i++ {
			k := 100*b + i
			if err := s.Put(k, bucketPayload(k, bucketSize(k, 12000))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, meta := bucketFiles(t, dir)
	if len(data) != 6 || len(meta) != 6 {
		t.Fatalf("%d data, %d meta files", len(data), len(meta))
	}
	slices.Sort(data)
	return o, data
}

// TestBucketTorn damages bucket 2 (keys 200..215) in each way and checks
// what open does: a data file never sealed is removed; proven damage with
// nothing to recover moves the files to quarantine; partial damage keeps
// the blocks whose entries verify and links the damaged metadata aside.
func TestBucketTorn(t *testing.T) {
	const (
		removed    = "removed"
		quarantine = "quarantined"
		salvaged   = "salvaged"
	)
	cases := []struct {
		name   string
		damage func(t *testing.T, data, meta string)
		kind   string
		reason string
		lost   []uint64 // for salvaged: keys of bucket 2 no longer served
	}{
		{"truncated data", func(t *testing.T, data, meta string) {
			st, _ := os.Stat(data)
			must(t, os.Truncate(data, st.Size()-4096))
		}, salvaged, "data file shorter than recorded", []uint64{215}},
		{"missing data", func(t *testing.T, data, meta string) { must(t, os.Remove(data)) }, quarantine, "metadata without data file", nil},
		{"missing metadata", func(t *testing.T, data, meta string) { must(t, os.Remove(meta)) }, removed, "data file without metadata", nil},
		{"metadata write interrupted", func(t *testing.T, data, meta string) {
			must(t, os.Rename(meta, strings.TrimSuffix(meta, bucketMetaExt)+bucketTmpExt))
		}, removed, "metadata write interrupted", nil},
		{"truncated metadata", func(t *testing.T, data, meta string) {
			st, _ := os.Stat(meta)
			must(t, os.Truncate(meta, st.Size()-40))
		}, salvaged, "metadata truncated", []uint64{215}},
		{"truncated metadata header", func(t *testing.T, data, meta string) { must(t, os.Truncate(meta, 20)) }, quarantine, "metadata truncated", nil},
		{"empty metadata", func(t *testing.T, data, meta string) { must(t, os.Truncate(meta, 0)) }, quarantine, "metadata truncated", nil},
		{"garbage metadata", func(t *testing.T, data, meta string) {
			g := make([]byte, 600)
			bucketFillPayload(5, g)
			must(t, os.WriteFile(meta, g, 0o644))
		}, quarantine, "no bucket magic", nil},
		{"flipped metadata byte", func(t *testing.T, data, meta string) {
			b, _ := os.ReadFile(meta)
			b[bucketMetaHead+3*bucketMetaEnt+3] ^= 0x10 // entry 3's key
			must(t, os.WriteFile(meta, b, 0o644))
		}, salvaged, "entry 3 checksum mismatch", []uint64{203}},
		{"flipped header byte", func(t *testing.T, data, meta string) {
			b, _ := os.ReadFile(meta)
			b[33] ^= 0x01 // data size
			must(t, os.WriteFile(meta, b, 0o644))
		}, quarantine, "header checksum mismatch", nil},
		{"offset beyond data", func(t *testing.T, data, meta string) {
			// A well-formed metadata file (checksums recomputed) whose last
			// block lies past the recorded data: not a crash, not bit rot.
			raw, _ := os.ReadFile(meta)
			m, err := decodeBucketMeta(raw, bucketIDOf(meta))
			must(t, err)
			m.ents[len(m.ents)-1].off = m.dataSize
			buf := make([]byte, len(raw))
			encodeBucketMeta(buf, m)
			must(t, os.WriteFile(meta, buf, 0o644))
		}, quarantine, "exceeds the recorded data size", nil},
		{"data size beyond file", func(t *testing.T, data, meta string) {
			raw, _ := os.ReadFile(meta)
			m, err := decodeBucketMeta(raw, bucketIDOf(meta))
			must(t, err)
			m.dataSize += 1 << 20
			buf := make([]byte, len(raw))
			encodeBucketMeta(buf, m)
			must(t, os.WriteFile(meta, buf, 0o644))
		}, salvaged, "data file shorter than recorded", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bucketFDCheck(t)
			o, ids := tornSetup(t)
			victim := ids[2]
			data := filepath.Join(o.Dir, bucketFileName(victim, bucketDataExt))
			meta := filepath.Join(o.Dir, bucketFileName(victim, bucketMetaExt))
			c.damage(t, data, meta)
			s, rep := openBucketTest(t, o)
			reports := rep.DiscardedBuckets
			if c.kind == salvaged {
				reports = rep.DamagedBuckets
				if len(rep.DiscardedBuckets) != 0 {
					t.Fatalf("discarded %q", rep.DiscardedBuckets)
				}
			}
			if len(reports) != 1 || !strings.Contains(reports[0], c.reason) ||
				!strings.Contains(reports[0], bucketFileName(victim, "")) {
				t.Fatalf("%s %q, want one saying %q (report %+v)", c.kind, reports, c.reason, rep)
			}
			t.Logf("%s: %s", c.kind, reports[0])
			served := 80
			if c.kind == salvaged {
				served = 96 - len(c.lost)
				if rep.RecoveredBlocks != 16-len(c.lost) {
					t.Errorf("recovered %d blocks, want %d", rep.RecoveredBlocks, 16-len(c.lost))
				}
			}
			if rep.Buckets != 5+btoi(c.kind == salvaged) || rep.Blocks != served {
				t.Fatalf("report %+v", rep)
			}
			for b := uint64(0); b < 6; b++ {
				for i := uint64(0); i < 16; i++ {
					k := 100*b + i
					if b == 2 && (c.kind != salvaged || slices.Contains(c.lost, k)) {
						if s.Has(k) {
							t.Fatalf("key %d of the damaged bucket is served", k)
						}
						continue
					}
					checkBlock(t, s, k, bucketSize(k, 12000))
				}
			}
			dataIDs, metaIDs := bucketFiles(t, o.Dir)
			q := filepath.Join(o.Dir, bucketQuarDir)
			inQ := func(ext string) bool {
				_, err := os.Stat(filepath.Join(q, bucketFileName(victim, ext)))
				return err == nil
			}
			switch c.kind {
			case removed:
				if slices.Contains(dataIDs, victim) || len(rep.Quarantined) != 0 {
					t.Fatalf("data file left, or quarantined %q", rep.Quarantined)
				}
			case quarantine:
				if slices.Contains(dataIDs, victim) || slices.Contains(metaIDs, victim) {
					t.Fatal("damaged bucket's files left in the store")
				}
				if !inQ(bucketMetaExt) || (c.reason != "metadata without data file" && !inQ(bucketDataExt)) {
					t.Fatalf("files not in quarantine: %q", rep.Quarantined)
				}
			case salvaged:
				if !slices.Contains(dataIDs, victim) || !slices.Contains(metaIDs, victim) || !inQ(bucketMetaExt) {
					t.Fatalf("salvaged bucket's files: quarantined %q", rep.Quarantined)
				}
			}
			// New buckets never reuse the damaged one's id.
			must(t, s.Put(999, bucketPayload(999, 10)))
			must(t, s.Close())
			dataIDs, _ = bucketFiles(t, o.Dir)
			if slices.Max(dataIDs) <= ids[5] {
				t.Fatalf("new bucket id %d reused", slices.Max(dataIDs))
			}
			// The repair was written: a second open finds nothing wrong.
			s2, rep2 := openBucketTest(t, o)
			if len(rep2.DiscardedBuckets)+len(rep2.DamagedBuckets) != 0 || rep2.Blocks != served+1 {
				t.Fatalf("second open: %+v", rep2)
			}
			s2.Close()
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBucketMetaV1: metadata written by the first format is still read,
// and rewritten in the current one when it changes; a damaged version 1
// file is quarantined whole (it has no per-entry checksums).
func TestBucketMetaV1(t *testing.T) {
	bucketFDCheck(t)
	o, ids := tornSetup(t)
	toV1 := func(id uint64) []byte {
		raw, err := os.ReadFile(filepath.Join(o.Dir, bucketFileName(id, bucketMetaExt)))
		must(t, err)
		m, err := decodeBucketMeta(raw, id)
		must(t, err)
		le := binary.LittleEndian
		b := make([]byte, bucketMetaHeadV1+len(m.ents)*bucketMetaEntV1+bucketMetaTail)
		copy(b, bucketMetaMagic)
		le.PutUint32(b[8:], 1)
		le.PutUint32(b[12:], uint32(m.align))
		le.PutUint64(b[16:], m.id)
		le.PutUint32(b[24:], uint32(len(m.ents)))
		le.PutUint64(b[32:], uint64(m.dataSize))
		le.PutUint64(b[40:], uint64(m.created))
		p := b[bucketMetaHeadV1:]
		for _, e := range m.ents {
			le.PutUint64(p[0:], e.key)
			le.PutUint64(p[8:], uint64(e.off))
			le.PutUint64(p[16:], uint64(e.size))
			le.PutUint32(p[24:], e.crc)
			p = p[bucketMetaEntV1:]
		}
		le.PutUint32(p, bucketChecksum(b[:len(b)-bucketMetaTail]))
		copy(p[4:], bucketMetaEnd)
		return b
	}
	for _, id := range ids {
		b := toV1(id)
		if id == ids[4] {
			b[bucketMetaHeadV1+3] ^= 1
		}
		must(t, os.WriteFile(filepath.Join(o.Dir, bucketFileName(id, bucketMetaExt)), b, 0o644))
	}
	s, rep := openBucketTest(t, o)
	if rep.Blocks != 80 || len(rep.DiscardedBuckets) != 1 || !strings.Contains(rep.DiscardedBuckets[0], "version 1 metadata has no per-entry checksums") {
		t.Fatalf("%+v", rep)
	}
	checkBlock(t, s, 7, bucketSize(7, 12000))
	s.Delete(7)
	must(t, s.Close())
	raw, err := os.ReadFile(filepath.Join(o.Dir, bucketFileName(ids[0], bucketMetaExt)))
	must(t, err)
	if m, err := decodeBucketMeta(raw, ids[0]); err != nil || m.version != bucketMetaVersion {
		t.Fatalf("rewritten metadata: %v", err)
	}
	s2, rep := openBucketTest(t, o)
	if rep.Blocks != 79 || s2.Has(7) {
		t.Fatalf("%+v", rep)
	}
}

func bucketIDOf(path string) uint64 {
	id, _, _ := parseBucketName(filepath.Base(path))
	return id
}

// TestBucketDuplicateKeys: a key in several buckets (written by a store
// that crashed before recording the older copy dead) resolves to the newest.
func TestBucketDuplicateKeys(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	o := smallOpts(dir)
	s, _ := openBucketTest(t, o)
	for k := uint64(0); k < 16; k++ {
		must(t, s.Put(k, bucketPayload(k, 3000)))
	}
	must(t, s.Flush())
	// Save bucket 0's metadata as it was, overwrite key 5 in a new bucket,
	// then put the old metadata back: key 5 now lives in two buckets.
	m0 := filepath.Join(dir, bucketFileName(0, bucketMetaExt))
	old, err := os.ReadFile(m0)
	must(t, err)
	must(t, s.Put(5, bucketPayload(1005, 7000)))
	must(t, s.Close())
	must(t, os.WriteFile(m0, old, 0o644))

	s2, rep := openBucketTest(t, o)
	if rep.Blocks != 16 || rep.Buckets != 2 {
		t.Fatalf("%+v", rep)
	}
	dst := make([]byte, 8000)
	n, err := s2.Get(5, dst)
	if err != nil || !bytes.Equal(dst[:n], bucketPayload(1005, 7000)) {
		t.Fatalf("key 5: n=%d err=%v, want the newer copy", n, err)
	}
}

func TestBucketChecksum(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	o := smallOpts(dir)
	s, _ := openBucketTest(t, o)
	for k := uint64(0); k < 32; k++ {
		must(t, s.Put(k, bucketPayload(k, 6000)))
	}
	must(t, s.Close())

	// Flip one byte inside key 3's block and one in key 20's.
	flip := func(key uint64) {
		for _, id := range []uint64{0, 1} {
			raw, err := os.ReadFile(filepath.Join(dir, bucketFileName(id, bucketMetaExt)))
			must(t, err)
			m, err := decodeBucketMeta(raw, id)
			must(t, err)
			for _, e := range m.ents {
				if e.key != key {
					continue
				}
				f, err := os.OpenFile(filepath.Join(dir, bucketFileName(id, bucketDataExt)), os.O_RDWR, 0)
				must(t, err)
				var b [1]byte
				f.ReadAt(b[:], e.off+e.size/2)
				b[0] ^= 0x01
				f.WriteAt(b[:], e.off+e.size/2)
				f.Close()
				return
			}
		}
		t.Fatalf("key %d not found", key)
	}
	flip(3)
	flip(20)

	s2, rep := openBucketTest(t, o)
	if rep.Blocks != 32 {
		t.Fatalf("%+v", rep)
	}
	dst := bytes.Repeat([]byte{0xAA}, 8000)
	n, err := s2.Get(3, dst)
	if !errors.Is(err, ErrBucketChecksum) || n != 0 {
		t.Fatalf("corrupt block: n=%d err=%v", n, err)
	}
	if !bytes.Equal(dst, bytes.Repeat([]byte{0xAA}, 8000)) {
		t.Fatal("corrupt data was copied into dst")
	}
	if s2.Has(3) {
		t.Fatal("corrupt block still indexed")
	}
	// The batch path reports it too and serves the rest.
	keys := []uint64{19, 20, 21}
	dsts := [][]byte{make([]byte, 6000), make([]byte, 6000), make([]byte, 6000)}
	ns, errs := make([]int, 3), make([]error, 3)
	if err := s2.GetBatch(keys, dsts, ns, errs); !errors.Is(err, ErrBucketChecksum) {
		t.Fatalf("batch: %v", err)
	}
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], ErrBucketChecksum) || ns[1] != 0 {
		t.Fatalf("batch errs %v", errs)
	}
	checkBlock(t, s2, 4, 6000)
	if st := s2.Stats(); st.ChecksumErrors != 2 || st.LiveBlocks != 30 {
		t.Fatalf("stats %+v", st)
	}
	must(t, s2.Close())
	// The drops were recorded: they do not come back.
	s3, rep := openBucketTest(t, o)
	if rep.Blocks != 30 || s3.Has(3) || s3.Has(20) {
		t.Fatalf("reopen: %+v", rep)
	}
}

func TestBucketEvict(t *testing.T) {
	for _, policy := range []string{"fifo", "lru"} {
		t.Run(policy, func(t *testing.T) {
			bucketFDCheck(t)
			dir := bucketTestDir(t)
			o := smallOpts(dir)
			o.BucketBytes = 64 << 10 // 16 blocks of 4 KiB
			o.Evict = policy
			o.Capacity = 10 * o.BucketBytes // high 9 buckets, low 8
			s, _ := openBucketTest(t, o)
			put := func(b uint64) {
				for i := uint64(0); i < 16; i++ {
					k := 100*b + i
					must(t, s.Put(k, bucketPayload(k, 4000)))
				}
			}
			for b := uint64(0); b < 9; b++ {
				put(b)
			}
			must(t, s.Flush())
			if ev := s.Evicted(); len(ev) != 0 {
				t.Fatalf("evicted %d keys at 90%%", len(ev))
			}
			// Read bucket 0 so LRU keeps it.
			checkBlock(t, s, 5, 4000)
			put(9) // 10 buckets > 9: evict down to 8
			st := s.Stats()
			if st.DiskBytes > 8*o.BucketBytes || st.EvictedBuckets != 2 {
				t.Fatalf("stats %+v", st)
			}
			ev := s.Evicted()
			slices.Sort(ev)
			var want []uint64
			gone := []uint64{0, 1}
			if policy == "lru" {
				gone = []uint64{1, 2}
			}
			for _, b := range gone {
				for i := uint64(0); i < 16; i++ {
					want = append(want, 100*b+i)
				}
			}
			if !slices.Equal(ev, want) {
				t.Fatalf("evicted %v, want %v", ev, want)
			}
			for _, k := range want {
				if s.Has(k) {
					t.Fatalf("evicted key %d still served", k)
				}
			}
			if len(s.Evicted()) != 0 {
				t.Fatal("Evicted not reset")
			}
			keep := uint64(300)
			if policy == "lru" {
				keep = 5
			}
			checkBlock(t, s, keep, 4000)
			data, _ := bucketFiles(t, dir)
			if len(data) != 8 {
				t.Fatalf("%d data files, want 8", len(data))
			}
		})
	}
}

// TestBucketFaults injects ENOSPC and EIO at each step of writing a bucket.
func TestBucketFaults(t *testing.T) {
	cases := []struct {
		name  string
		plan  FaultPlan
		errno error
		op    string
	}{
		// Buckets of 16 x 8 KiB = 128 KiB, write buffer 64 KiB: each bucket
		// is 2 buffer writes + 1 metadata write, so write 4 is the second
		// bucket's first buffer.
		{"ENOSPC streaming data", FaultPlan{FailWrite: 4}, unix.ENOSPC, "write data"},
		{"EIO streaming data", FaultPlan{FailWrite: 5, Err: unix.EIO}, unix.EIO, "write data"},
		{"ENOSPC torn data write", FaultPlan{FailWrite: 5, Torn: 10000}, unix.ENOSPC, "write data"},
		{"ENOSPC metadata", FaultPlan{FailWrite: 6}, unix.ENOSPC, "write metadata"},
		{"EIO data sync", FaultPlan{FailSync: 3}, unix.EIO, "sync data"},
		{"EIO metadata sync", FaultPlan{FailSync: 4}, unix.EIO, "write metadata"},
		{"ENOSPC after bytes", FaultPlan{FailAfter: 3*(128<<10) + 70000}, unix.ENOSPC, "write data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bucketFDCheck(t)
			dir := bucketTestDir(t)
			o := smallOpts(dir)
			o.BucketBytes = 128 << 10
			fe := NewFaultEngine(ioengine.NewPreadEngine(), FaultPlan{})
			o.Engine = fe
			s, _ := openBucketTest(t, o)
			// Bucket 0 goes in cleanly.
			for k := uint64(0); k < 16; k++ {
				must(t, s.Put(k, bucketPayload(k, 8000)))
			}
			must(t, s.Flush())
			fe.SetPlan(c.plan)
			var failed error
			var stored []uint64
			for k := uint64(16); k < 160 && failed == nil; k++ {
				if failed = s.Put(k, bucketPayload(k, 8000)); failed == nil {
					stored = append(stored, k)
				}
			}
			if failed == nil {
				failed = s.Flush()
			}
			var be *BucketError
			if !errors.Is(failed, c.errno) || !errors.As(failed, &be) || be.Op != c.op {
				t.Fatalf("got %v, want %v in %q", failed, c.errno, c.op)
			}
			t.Logf("error: %v", failed)
			lost := s.Evicted()
			if len(lost) == 0 {
				t.Fatal("no keys reported lost")
			}
			for _, k := range lost {
				if s.Has(k) {
					t.Fatalf("lost key %d still indexed", k)
				}
				if _, err := s.Get(k, make([]byte, 8000)); !errors.Is(err, ErrBucketNotFound) {
					t.Fatalf("lost key %d: %v", k, err)
				}
			}
			alive := 0
			for _, k := range stored {
				if s.Has(k) {
					checkBlock(t, s, k, 8000)
					alive++
				}
			}
			for k := uint64(0); k < 16; k++ {
				checkBlock(t, s, k, 8000)
			}
			st := s.Stats()
			if st.FailedBuckets != 1 || st.LostBlocks != int64(len(lost)) {
				t.Fatalf("stats %+v", st)
			}
			// The store goes on once the fault clears.
			fe.SetPlan(FaultPlan{})
			for k := uint64(1000); k < 1020; k++ {
				must(t, s.Put(k, bucketPayload(k, 8000)))
			}
			must(t, s.Close())
			s2, rep := openBucketTest(t, StoreOptions{Dir: dir, Direct: true, BucketBytes: o.BucketBytes, MaxKeys: o.MaxKeys})
			if len(rep.DiscardedBuckets) != 0 {
				t.Fatalf("failed bucket left files: %q", rep.DiscardedBuckets)
			}
			for _, k := range lost {
				if s2.Has(k) {
					t.Fatalf("lost key %d back after reopen", k)
				}
			}
			if rep.Blocks != 16+alive+20 {
				t.Fatalf("reopen: %d blocks, want %d", rep.Blocks, 16+alive+20)
			}
			for _, k := range s2.Keys() {
				size := 8000
				checkBlock(t, s2, k, size)
			}
		})
	}
}

func TestBucketReadEIO(t *testing.T) {
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
	fe.SetPlan(FaultPlan{FailRead: 1})
	if _, err := s.Get(2, make([]byte, 3000)); !errors.Is(err, unix.EIO) {
		t.Fatalf("got %v, want EIO", err)
	}
	// A read error is not proof of bad data: the block stays.
	checkBlock(t, s, 2, 3000)
	if st := s.Stats(); st.ReadErrors != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBucketConcurrent(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	o := smallOpts(dir)
	o.Capacity = 2 << 20
	o.MaxOpenFiles = 4
	s, _ := openBucketTest(t, o)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			dst := make([]byte, 20000)
			for i := range 300 {
				k := uint64(g*1000 + i)
				size := bucketSize(k, 20000)
				if err := s.Put(k, bucketPayload(k, size)); err != nil {
					t.Error(err)
					return
				}
				for _, j := range []int{i, i / 2, i / 3} {
					k := uint64(g*1000 + j)
					n, err := s.Get(k, dst)
					if errors.Is(err, ErrBucketNotFound) {
						continue // evicted or deleted
					}
					if err != nil || !bytes.Equal(dst[:n], bucketPayload(k, bucketSize(k, 20000))) {
						t.Errorf("key %d: %v", k, err)
						return
					}
				}
				if i%5 == 0 {
					s.Delete(uint64(g*1000 + i/2))
				}
				if i%50 == 0 {
					s.Evicted()
					s.Stats()
					if err := s.Flush(); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.DiskBytes > o.Capacity || st.EvictedBuckets == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBucketAllocs(t *testing.T) {
	dir := bucketTestDir(t)
	o := DefaultStoreOptions(dir)
	o.BucketBytes = 64 << 20
	s, _ := openBucketTest(t, o)
	data := bucketPayload(1, 10000)
	for k := uint64(0); k < 400; k++ {
		must(t, s.Put(k, data))
	}
	for k := uint64(0); k < 400; k++ {
		s.Delete(k)
	}
	k := uint64(0)
	if a := testing.AllocsPerRun(50, func() {
		k++
		if err := s.Put(k, data); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Put: %v allocs", a)
	}
	dst := make([]byte, 10000)
	if a := testing.AllocsPerRun(50, func() {
		if _, err := s.Get(7, dst); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Get from the open bucket: %v allocs", a)
	}
	must(t, s.Flush())
	if a := testing.AllocsPerRun(50, func() {
		if _, err := s.Get(7, dst); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Get: %v allocs", a)
	}
	keys := []uint64{3, 9, 27, 30}
	dsts := [][]byte{make([]byte, 10000), make([]byte, 10000), make([]byte, 10000), make([]byte, 10000)}
	ns, errs := make([]int, 4), make([]error, 4)
	if a := testing.AllocsPerRun(50, func() { must(t, s.GetBatch(keys, dsts, ns, errs)) }); a != 0 {
		t.Errorf("GetBatch: %v allocs", a)
	}
	// In steady state, with buckets sealing and being evicted, the cost per
	// Put is the per-bucket allocations spread over MaxKeys blocks.
	o2 := DefaultStoreOptions(bucketTestDir(t))
	o2.BucketBytes, o2.Capacity = 4<<20, 16<<20
	s2, _ := openBucketTest(t, o2)
	data = bucketPayload(1, 8000)
	for k := uint64(0); k < 3000; k++ {
		must(t, s2.Put(k, data))
	}
	k = 3000
	if a := testing.AllocsPerRun(2000, func() {
		k++
		if err := s2.Put(k, data); err != nil {
			t.Fatal(err)
		}
		s2.Get(k-100, dst)
	}); a > 0.2 {
		t.Errorf("steady state: %v allocs per Put+Get", a)
	}
}

func TestFaultEngine(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	f, err := os.Create(filepath.Join(dir, "f"))
	must(t, err)
	defer f.Close()
	a, err := ioengine.NewArena(1 << 20)
	must(t, err)
	defer a.Close()
	buf := a.Slice(0, 64<<10)
	fd := int(f.Fd())
	fe := NewFaultEngine(ioengine.NewPreadEngine(), FaultPlan{FailWrite: 2, Torn: 5000, Sticky: true})
	ops := make([]ioengine.Op, 4)
	for i := range ops {
		ops[i] = ioengine.Op{Write: true, FD: fd, Off: int64(i) * 65536, Buf: buf}
	}
	err = fe.Do(ops)
	if !errors.Is(err, unix.ENOSPC) || ops[0].Err != nil || ops[0].N != 65536 ||
		!errors.Is(ops[1].Err, unix.ENOSPC) || ops[1].N != 4096 || ops[2].Err == nil || ops[3].Err == nil {
		t.Fatalf("err %v ops %s", err, opsSummary(ops))
	}
	if st, _ := f.Stat(); st.Size() != 65536+4096 {
		t.Fatalf("file size %d", st.Size())
	}
	if fe.Faults() != 3 {
		t.Fatalf("faults %d", fe.Faults())
	}
	fe.SetPlan(FaultPlan{FailAfter: 100000, Err: unix.EIO})
	err = fe.Do(ops[:2])
	if !errors.Is(err, unix.EIO) || ops[0].Err != nil || ops[1].N != 32768 || fe.Written() != 65536+32768 {
		t.Fatalf("FailAfter: err %v ops %s written %d", err, opsSummary(ops[:2]), fe.Written())
	}
	if err := fe.Do(ops[2:3]); !errors.Is(err, unix.EIO) {
		t.Fatal("writes after the limit should fail")
	}
	fe.SetPlan(FaultPlan{FailRead: 2, FailSync: 1})
	rd := []ioengine.Op{{FD: fd, Buf: buf[:4096]}, {FD: fd, Buf: buf[:4096]}, {FD: fd, Buf: buf[:4096]}}
	if err := fe.Do(rd); !errors.Is(err, unix.EIO) || rd[0].Err != nil || rd[1].Err == nil || rd[2].Err != nil {
		t.Fatalf("reads: %v %s", err, opsSummary(rd))
	}
	if err := fe.Fdatasync(fd); !errors.Is(err, unix.EIO) {
		t.Fatalf("sync: %v", err)
	}
	if err := fe.Fdatasync(fd); err != nil {
		t.Fatalf("second sync: %v", err)
	}
}

func opsSummary(ops []ioengine.Op) string {
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "[%d: N=%d err=%v] ", i, op.N, op.Err)
	}
	return b.String()
}
