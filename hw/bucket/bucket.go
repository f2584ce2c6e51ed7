//go:build linux

package bucket

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"kvsim/hw/internal/sys"
	"kvsim/hw/ioengine"
)

// Store is the SSD tier's on-disk store, modelled on Mooncake's
// BucketStorageBackend: blocks are packed into bucket data files (up to
// BucketBytes or MaxKeys blocks each) with one metadata file per bucket, and
// space is reclaimed a whole bucket at a time. See bucket_format.go for the
// file layout.
//
// Puts fill the open bucket in an aligned write buffer, streamed to its data
// file whenever the buffer fills. Sealing the bucket (when full, or on
// Flush/Close) pads and writes the tail, fdatasyncs the data, then writes the
// metadata to a temporary name, fdatasyncs it, renames it into place and
// fsyncs the directory: a crash leaves either no metadata or metadata that
// points only at durable data. A data file without metadata was never
// sealed and is removed on open.
//
// What survives a crash (see also the README): a block is durable once its
// bucket is sealed; a deletion once Flush or Close returns. Bucket ids only
// grow, and on open the newest bucket's entry for a key decides, so an
// older copy can win only if every newer entry is gone. The store keeps
// that from happening: a copy replaced by a Put stays on disk, and its
// death stays off disk, until the replacing bucket is sealed; and before
// any bucket file is unlinked, the deaths recorded in memory for older
// buckets are written to their metadata, and each unlink is followed by a
// directory fsync.
//
// Get serves blocks of the open bucket too (from the write buffer, or from
// the part already streamed to its data file): they are this process's own
// writes, still checked against their CRC.
//
// All methods are safe for concurrent use; one mutex serialises them, and
// the batch methods are how to get queue depth.
type Store struct {
	mu     sync.Mutex
	o      StoreOptions
	fs     bucketFS
	dirfd  sys.FD // held open for fsync and as the flock that keeps other processes out
	eng    ioengine.Engine
	ownEng bool
	dflag  int // unix.O_DIRECT or 0
	align  int64
	closed bool

	wa    *ioengine.Arena // write buffer then metadata buffer
	wbuf  []byte
	mbuf  []byte
	ma    *ioengine.Arena // a larger metadata buffer, when one was needed
	ra0   *ioengine.Arena // the read buffer the engine was given (it may have registered it)
	ra    *ioengine.Arena // the read buffer now: ra0, or a larger one
	rbuf  []byte
	ops   []ioengine.Op
	pend  []bucketPending
	index map[uint64]bucketLoc

	open    *bucket // the unsealed bucket, nil when none
	bufBase int64   // data file offset of wbuf[0]
	fill    int     // bytes of wbuf in use
	sealed  []*bucket
	waiting []bucketLoc // entries of sealed buckets replaced by the open bucket (pend)
	nextID  uint64
	tick    uint64
	openFDs int

	evicted []uint64
	st      StoreStats

	// Test hooks: sealed gets the live keys of a bucket once it is durable,
	// evicting the keys of a bucket about to be evicted.
	testSealed, testEvicting func(keys []uint64)
}

const (
	bucketIOChunk   = 1 << 20 // size of one write or read request; 1 MiB as in the platform notes
	bucketMinAlign  = 4096    // blocks start on 4 KiB so a read is exactly the 4 KiB-aligned superset
	bucketDefMaxFDs = 256
)

type bucket struct {
	id       uint64
	fd       sys.FD // zero: not open (sealed buckets reopen on demand)
	sealed   bool
	direct   bool // read with O_DIRECT (false when its alignment does not suit this filesystem)
	dirty    bool // has deaths its metadata file does not record yet (pending ones aside)
	pend     int  // entries whose death waits for the open bucket's seal
	align    int64
	size     int64 // data file bytes, padded, written or buffered
	metaSize int64
	created  int64
	live     int
	lastUse  uint64 // seal or last read, for LRU and for closing idle fds
	ents     []bucketEntry
}

type bucketLoc struct {
	b *bucket
	i int
}

type bucketPending struct {
	i        int // index in the batch
	b        *bucket
	key      uint64
	size     int64
	crc      uint32
	buf      []byte
	op0, op1 int
}

// Open opens (creating if needed) the store in o.Dir and
// rebuilds its index from the metadata files. Data files that were never
// sealed are removed; buckets with proven damage (bad magic or checksum,
// metadata without data) are moved to o.Dir/quarantine, and a bucket whose
// metadata is partly damaged keeps the blocks whose entries still verify.
// Every entry that can still be read, lost block or not, keeps shadowing
// older copies of its key: damage may lose a block, never bring back a
// superseded one.
// A failure to read or stat a file (EIO, EMFILE, ENOMEM) is not damage:
// the open fails and removes nothing. Block checksums are checked at Get.
func Open(o StoreOptions) (*Store, OpenReport, error) {
	var rep OpenReport
	if err := bucketDefaults(&o); err != nil {
		return nil, rep, err
	}
	fs := bucketFS{o.FS}
	if err := fs.mkdirAll(o.Dir); err != nil {
		return nil, rep, fmt.Errorf("bucket store: %w", err)
	}
	fd, err := fs.open(o.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, rep, fmt.Errorf("bucket store: %w", err)
	}
	dirfd := sys.Own(fd)
	if err := fs.lock(dirfd.Int(), o.Dir); err != nil {
		dirfd.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, rep, fmt.Errorf("bucket store %s: in use by another process (flock: %w)", o.Dir, err)
		}
		return nil, rep, fmt.Errorf("bucket store %s: cannot take its lock (flock: %w); nothing was read or removed", o.Dir, err)
	}
	s := &Store{o: o, fs: fs, dirfd: dirfd, align: bucketMinAlign, index: make(map[uint64]bucketLoc)}
	ok := false
	defer func() {
		if !ok {
			s.release()
		}
	}()
	if o.Direct {
		if _, a, err := ioengine.ProbeDirectIO(o.Dir); err != nil {
			rep.DirectNote = err.Error()
		} else {
			s.dflag = unix.O_DIRECT
			s.align = max(s.align, int64(a.Offset), int64(a.Mem))
		}
	}
	rep.Direct, rep.Align = s.dflag != 0, int(s.align)

	wsize := o.WriteBuffer
	if wsize <= 0 {
		wsize = int(min(o.BucketBytes, int64(o.QueueDepth)*bucketIOChunk))
	}
	wsize = int(bucketAlignUp(int64(wsize), s.align))
	msize := int(bucketAlignUp(int64(bucketMetaSize(o.MaxKeys)), bucketMinAlign))
	if s.wa, err = ioengine.NewArena(wsize + msize); err != nil {
		return nil, rep, err
	}
	s.wbuf = s.wa.Slice(0, wsize)
	s.mbuf = s.wa.Bytes()[wsize:]
	if s.ra0, err = ioengine.NewArena(wsize); err != nil {
		return nil, rep, err
	}
	s.ra, s.rbuf = s.ra0, s.ra0.Bytes()
	s.ops = make([]ioengine.Op, max(o.QueueDepth, wsize/bucketIOChunk+1))
	s.pend = make([]bucketPending, 0, len(s.ops))

	s.eng = o.Engine
	if s.eng == nil {
		mode := o.EngineMode
		if mode == "" {
			mode = "pread"
		}
		if s.eng, rep.EngineNote, err = ioengine.NewEngine(mode, o.QueueDepth, s.wa, s.ra0); err != nil {
			return nil, rep, err
		}
		s.ownEng = true
	}
	rep.Engine = s.eng.Name()

	if err := s.load(&rep); err != nil {
		return nil, rep, err
	}
	rep.Buckets, rep.Blocks = s.liveBuckets(), len(s.index)
	ok = true
	return s, rep, nil
}

func bucketDefaults(o *StoreOptions) error {
	if o.Dir == "" {
		return errors.New("bucket store: no directory")
	}
	if o.BucketBytes <= 0 {
		o.BucketBytes = DefaultBucketBytes
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 500
	}
	if o.HighWater == 0 {
		o.HighWater = 0.90
	}
	if o.LowWater == 0 {
		o.LowWater = 0.80
	}
	if o.Capacity < 0 || o.HighWater <= 0 || o.HighWater > 1 || o.LowWater <= 0 || o.LowWater > o.HighWater {
		return fmt.Errorf("bucket store: need capacity >= 0 and 0 < low (%g) <= high (%g) <= 1", o.LowWater, o.HighWater)
	}
	switch o.Evict {
	case "":
		o.Evict = "fifo"
	case "fifo", "lru":
	default:
		return fmt.Errorf("bucket store: eviction %q: must be fifo or lru", o.Evict)
	}
	if o.QueueDepth <= 0 {
		o.QueueDepth = ioengine.DefaultQueueDepth
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = bucketDefMaxFDs
	}
	return nil
}

func (s *Store) path(id uint64, ext string) string {
	return filepath.Join(s.o.Dir, bucketFileName(id, ext))
}

// transient wraps an error that is not damage: the open fails, and the
// files stay as they were.
func (s *Store) transient(err error) error {
	return fmt.Errorf("bucket store %s: %w (an I/O error, not damage: no bucket was removed for it; try again)", s.o.Dir, err)
}

// bucketIDPrefix reads the id of any file named after a bucket, quarantined
// copies (with a suffix) included.
func bucketIDPrefix(name string) (uint64, bool) {
	const hexLen = 16
	if !strings.HasPrefix(name, bucketPrefix) || len(name) < len(bucketPrefix)+hexLen {
		return 0, false
	}
	id, err := strconv.ParseUint(name[len(bucketPrefix):len(bucketPrefix)+hexLen], 16, 64)
	return id, err == nil
}

// load rebuilds the index from the metadata files.
func (s *Store) load(rep *OpenReport) error {
	des, err := s.fs.readDir(s.o.Dir)
	if err != nil {
		return s.transient(err)
	}
	type files struct{ data, meta, tmp bool }
	found := map[uint64]*files{}
	for _, de := range des {
		id, ext, ok := parseBucketName(de.Name())
		if !ok {
			continue
		}
		f := found[id]
		if f == nil {
			f = &files{}
			found[id] = f
		}
		switch ext {
		case bucketDataExt:
			f.data = true
		case bucketMetaExt:
			f.meta = true
		case bucketTmpExt:
			f.tmp = true
		}
		s.nextID = max(s.nextID, id+1)
	}
	// Quarantined ids stay taken, so that a new bucket never shares a name
	// with one set aside.
	qdes, err := s.fs.readDir(filepath.Join(s.o.Dir, bucketQuarDir))
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return s.transient(err)
	}
	for _, de := range qdes {
		if id, ok := bucketIDPrefix(de.Name()); ok {
			s.nextID = max(s.nextID, id+1)
		}
	}
	ids := make([]uint64, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var good []*bucket
	seen := map[uint64]struct{}{}
	for _, id := range slices.Backward(ids) {
		f := found[id]
		if f.tmp {
			// A metadata write that never reached its rename; harmless if
			// it stays (the next write truncates it).
			s.fs.unlink(s.path(id, bucketTmpExt))
		}
		switch {
		case !f.meta && f.data:
			// Never sealed, or removed up to its data file: nothing in it
			// was ever durable, and without metadata nothing can be found
			// in it.
			why := "data file without metadata (never sealed; removed)"
			if f.tmp {
				why = "data file without metadata (metadata write interrupted; removed)"
			}
			if err := s.fs.unlink(s.path(id, bucketDataExt)); err != nil {
				why = fmt.Sprintf("data file without metadata (never sealed; not removed: %v)", err)
			}
			rep.DiscardedBuckets = append(rep.DiscardedBuckets, fmt.Sprintf("%s: %s", bucketFileName(id, ""), why))
			continue
		case !f.meta:
			continue
		}
		raw, err := s.fs.readFile(s.path(id, bucketMetaExt))
		if err != nil {
			return s.transient(err)
		}
		m, err := decodeBucketMeta(raw, id)
		if err != nil {
			// Nothing in it can be trusted, not even which keys it names.
			exts := []string{bucketDataExt, bucketMetaExt}
			why := err.Error()
			if !f.data {
				exts, why = exts[1:], "metadata without data file; "+why
			}
			if err := s.quarantine(rep, id, why, exts...); err != nil {
				return err
			}
			continue
		}
		var st unix.Stat_t
		if !f.data {
			// The store unlinks metadata before data: this is damage.
			// Nothing can be served, but every entry still shadows older
			// copies of its key.
			for i := range m.ents {
				m.ents[i] = bucketTombstone(m.ents[i].key, 0)
			}
			m.dataSize = 0
			m.damage = "metadata without data file"
		} else if err := s.fs.stat(s.path(id, bucketDataExt), &st); err != nil {
			return s.transient(err)
		}
		if f.data && st.Size < m.dataSize {
			// Blocks wholly inside the file may still verify; Get checks.
			// Those beyond it become dead, empty entries at its end: they
			// still shadow older copies of their keys.
			recorded, size := m.dataSize, st.Size&^(m.align-1)
			n, kept := 0, 0
			for i := range m.ents {
				e := &m.ents[i]
				inside := e.off+bucketAlignUp(e.size, m.align) <= size
				if !e.dead {
					n++
					if inside {
						kept++
					}
				}
				if !inside {
					*e = bucketTombstone(e.key, size)
				}
			}
			m.dataSize = size
			why := fmt.Sprintf("data file shorter than recorded (%d < %d bytes): kept the %d of %d blocks inside it", st.Size, recorded, kept, n)
			if m.damage != "" {
				why = m.damage + "; " + why
			}
			m.damage = why
		}
		empty := !slices.ContainsFunc(m.ents, func(e bucketEntry) bool { return !e.dead })
		b := &bucket{id: id, sealed: true, align: m.align, size: m.dataSize,
			metaSize: int64(len(raw)), created: m.created, ents: m.ents,
			direct: s.dflag != 0 && m.align%s.align == 0}
		if m.damage != "" {
			// Keep the damaged files aside, then write the repaired
			// metadata over them (below); a crash between leaves the
			// damaged one. A bucket left with nothing to serve is removed
			// as any empty one is (reclaimEmpty, after the deaths it
			// implies in older buckets are written); its files stay in
			// the quarantine.
			exts := []string{bucketMetaExt}
			if empty && f.data {
				exts = append(exts, bucketDataExt)
			}
			if err := s.keepAside(rep, id, exts...); err != nil {
				return err
			}
			b.dirty = true
		}
		// Newest first, so the newest entry of a key decides, dead or live;
		// within a bucket later entries are newer.
		for i := len(b.ents) - 1; i >= 0; i-- {
			e := &b.ents[i]
			if _, dup := seen[e.key]; dup {
				if !e.dead {
					e.dead, b.dirty = true, true
				}
				continue
			}
			seen[e.key] = struct{}{}
			if e.dead {
				continue
			}
			s.index[e.key] = bucketLoc{b, i}
			b.live++
			s.st.LiveBytes += e.size
		}
		switch {
		case m.damage != "" && empty:
			rep.DiscardedBuckets = append(rep.DiscardedBuckets, fmt.Sprintf("%s: %s (kept in %s; its entries still shadow older copies of their keys)", bucketFileName(id, ""), m.damage, bucketQuarDir))
		case m.damage != "":
			rep.DamagedBuckets = append(rep.DamagedBuckets, fmt.Sprintf("%s: %s; %d live blocks kept", bucketFileName(id, ""), m.damage, b.live))
			rep.RecoveredBlocks += b.live
		}
		good = append(good, b)
	}
	slices.Reverse(good)
	for _, b := range good {
		s.tick++
		b.lastUse = s.tick
		s.sealed = append(s.sealed, b)
		s.st.DiskBytes += b.size
		s.st.MetaBytes += b.metaSize
	}
	// Record the deaths found above (removeBucket would before each unlink
	// anyway); a failure leaves them to be found again next time.
	if err := s.writeDirty(); err != nil {
		s.st.WriteErrors++
		return nil
	}
	if err := s.reclaimEmpty(); err != nil {
		s.st.WriteErrors++
	}
	return nil
}

// quarantineDir makes DIR/quarantine, durably, and returns its path.
func (s *Store) quarantineDir() (string, error) {
	q := filepath.Join(s.o.Dir, bucketQuarDir)
	if err := s.fs.mkdirAll(q); err != nil {
		return "", s.transient(err)
	}
	return q, nil
}

// freeName is a name in q for name that nothing uses yet.
func (s *Store) freeName(q, name string) (string, error) {
	to := filepath.Join(q, name)
	for i := 1; ; i++ {
		var st unix.Stat_t
		err := s.fs.stat(to, &st)
		if errors.Is(err, unix.ENOENT) {
			return to, nil
		}
		if err != nil {
			return "", s.transient(err)
		}
		to = filepath.Join(q, fmt.Sprintf("%s.%d", name, i))
	}
}

// quarantine moves bucket id's files (exts) into DIR/quarantine: proven
// damage, so its blocks are not served, but nothing is deleted. The data
// file goes first: if the open stops between the two moves, the next one
// finds metadata without data (quarantined in turn), never data without
// metadata, which it would take for crash residue and remove.
func (s *Store) quarantine(rep *OpenReport, id uint64, why string, exts ...string) error {
	q, err := s.quarantineDir()
	if err != nil {
		return err
	}
	for _, ext := range exts {
		to, err := s.freeName(q, bucketFileName(id, ext))
		if err != nil {
			return err
		}
		if err := s.fs.rename(s.path(id, ext), to); err != nil {
			return s.transient(err)
		}
		rep.Quarantined = append(rep.Quarantined, filepath.Join(bucketQuarDir, filepath.Base(to)))
	}
	if err := s.fs.syncPath(q); err != nil {
		return s.transient(err)
	}
	if err := s.fs.syncDir(s.dirfd.Int(), s.o.Dir); err != nil {
		return s.transient(err)
	}
	rep.DiscardedBuckets = append(rep.DiscardedBuckets, fmt.Sprintf("%s: %s (moved to %s)", bucketFileName(id, ""), why, bucketQuarDir))
	return nil
}

// keepAside links a damaged bucket's files (exts) into DIR/quarantine
// before a repaired metadata file replaces them, or they are removed.
func (s *Store) keepAside(rep *OpenReport, id uint64, exts ...string) error {
	q, err := s.quarantineDir()
	if err != nil {
		return err
	}
	for _, ext := range exts {
		to, err := s.freeName(q, bucketFileName(id, ext))
		if err != nil {
			return err
		}
		if err := s.fs.link(s.path(id, ext), to); err != nil {
			return s.transient(err)
		}
		rep.Quarantined = append(rep.Quarantined, filepath.Join(bucketQuarDir, filepath.Base(to)))
	}
	if err := s.fs.syncPath(q); err != nil {
		return s.transient(err)
	}
	return nil
}

// unlinkBucket removes a bucket's files, metadata first: a data file left
// alone by a crash is removed on open. If the metadata cannot be removed
// the data stays too, and the caller keeps the bucket.
func (s *Store) unlinkBucket(id uint64) error {
	if err := s.fs.unlink(s.path(id, bucketMetaExt)); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	s.fs.unlink(s.path(id, bucketDataExt)) // if this fails the file is an orphan, removed on open
	return nil
}

func (s *Store) syncDir() error { return s.fs.syncDir(s.dirfd.Int(), s.o.Dir) }

// writeDirty records the deaths of every dirty sealed bucket.
func (s *Store) writeDirty() error { return s.writeDirtyBefore(^uint64(0)) }

// writeDirtyBefore writes the metadata of the dirty sealed buckets older
// than id, then fsyncs the directory: after it, no copy in them that is
// dead in memory can come back, whatever newer bucket goes.
func (s *Store) writeDirtyBefore(id uint64) error {
	wrote := false
	for _, b := range s.sealed {
		if b.id >= id || !b.dirty {
			continue
		}
		if err := s.writeMeta(b, false); err != nil {
			return &BucketError{Bucket: b.id, Op: "write metadata", Err: err}
		}
		wrote = true
	}
	if wrote {
		return s.syncDir()
	}
	return nil
}

// removeBucket deletes an empty sealed bucket: first the deaths of older
// buckets reach disk (this bucket may hold the newest entry of a key whose
// older copy is dead only in memory), then the files go, then the
// directory is synced. On an error the bucket stays, to be retried.
func (s *Store) removeBucket(b *bucket) error {
	if err := s.writeDirtyBefore(b.id); err != nil {
		return err
	}
	if err := s.unlinkBucket(b.id); err != nil {
		return &BucketError{Bucket: b.id, Op: "remove", Err: err}
	}
	s.closeFD(b)
	if i := slices.Index(s.sealed, b); i >= 0 {
		s.sealed = slices.Delete(s.sealed, i, i+1)
	}
	s.st.DiskBytes -= b.size
	s.st.MetaBytes -= b.metaSize
	b.ents = nil
	if err := s.syncDir(); err != nil {
		return &BucketError{Bucket: b.id, Op: "remove", Err: err}
	}
	return nil
}

// reclaimEmpty removes the sealed buckets with no live block whose deaths
// are all settled (none waits for the open bucket).
func (s *Store) reclaimEmpty() error {
	for i := 0; i < len(s.sealed); {
		b := s.sealed[i]
		if b.live > 0 || b.pend > 0 {
			i++
			continue
		}
		if err := s.removeBucket(b); err != nil {
			s.st.WriteErrors++
			return err
		}
	}
	return nil
}

// settle runs once the open bucket is sealed or gone: the deaths that
// waited for it may now reach disk, and their buckets be removed.
func (s *Store) settle() {
	for _, loc := range s.waiting {
		if e := &loc.b.ents[loc.i]; e.pend {
			e.pend = false
			loc.b.pend--
			loc.b.dirty = true
		}
	}
	s.waiting = s.waiting[:0]
}

func (s *Store) liveBuckets() int {
	n := 0
	for _, b := range s.sealed {
		if b.live > 0 {
			n++
		}
	}
	return n
}

// Put stores data under key, replacing any older copy. The block is copied
// into the open bucket's write buffer; it is durable once the bucket is
// sealed (when full, or at Flush/Close). Until then the copy it replaces
// stays on disk. On an I/O error writing or syncing the open bucket it
// fails as a whole: its blocks are dropped (and reported by Evicted), and
// the error wraps the errno (ENOSPC, EIO). A seal whose metadata write
// fails in a file-system call (open, rename, directory fsync) keeps the
// bucket open and is retried; Close drops it if that still fails.
func (s *Store) Put(key uint64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrBucketClosed
	}
	return s.put(key, data)
}

// PutBatch is Put for many blocks under one lock; it stops at the first
// error, leaving the later blocks unstored.
func (s *Store) PutBatch(keys []uint64, data [][]byte) error {
	if len(keys) != len(data) {
		return fmt.Errorf("bucket store: %d keys, %d blocks", len(keys), len(data))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrBucketClosed
	}
	for i, k := range keys {
		if err := s.put(k, data[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) put(key uint64, data []byte) error {
	size := int64(len(data))
	padded := bucketAlignUp(size, s.align)
	if b := s.open; b != nil && len(b.ents) > 0 && (len(b.ents) >= s.o.MaxKeys || b.size+padded > s.o.BucketBytes) {
		if err := s.seal(); err != nil {
			return err
		}
	}
	if s.open == nil {
		if err := s.newBucket(); err != nil {
			return err
		}
	}
	b := s.open
	off := b.size
	crc := bucketChecksum(data)
	for rest := data; len(rest) > 0; {
		if s.fill == len(s.wbuf) {
			if err := s.flushBuf(); err != nil {
				return s.failOpen("write data", err)
			}
		}
		n := copy(s.wbuf[s.fill:], rest)
		s.fill += n
		rest = rest[n:]
	}
	// The pad stays inside the buffer: the block starts aligned and the
	// buffer's length is a multiple of the alignment.
	pad := int(padded - size)
	clear(s.wbuf[s.fill : s.fill+pad])
	s.fill += pad
	b.size += padded
	s.st.DiskBytes += padded
	if old, ok := s.index[key]; ok {
		// A sealed copy stays the durable one until this bucket is sealed.
		s.markDead(old, old.b.sealed)
	}
	b.ents = append(b.ents, bucketEntry{key: key, off: off, size: size, crc: crc})
	b.live++
	s.index[key] = bucketLoc{b, len(b.ents) - 1}
	s.st.LiveBytes += size
	s.maybeEvict()
	return nil
}

func (s *Store) newBucket() error {
	id := s.nextID
	s.nextID++
	fd, err := s.fs.open(s.path(id, bucketDataExt), unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|s.dflag, 0o644)
	if err != nil {
		s.st.WriteErrors++
		return &BucketError{Bucket: id, Op: "create", Err: err}
	}
	s.openFDs++
	s.open = &bucket{id: id, fd: sys.Own(fd), align: s.align, direct: s.dflag != 0, created: time.Now().UnixNano(),
		ents: make([]bucketEntry, 0, s.o.MaxKeys)}
	s.bufBase, s.fill = 0, 0
	return nil
}

// flushBuf streams the filled part of the write buffer (a multiple of the
// alignment) to the open bucket's data file, one request per MiB.
func (s *Store) flushBuf() error {
	b := s.open
	ops := s.ops[:0]
	for off := 0; off < s.fill; off += bucketIOChunk {
		end := min(off+bucketIOChunk, s.fill)
		ops = append(ops, ioengine.Op{Write: true, FD: b.fd.Int(), Off: s.bufBase + int64(off), Buf: s.wbuf[off:end]})
	}
	err := s.eng.Do(ops)
	for i := range ops {
		s.st.BytesWritten += int64(ops[i].N)
		if err == nil && ops[i].N != len(ops[i].Buf) {
			err = fmt.Errorf("short write at offset %d: %d of %d bytes", ops[i].Off, ops[i].N, len(ops[i].Buf))
		}
	}
	if err != nil {
		return err
	}
	s.bufBase += int64(s.fill)
	s.fill = 0
	return nil
}

func (s *Store) fdatasync(fd int) error {
	if y, ok := s.eng.(bucketSyncer); ok {
		return y.Fdatasync(fd)
	}
	for {
		if err := unix.Fdatasync(fd); err != unix.EINTR {
			return err
		}
	}
}

// seal makes the open bucket durable: data, fdatasync, then metadata.
func (s *Store) seal() error {
	b := s.open
	if b == nil {
		return nil
	}
	if b.live == 0 {
		// Everything in it was deleted or replaced: nothing to keep. It
		// has no metadata, so it holds no tombstone either.
		s.closeFD(b)
		s.fs.unlink(s.path(b.id, bucketDataExt)) // else removed on open
		s.st.DiskBytes -= b.size
		s.open, s.bufBase, s.fill = nil, 0, 0
		s.settle()
		s.reclaimEmpty()
		return nil
	}
	if s.fill > 0 {
		if err := s.flushBuf(); err != nil {
			return s.failOpen("write data", err)
		}
	}
	if err := s.fdatasync(b.fd.Int()); err != nil {
		return s.failOpen("sync data", err)
	}
	if err := s.writeMeta(b, true); err != nil {
		var fe *metaFSError
		if errors.As(err, &fe) {
			// Its data is written and synced; only a file-system call of
			// the metadata write failed (EMFILE, EIO on a rename): keep
			// the bucket open, to be sealed again by the next put that
			// finds it full, Flush or Close, rather than drop its blocks.
			s.st.WriteErrors++
			return &BucketError{Bucket: b.id, Op: "write metadata", Err: fe.err}
		}
		return s.failOpen("write metadata", err)
	}
	b.sealed = true
	s.tick++
	b.lastUse = s.tick
	s.sealed = append(s.sealed, b)
	s.open, s.bufBase, s.fill = nil, 0, 0
	if s.testSealed != nil {
		var keys []uint64
		for _, e := range b.ents {
			if !e.dead {
				keys = append(keys, e.key)
			}
		}
		s.testSealed(keys)
	}
	s.settle()
	s.reclaimEmpty()
	s.maybeEvict()
	return nil
}

// failOpen drops the open bucket after a write error: its blocks are never
// served, its files are removed, earlier buckets are untouched.
func (s *Store) failOpen(op string, err error) error {
	b := s.open
	for i := range b.ents {
		e := &b.ents[i]
		if e.dead {
			continue
		}
		delete(s.index, e.key)
		s.evicted = append(s.evicted, e.key)
		s.st.LostBlocks++
		s.st.LiveBytes -= e.size
	}
	s.closeFD(b)
	s.fs.unlink(s.path(b.id, bucketMetaExt))
	s.fs.unlink(s.path(b.id, bucketDataExt))
	s.st.DiskBytes -= b.size
	s.st.MetaBytes -= b.metaSize
	s.st.FailedBuckets++
	s.st.WriteErrors++
	s.open, s.bufBase, s.fill = nil, 0, 0
	s.settle()
	s.reclaimEmpty()
	return &BucketError{Bucket: b.id, Op: op, Err: err}
}

// writeMeta writes b's metadata durably: temp file, fdatasync, rename,
// directory fsync (when syncDir). It clears b.dirty.
func (s *Store) writeMeta(b *bucket, syncDir bool) error {
	m := bucketMeta{id: b.id, align: b.align, dataSize: b.size, created: b.created, ents: b.ents}
	n := bucketMetaSize(len(b.ents))
	if n > len(s.mbuf) {
		// Only a reopened bucket with more keys than MaxKeys gets here.
		// The engine never saw a replacement buffer: unmap the last one.
		a, err := ioengine.NewArena(n)
		if err != nil {
			return err
		}
		if s.ma != nil {
			s.ma.Close()
		}
		s.ma, s.mbuf = a, a.Bytes()
	}
	encodeBucketMeta(s.mbuf, &m)
	tmp := s.path(b.id, bucketTmpExt)
	fd, err := s.fs.open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &metaFSError{err}
	}
	s.ops[0] = ioengine.Op{Write: true, FD: fd, Buf: s.mbuf[:n]}
	err = s.eng.Do(s.ops[:1])
	s.st.BytesWritten += int64(s.ops[0].N)
	if err == nil && s.ops[0].N != n {
		err = fmt.Errorf("short metadata write: %d of %d bytes", s.ops[0].N, n)
	}
	if err == nil {
		err = s.fdatasync(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		if err = s.fs.rename(tmp, s.path(b.id, bucketMetaExt)); err != nil {
			err = &metaFSError{err}
		}
	}
	if err != nil {
		s.fs.unlink(tmp)
		return err
	}
	s.st.MetaBytes += int64(n) - b.metaSize
	b.metaSize = int64(n)
	b.dirty = false
	if syncDir {
		if err := s.syncDir(); err != nil {
			return &metaFSError{err}
		}
	}
	return nil
}

// metaFSError is a metadata write that failed in a file-system call (the
// temporary file's open, the rename, the directory fsync) rather than in
// writing or syncing the bytes: redoing the whole write is safe.
type metaFSError struct{ err error }

func (e *metaFSError) Error() string { return e.err.Error() }
func (e *metaFSError) Unwrap() error { return e.err }

// markDead forgets the block at loc (deleted, replaced, evicted or
// corrupt). pend: it was replaced by a copy in the open bucket, so the
// death waits for that bucket's seal. The caller removes a sealed bucket
// left empty (reclaimEmpty), or leaves it to the next seal or Flush.
func (s *Store) markDead(loc bucketLoc, pend bool) {
	b := loc.b
	e := &b.ents[loc.i]
	e.dead = true
	b.live--
	s.st.LiveBytes -= e.size
	if !b.sealed {
		return
	}
	if pend {
		e.pend = true
		b.pend++
		s.waiting = append(s.waiting, loc)
	} else {
		b.dirty = true
	}
}

func (s *Store) closeFD(b *bucket) {
	if b.fd.Valid() {
		b.fd.Close()
		s.openFDs--
	}
}

// maybeEvict removes whole sealed buckets, FIFO or LRU, once the data on
// disk passes the high watermark, until it is back under the low one.
func (s *Store) maybeEvict() {
	c := float64(s.o.Capacity)
	if c <= 0 || float64(s.st.DiskBytes) <= s.o.HighWater*c {
		return
	}
	for float64(s.st.DiskBytes) > s.o.LowWater*c && len(s.sealed) > 0 {
		v := 0
		if s.o.Evict == "lru" {
			for i, b := range s.sealed {
				if b.lastUse < s.sealed[v].lastUse {
					v = i
				}
			}
		}
		b := s.sealed[v]
		if b.pend > 0 && s.open != nil {
			// It holds the durable copies of blocks replaced in the open
			// bucket: seal that first, or a crash would lose both. If
			// the seal fails and the bucket stays open, evict later.
			if err := s.seal(); err != nil && s.open != nil {
				return
			}
			continue
		}
		if b.live > 0 {
			s.st.EvictedBuckets++
		}
		if s.testEvicting != nil {
			var keys []uint64
			for _, e := range b.ents {
				if !e.dead {
					keys = append(keys, e.key)
				}
			}
			s.testEvicting(keys)
		}
		for i := range b.ents {
			if e := &b.ents[i]; !e.dead {
				delete(s.index, e.key)
				s.evicted = append(s.evicted, e.key)
				s.st.EvictedBlocks++
				s.markDead(bucketLoc{b, i}, false)
			}
		}
		if err := s.removeBucket(b); err != nil {
			// Left on disk, empty, for the next seal or Flush to retry;
			// stop rather than spin on it.
			s.st.WriteErrors++
			return
		}
	}
}

// fdFor opens a sealed bucket's data file for reading if it is not open,
// closing the least recently used one beyond MaxOpenFiles.
func (s *Store) fdFor(b *bucket) (int, error) {
	if b.fd.Valid() {
		return b.fd.Int(), nil
	}
	if s.openFDs >= s.o.MaxOpenFiles {
		var v *bucket
		for _, c := range s.sealed {
			if c.fd.Valid() && c != b && (v == nil || c.lastUse < v.lastUse) {
				v = c
			}
		}
		if v != nil {
			s.closeFD(v)
		}
	}
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if b.direct {
		flags |= unix.O_DIRECT
	}
	fd, err := s.fs.open(s.path(b.id, bucketDataExt), flags, 0)
	if err != nil {
		return -1, err
	}
	b.fd = sys.Own(fd)
	s.openFDs++
	return fd, nil
}

// Has says whether key is stored (sealed or in the open bucket).
func (s *Store) Has(key uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.index[key]
	return ok && !s.closed
}

// Size is the length of key's block.
func (s *Store) Size(key uint64) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	loc, ok := s.index[key]
	if !ok {
		return 0, false
	}
	return int(loc.b.ents[loc.i].size), true
}

// Keys lists the stored keys, e.g. to rebuild a caller's index after open.
func (s *Store) Keys() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]uint64, 0, len(s.index))
	for k := range s.index {
		keys = append(keys, k)
	}
	return keys
}

// Get reads key's block into dst and returns its length. It reads the
// block's 4 KiB-aligned superset and checks the CRC32-C before copying; a
// block that fails is never copied, is dropped from the store, and the
// error wraps ErrBucketChecksum. A dst too small gets the length and
// ErrBucketShortDst.
func (s *Store) Get(key uint64, dst []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrBucketClosed
	}
	return s.get(key, dst)
}

func (s *Store) get(key uint64, dst []byte) (int, error) {
	loc, ok := s.index[key]
	if !ok {
		return 0, ErrBucketNotFound
	}
	b := loc.b
	e := b.ents[loc.i]
	if int64(len(dst)) < e.size {
		return int(e.size), ErrBucketShortDst
	}
	s.tick++
	b.lastUse = s.tick
	buf, err := s.readBuf(bucketAlignUp(e.size, b.align))
	if err != nil {
		return 0, err
	}
	if !b.sealed {
		err = s.readOpen(&e, buf)
	} else {
		err = s.readSealed(b, &e, buf)
	}
	if err != nil {
		s.st.ReadErrors++
		return 0, &BucketError{Bucket: b.id, Op: "read", Key: key, Err: err}
	}
	if bucketChecksum(buf[:e.size]) != e.crc {
		return 0, s.corrupt(key, b)
	}
	return copy(dst, buf[:e.size]), nil
}

// corrupt drops a block whose checksum failed.
func (s *Store) corrupt(key uint64, b *bucket) error {
	s.st.ChecksumErrors++
	if loc, ok := s.index[key]; ok && loc.b == b {
		delete(s.index, key)
		s.markDead(loc, false)
		if b.sealed && b.live == 0 {
			s.reclaimEmpty()
		}
	}
	return &BucketError{Bucket: b.id, Op: "verify", Key: key, Err: ErrBucketChecksum}
}

// readBuf returns n bytes of the read arena, replacing it with a larger one
// when a block does not fit.
func (s *Store) readBuf(n int64) ([]byte, error) {
	if n > int64(len(s.rbuf)) {
		a, err := ioengine.NewArena(int(n))
		if err != nil {
			return nil, err
		}
		// The engine may have registered the first arena: keep that one
		// mapped so that a new mapping can never take its address while
		// registered. Larger ones it never saw: unmap the last.
		if s.ra != s.ra0 {
			s.ra.Close()
		}
		s.ra, s.rbuf = a, a.Bytes()
	}
	return s.rbuf[:n], nil
}

// readOpen assembles a block of the open bucket: the part already streamed
// to the data file is read back, the rest copied from the write buffer.
func (s *Store) readOpen(e *bucketEntry, buf []byte) error {
	end := e.off + e.size
	if e.off >= s.bufBase {
		copy(buf, s.wbuf[e.off-s.bufBase:end-s.bufBase])
		return nil
	}
	ondisk := min(e.off+int64(len(buf)), s.bufBase) - e.off
	if err := s.readAt(s.open.fd.Int(), e.off, buf[:ondisk]); err != nil {
		return err
	}
	if end > s.bufBase {
		copy(buf[ondisk:e.size], s.wbuf[:end-s.bufBase])
	}
	return nil
}

func (s *Store) readSealed(b *bucket, e *bucketEntry, buf []byte) error {
	fd, err := s.fdFor(b)
	if err != nil {
		return err
	}
	return s.readAt(fd, e.off, buf)
}

// readAt reads buf at off in requests of up to 1 MiB, a queue's worth per
// engine call.
func (s *Store) readAt(fd int, off int64, buf []byte) error {
	for len(buf) > 0 {
		ops := s.ops[:0]
		for len(buf) > 0 && len(ops) < cap(ops) {
			n := min(len(buf), bucketIOChunk)
			ops = append(ops, ioengine.Op{FD: fd, Off: off, Buf: buf[:n]})
			off += int64(n)
			buf = buf[n:]
		}
		err := s.eng.Do(ops)
		for i := range ops {
			s.st.BytesRead += int64(ops[i].N)
			if err == nil && ops[i].N != len(ops[i].Buf) {
				err = fmt.Errorf("short read at offset %d: %d of %d bytes", ops[i].Off, ops[i].N, len(ops[i].Buf))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// GetBatch is Get for many keys: the reads of sealed blocks go to the
// engine together, up to the queue depth and the read buffer's size at a
// time. n[i] and errs[i] get key i's result (n and errs need len(keys)
// elements); the first error is returned.
func (s *Store) GetBatch(keys []uint64, dst [][]byte, n []int, errs []error) error {
	if len(dst) < len(keys) || len(n) < len(keys) || len(errs) < len(keys) {
		return fmt.Errorf("bucket store: batch of %d keys needs as many dst, n and errs", len(keys))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrBucketClosed
	}
	var first error
	set := func(i, got int, err error) { bucketSet(n, errs, &first, i, got, err) }
	used := 0 // bytes of rbuf given to pending reads
	s.pend = s.pend[:0]
	nops := 0
	for i, key := range keys {
		loc, ok := s.index[key]
		if !ok {
			set(i, 0, ErrBucketNotFound)
			continue
		}
		b := loc.b
		e := b.ents[loc.i]
		if int64(len(dst[i])) < e.size {
			set(i, int(e.size), ErrBucketShortDst)
			continue
		}
		padded := bucketAlignUp(e.size, b.align)
		chunks := int((padded + bucketIOChunk - 1) / bucketIOChunk)
		single := !b.sealed || padded > int64(len(s.rbuf)) || chunks > len(s.ops)
		if single || !b.fd.Valid() || int64(used)+padded > int64(len(s.rbuf)) || nops+chunks > len(s.ops) {
			// Run what is queued first: the open bucket and big blocks take
			// Get's path, a new fd may close one in use, and a full buffer
			// or queue must drain. Draining may drop a corrupt block, so
			// look the key up again.
			s.drain(nops, dst, n, errs, &first)
			used, nops = 0, 0
			if loc, ok = s.index[key]; !ok {
				set(i, 0, ErrBucketNotFound)
				continue
			}
			b, e = loc.b, loc.b.ents[loc.i]
		}
		if single {
			got, err := s.get(key, dst[i])
			set(i, got, err)
			continue
		}
		s.tick++
		b.lastUse = s.tick
		fd, err := s.fdFor(b)
		if err != nil {
			s.st.ReadErrors++
			set(i, 0, &BucketError{Bucket: b.id, Op: "read", Key: key, Err: err})
			continue
		}
		p := bucketPending{i: i, b: b, key: key, size: e.size, crc: e.crc, buf: s.rbuf[used : int64(used)+padded], op0: nops}
		for off := int64(0); off < padded; off += bucketIOChunk {
			end := min(off+bucketIOChunk, padded)
			s.ops[nops] = ioengine.Op{FD: fd, Off: e.off + off, Buf: p.buf[off:end]}
			nops++
		}
		p.op1 = nops
		used += int(padded)
		s.pend = append(s.pend, p)
	}
	s.drain(nops, dst, n, errs, &first)
	return first
}

// drain runs the queued reads of GetBatch and delivers each block.
func (s *Store) drain(nops int, dst [][]byte, n []int, errs []error, first *error) {
	set := func(i, got int, err error) { bucketSet(n, errs, first, i, got, err) }
	if len(s.pend) == 0 {
		return
	}
	s.eng.Do(s.ops[:nops])
	for _, p := range s.pend {
		var err error
		for i := p.op0; i < p.op1; i++ {
			op := &s.ops[i]
			s.st.BytesRead += int64(op.N)
			if err == nil && op.Err != nil {
				err = op.Err
			} else if err == nil && op.N != len(op.Buf) {
				err = fmt.Errorf("short read at offset %d: %d of %d bytes", op.Off, op.N, len(op.Buf))
			}
		}
		switch {
		case err != nil:
			s.st.ReadErrors++
			set(p.i, 0, &BucketError{Bucket: p.b.id, Op: "read", Key: p.key, Err: err})
		case bucketChecksum(p.buf[:p.size]) != p.crc:
			set(p.i, 0, s.corrupt(p.key, p.b))
		default:
			set(p.i, copy(dst[p.i], p.buf[:p.size]), nil)
		}
	}
	s.pend = s.pend[:0]
}

func bucketSet(n []int, errs []error, first *error, i, got int, err error) {
	n[i], errs[i] = got, err
	if err != nil && *first == nil {
		*first = err
	}
}

// Delete forgets key. A sealed bucket left with no live block is removed
// from disk (after the deaths of older buckets are recorded); the death of
// a block in a surviving bucket reaches its metadata at the next Flush or
// Close: a crash before that may bring the block back.
func (s *Store) Delete(key uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	loc, ok := s.index[key]
	if !ok {
		return false
	}
	delete(s.index, key)
	s.markDead(loc, false)
	if loc.b.sealed && loc.b.live == 0 {
		s.reclaimEmpty()
	}
	return true
}

// Flush seals the open bucket and records deletions in the metadata of the
// sealed buckets that have them. If the seal fails, the deletions are
// recorded all the same, and the seal's error is returned.
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrBucketClosed
	}
	return s.flush()
}

func (s *Store) flush() error {
	first := s.seal()
	if err := s.reclaimEmpty(); err != nil && first == nil {
		first = err
	}
	if err := s.writeDirty(); err != nil {
		s.st.WriteErrors++
		if first == nil {
			first = err
		}
	}
	return first
}

// Stats returns the counters.
func (s *Store) Stats() StoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.LiveBlocks = len(s.index)
	st.Buckets = s.liveBuckets()
	if s.open != nil {
		st.OpenBlocks = s.open.live
	}
	return st
}

// Evicted returns the keys dropped since the last call without a Delete:
// by bucket eviction, or with a bucket whose write failed. The caller
// forgets them.
func (s *Store) Evicted() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.evicted
	s.evicted = nil
	return ev
}

// Close flushes (sealing the open bucket) and releases every fd, buffer
// and, if the store made it, the engine. The flush's error is returned.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	err := s.flush()
	if s.open != nil {
		// The seal failed and left the bucket open: this was its last
		// chance. Drop it, so that its blocks are reported lost.
		s.failOpen("write metadata", err)
	}
	s.release()
	return err
}

func (s *Store) release() {
	s.closed = true
	if s.open != nil {
		s.closeFD(s.open)
	}
	for _, b := range s.sealed {
		s.closeFD(b)
	}
	if s.ownEng && s.eng != nil {
		s.eng.Close()
	}
	if s.ra != s.ra0 && s.ra != nil {
		s.ra.Close()
	}
	for _, a := range []*ioengine.Arena{s.wa, s.ma, s.ra0} {
		if a != nil {
			a.Close()
		}
	}
	s.wa, s.ma, s.ra, s.ra0, s.wbuf, s.mbuf, s.rbuf = nil, nil, nil, nil, nil, nil, nil
	s.dirfd.Close()
}
