//go:build linux

package hw

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// BucketStore is the SSD tier's on-disk store, modelled on Mooncake's
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
// points only at durable data. A data file without metadata is discarded on
// open.
//
// Get serves blocks of the open bucket too (from the write buffer, or from
// the part already streamed to its data file): they are this process's own
// writes, still checked against their CRC. They become durable only when
// the bucket is sealed. Deletions reach disk (as dead flags in the metadata)
// at Flush/Close; after a crash before that, deleted blocks may reappear.
//
// All methods are safe for concurrent use; one mutex serialises them, and
// the batch methods are how to get queue depth.
type BucketStore struct {
	mu     sync.Mutex
	o      StoreOptions
	dirfd  int // held open for fsync and as the flock that keeps other processes out
	eng    Engine
	ownEng bool
	dflag  int // unix.O_DIRECT or 0
	align  int64
	closed bool

	wa      *Arena // write buffer then metadata buffer
	wbuf    []byte
	mbuf    []byte
	ra      *Arena // read buffer
	rbuf    []byte
	retired []*Arena // replaced buffers, unmapped only after the engine closes (it may have registered them)
	ops     []Op
	pend    []bucketPending

	index   map[uint64]bucketLoc
	open    *bucket // the unsealed bucket, nil when none
	bufBase int64   // data file offset of wbuf[0]
	fill    int     // bytes of wbuf in use
	sealed  []*bucket
	nextID  uint64
	tick    uint64
	openFDs int

	evicted []uint64
	st      StoreStats
}

const (
	bucketIOChunk   = 1 << 20 // size of one write or read request; 1 MiB as in the platform notes
	bucketMinAlign  = 4096    // blocks start on 4 KiB so a read is exactly the 4 KiB-aligned superset
	bucketDefMaxFDs = 256
)

type bucket struct {
	id       uint64
	fd       int // -1: not open (sealed buckets reopen on demand)
	sealed   bool
	dirty    bool // has deaths its metadata file does not record yet
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

// OpenBucketStore opens (creating if needed) the store in o.Dir and
// rebuilds its index from the metadata files, deleting and reporting torn
// or unreadable buckets. Block checksums are checked at Get, not here.
func OpenBucketStore(o StoreOptions) (*BucketStore, OpenReport, error) {
	var rep OpenReport
	if err := bucketDefaults(&o); err != nil {
		return nil, rep, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, rep, err
	}
	dirfd, err := unix.Open(o.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, rep, &os.PathError{Op: "open", Path: o.Dir, Err: err}
	}
	if err := unix.Flock(dirfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(dirfd)
		return nil, rep, fmt.Errorf("bucket store %s: in use by another process (flock: %w)", o.Dir, err)
	}
	s := &BucketStore{o: o, dirfd: dirfd, align: bucketMinAlign, index: make(map[uint64]bucketLoc)}
	ok := false
	defer func() {
		if !ok {
			s.release()
		}
	}()
	if o.Direct {
		if _, a, err := ProbeDirectIO(o.Dir); err != nil {
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
	if s.wa, err = NewArena(wsize + msize); err != nil {
		return nil, rep, err
	}
	s.wbuf = s.wa.Slice(0, wsize)
	s.mbuf = s.wa.Bytes()[wsize:]
	if s.ra, err = NewArena(wsize); err != nil {
		return nil, rep, err
	}
	s.rbuf = s.ra.Bytes()
	s.ops = make([]Op, max(o.QueueDepth, wsize/bucketIOChunk+1))
	s.pend = make([]bucketPending, 0, len(s.ops))

	s.eng = o.Engine
	if s.eng == nil {
		mode := o.EngineMode
		if mode == "" {
			mode = "pread"
		}
		if s.eng, rep.EngineNote, err = NewEngine(mode, o.QueueDepth, s.wa, s.ra); err != nil {
			return nil, rep, err
		}
		s.ownEng = true
	}
	rep.Engine = s.eng.Name()

	if err := s.load(&rep); err != nil {
		return nil, rep, err
	}
	rep.Buckets, rep.Blocks = len(s.sealed), len(s.index)
	ok = true
	return s, rep, nil
}

func bucketDefaults(o *StoreOptions) error {
	if o.Dir == "" {
		return errors.New("bucket store: no directory")
	}
	if o.BucketBytes <= 0 {
		o.BucketBytes = 256 << 20
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
		o.QueueDepth = DefaultQueueDepth
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = bucketDefMaxFDs
	}
	return nil
}

func (s *BucketStore) path(id uint64, ext string) string {
	return filepath.Join(s.o.Dir, bucketFileName(id, ext))
}

// load rebuilds the index from the metadata files.
func (s *BucketStore) load(rep *OpenReport) error {
	des, err := os.ReadDir(s.o.Dir)
	if err != nil {
		return err
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
	ids := make([]uint64, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	discard := func(id uint64, why string) {
		rep.DiscardedBuckets = append(rep.DiscardedBuckets, fmt.Sprintf("%s: %s", bucketFileName(id, ""), why))
		s.unlinkBucket(id)
	}
	var good []*bucket
	seen := map[uint64]struct{}{}
	for _, id := range slices.Backward(ids) {
		f := found[id]
		if f.tmp {
			// A metadata write that never reached its rename.
			unix.Unlink(s.path(id, bucketTmpExt))
		}
		switch {
		case !f.meta && f.data && f.tmp:
			discard(id, "data file without metadata (metadata write interrupted)")
			continue
		case !f.meta && f.data:
			discard(id, "data file without metadata")
			continue
		case !f.meta:
			continue
		case !f.data:
			discard(id, "metadata without data file")
			continue
		}
		raw, err := os.ReadFile(s.path(id, bucketMetaExt))
		if err != nil {
			discard(id, fmt.Sprintf("metadata unreadable: %v", err))
			continue
		}
		m, err := decodeBucketMeta(raw, id)
		if err != nil {
			discard(id, err.Error())
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(s.path(id, bucketDataExt), &st); err != nil {
			discard(id, fmt.Sprintf("data file unreadable: %v", err))
			continue
		}
		if st.Size < m.dataSize {
			discard(id, fmt.Sprintf("data file shorter than recorded (%d < %d bytes)", st.Size, m.dataSize))
			continue
		}
		if m.align%s.align != 0 && s.dflag != 0 {
			discard(id, fmt.Sprintf("written with %d-byte alignment; this filesystem needs %d", m.align, s.align))
			continue
		}
		b := &bucket{id: id, fd: -1, sealed: true, align: m.align, size: m.dataSize,
			metaSize: int64(len(raw)), created: m.created, ents: m.ents}
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
		good = append(good, b)
	}
	slices.Reverse(good)
	// Record the deaths found above before deleting dead buckets: those
	// may hold the only tombstone of an older copy.
	var rewriteErr error
	for _, b := range good {
		if b.dirty && b.live > 0 && rewriteErr == nil {
			if rewriteErr = s.writeMeta(b, false); rewriteErr == nil {
				b.dirty = false
			}
		}
	}
	if rewriteErr == nil {
		rewriteErr = unix.Fsync(s.dirfd)
	}
	for _, b := range good {
		if b.live == 0 {
			if rewriteErr == nil {
				s.unlinkBucket(b.id)
			}
			continue
		}
		s.tick++
		b.lastUse = s.tick
		s.sealed = append(s.sealed, b)
		s.st.DiskBytes += b.size
		s.st.MetaBytes += b.metaSize
	}
	return nil
}

// unlinkBucket removes a bucket's files, metadata first: a data file left
// alone by a crash is discarded on open, a metadata file alone would be too.
func (s *BucketStore) unlinkBucket(id uint64) {
	for _, ext := range [...]string{bucketMetaExt, bucketTmpExt, bucketDataExt} {
		unix.Unlink(s.path(id, ext))
	}
}

// Put stores data under key, replacing any older copy. The block is copied
// into the open bucket's write buffer; it is durable once the bucket is
// sealed (when full, or at Flush/Close). On an I/O error the open bucket
// fails as a whole: its blocks are dropped (and reported by Evicted), and
// the error wraps the errno (ENOSPC, EIO).
func (s *BucketStore) Put(key uint64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrBucketClosed
	}
	return s.put(key, data)
}

// PutBatch is Put for many blocks under one lock; it stops at the first
// error, leaving the later blocks unstored.
func (s *BucketStore) PutBatch(keys []uint64, data [][]byte) error {
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

func (s *BucketStore) put(key uint64, data []byte) error {
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
		s.markDead(old)
	}
	b.ents = append(b.ents, bucketEntry{key: key, off: off, size: size, crc: crc})
	b.live++
	s.index[key] = bucketLoc{b, len(b.ents) - 1}
	s.st.LiveBytes += size
	s.maybeEvict()
	return nil
}

func (s *BucketStore) newBucket() error {
	id := s.nextID
	s.nextID++
	fd, err := unix.Open(s.path(id, bucketDataExt), unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|s.dflag, 0o644)
	if err != nil {
		s.st.WriteErrors++
		return &BucketError{Bucket: id, Op: "create", Err: err}
	}
	s.openFDs++
	s.open = &bucket{id: id, fd: fd, align: s.align, created: time.Now().UnixNano(),
		ents: make([]bucketEntry, 0, s.o.MaxKeys)}
	s.bufBase, s.fill = 0, 0
	return nil
}

// flushBuf streams the filled part of the write buffer (a multiple of the
// alignment) to the open bucket's data file, one request per MiB.
func (s *BucketStore) flushBuf() error {
	b := s.open
	ops := s.ops[:0]
	for off := 0; off < s.fill; off += bucketIOChunk {
		end := min(off+bucketIOChunk, s.fill)
		ops = append(ops, Op{Write: true, FD: b.fd, Off: s.bufBase + int64(off), Buf: s.wbuf[off:end]})
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

func (s *BucketStore) fdatasync(fd int) error {
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
func (s *BucketStore) seal() error {
	b := s.open
	if b == nil {
		return nil
	}
	if b.live == 0 {
		// Everything in it was deleted or replaced: nothing to keep.
		s.closeFD(b)
		s.unlinkBucket(b.id)
		s.st.DiskBytes -= b.size
		s.open, s.bufBase, s.fill = nil, 0, 0
		return nil
	}
	if s.fill > 0 {
		if err := s.flushBuf(); err != nil {
			return s.failOpen("write data", err)
		}
	}
	if err := s.fdatasync(b.fd); err != nil {
		return s.failOpen("sync data", err)
	}
	if err := s.writeMeta(b, true); err != nil {
		return s.failOpen("write metadata", err)
	}
	b.sealed, b.dirty = true, false
	s.tick++
	b.lastUse = s.tick
	s.sealed = append(s.sealed, b)
	s.st.MetaBytes += b.metaSize
	s.open, s.bufBase, s.fill = nil, 0, 0
	s.maybeEvict()
	return nil
}

// failOpen drops the open bucket after a write error: its blocks are never
// served, its files are removed, earlier buckets are untouched.
func (s *BucketStore) failOpen(op string, err error) error {
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
	s.unlinkBucket(b.id)
	s.st.DiskBytes -= b.size
	s.st.FailedBuckets++
	s.st.WriteErrors++
	s.open, s.bufBase, s.fill = nil, 0, 0
	return &BucketError{Bucket: b.id, Op: op, Err: err}
}

// writeMeta writes b's metadata durably: temp file, fdatasync, rename,
// directory fsync (when syncDir).
func (s *BucketStore) writeMeta(b *bucket, syncDir bool) error {
	m := bucketMeta{id: b.id, align: b.align, dataSize: b.size, created: b.created, ents: b.ents}
	n := bucketMetaSize(len(b.ents))
	if n > len(s.mbuf) {
		// Only a reopened bucket with more keys than MaxKeys gets here.
		a, err := NewArena(n)
		if err != nil {
			return err
		}
		s.retired = append(s.retired, a)
		s.mbuf = a.Bytes()
	}
	encodeBucketMeta(s.mbuf, &m)
	tmp := s.path(b.id, bucketTmpExt)
	fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	s.ops[0] = Op{Write: true, FD: fd, Buf: s.mbuf[:n]}
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
		err = unix.Rename(tmp, s.path(b.id, bucketMetaExt))
	}
	if err == nil && syncDir {
		err = unix.Fsync(s.dirfd)
	}
	if err != nil {
		unix.Unlink(tmp)
		return err
	}
	b.metaSize = int64(n)
	return nil
}

// markDead forgets the block at loc (deleted, replaced or corrupt). A
// sealed bucket left with no live block is removed from disk.
func (s *BucketStore) markDead(loc bucketLoc) {
	b := loc.b
	e := &b.ents[loc.i]
	e.dead = true
	b.live--
	s.st.LiveBytes -= e.size
	if b.sealed {
		b.dirty = true
		if b.live == 0 {
			s.removeSealed(b)
		}
	}
}

// removeSealed deletes a sealed bucket; the caller has dealt with its
// live keys.
func (s *BucketStore) removeSealed(b *bucket) {
	s.closeFD(b)
	s.unlinkBucket(b.id)
	if i := slices.Index(s.sealed, b); i >= 0 {
		s.sealed = slices.Delete(s.sealed, i, i+1)
	}
	s.st.DiskBytes -= b.size
	s.st.MetaBytes -= b.metaSize
	b.ents = nil
}

func (s *BucketStore) closeFD(b *bucket) {
	if b.fd >= 0 {
		unix.Close(b.fd)
		b.fd = -1
		s.openFDs--
	}
}

// maybeEvict removes whole sealed buckets, FIFO or LRU, once the data on
// disk passes the high watermark, until it is back under the low one.
func (s *BucketStore) maybeEvict() {
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
		for i := range b.ents {
			if e := &b.ents[i]; !e.dead {
				delete(s.index, e.key)
				s.evicted = append(s.evicted, e.key)
				s.st.LiveBytes -= e.size
				s.st.EvictedBlocks++
			}
		}
		s.st.EvictedBuckets++
		s.removeSealed(b)
	}
}

// fdFor opens a sealed bucket's data file for reading if it is not open,
// closing the least recently used one beyond MaxOpenFiles.
func (s *BucketStore) fdFor(b *bucket) (int, error) {
	if b.fd >= 0 {
		return b.fd, nil
	}
	if s.openFDs >= s.o.MaxOpenFiles {
		var v *bucket
		for _, c := range s.sealed {
			if c.fd >= 0 && c != b && (v == nil || c.lastUse < v.lastUse) {
				v = c
			}
		}
		if v != nil {
			s.closeFD(v)
		}
	}
	fd, err := unix.Open(s.path(b.id, bucketDataExt), unix.O_RDONLY|unix.O_CLOEXEC|s.dflag, 0)
	if err != nil {
		return -1, err
	}
	b.fd = fd
	s.openFDs++
	return fd, nil
}

// Has says whether key is stored (sealed or in the open bucket).
func (s *BucketStore) Has(key uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.index[key]
	return ok
}

// Size is the length of key's block.
func (s *BucketStore) Size(key uint64) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	loc, ok := s.index[key]
	if !ok {
		return 0, false
	}
	return int(loc.b.ents[loc.i].size), true
}

// Keys lists the stored keys, e.g. to rebuild a caller's index after open.
func (s *BucketStore) Keys() []uint64 {
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
func (s *BucketStore) Get(key uint64, dst []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrBucketClosed
	}
	return s.get(key, dst)
}

func (s *BucketStore) get(key uint64, dst []byte) (int, error) {
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
func (s *BucketStore) corrupt(key uint64, b *bucket) error {
	s.st.ChecksumErrors++
	if loc, ok := s.index[key]; ok && loc.b == b {
		delete(s.index, key)
		s.markDead(loc)
	}
	return &BucketError{Bucket: b.id, Op: "verify", Key: key, Err: ErrBucketChecksum}
}

// readBuf returns n bytes of the read arena, replacing it with a larger one
// when a block does not fit.
func (s *BucketStore) readBuf(n int64) ([]byte, error) {
	if n > int64(len(s.rbuf)) {
		a, err := NewArena(int(n))
		if err != nil {
			return nil, err
		}
		// The engine may have registered the old arena: keep it mapped so
		// that a new mapping can never take its address while registered.
		s.retired = append(s.retired, s.ra)
		s.ra, s.rbuf = a, a.Bytes()
	}
	return s.rbuf[:n], nil
}

// readOpen assembles a block of the open bucket: the part already streamed
// to the data file is read back, the rest copied from the write buffer.
func (s *BucketStore) readOpen(e *bucketEntry, buf []byte) error {
	end := e.off + e.size
	if e.off >= s.bufBase {
		copy(buf, s.wbuf[e.off-s.bufBase:end-s.bufBase])
		return nil
	}
	ondisk := min(e.off+int64(len(buf)), s.bufBase) - e.off
	if err := s.readAt(s.open.fd, e.off, buf[:ondisk]); err != nil {
		return err
	}
	if end > s.bufBase {
		copy(buf[ondisk:e.size], s.wbuf[:end-s.bufBase])
	}
	return nil
}

func (s *BucketStore) readSealed(b *bucket, e *bucketEntry, buf []byte) error {
	fd, err := s.fdFor(b)
	if err != nil {
		return err
	}
	return s.readAt(fd, e.off, buf)
}

// readAt reads buf at off in requests of up to 1 MiB, a queue's worth per
// engine call.
func (s *BucketStore) readAt(fd int, off int64, buf []byte) error {
	for len(buf) > 0 {
		ops := s.ops[:0]
		for len(buf) > 0 && len(ops) < cap(ops) {
			n := min(len(buf), bucketIOChunk)
			ops = append(ops, Op{FD: fd, Off: off, Buf: buf[:n]})
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
func (s *BucketStore) GetBatch(keys []uint64, dst [][]byte, n []int, errs []error) error {
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
		if single || b.fd < 0 || int64(used)+padded > int64(len(s.rbuf)) || nops+chunks > len(s.ops) {
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
			s.ops[nops] = Op{FD: fd, Off: e.off + off, Buf: p.buf[off:end]}
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
func (s *BucketStore) drain(nops int, dst [][]byte, n []int, errs []error, first *error) {
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
// from disk; the death of a block in a surviving bucket reaches its
// metadata at the next Flush or Close.
func (s *BucketStore) Delete(key uint64) bool {
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
	s.markDead(loc)
	return true
}

// Flush seals the open bucket and records deletions in the metadata of the
// sealed buckets that have them.
func (s *BucketStore) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrBucketClosed
	}
	return s.flush()
}

func (s *BucketStore) flush() error {
	if err := s.seal(); err != nil {
		return err
	}
	var first error
	wrote := false
	for _, b := range s.sealed {
		if !b.dirty {
			continue
		}
		old := b.metaSize
		if err := s.writeMeta(b, false); err != nil {
			s.st.WriteErrors++
			if first == nil {
				first = &BucketError{Bucket: b.id, Op: "write metadata", Err: err}
			}
			continue
		}
		s.st.MetaBytes += b.metaSize - old
		b.dirty, wrote = false, true
	}
	if wrote {
		if err := unix.Fsync(s.dirfd); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Stats returns the counters.
func (s *BucketStore) Stats() StoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.LiveBlocks = len(s.index)
	st.Buckets = len(s.sealed)
	if s.open != nil {
		st.OpenBlocks = s.open.live
	}
	return st
}

// Evicted returns the keys dropped since the last call without a Delete:
// by bucket eviction, or with a bucket whose write failed. The caller
// forgets them.
func (s *BucketStore) Evicted() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.evicted
	s.evicted = nil
	return ev
}

// Close flushes (sealing the open bucket) and releases every fd, buffer
// and, if the store made it, the engine. The flush's error is returned.
func (s *BucketStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	err := s.flush()
	s.release()
	return err
}

func (s *BucketStore) release() {
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
	for _, a := range append(s.retired, s.wa, s.ra) {
		if a != nil {
			a.Close()
		}
	}
	s.retired, s.wa, s.ra, s.wbuf, s.mbuf, s.rbuf = nil, nil, nil, nil, nil, nil
	if s.dirfd >= 0 {
		unix.Close(s.dirfd)
		s.dirfd = -1
	}
}
