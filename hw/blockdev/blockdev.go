//go:build linux

// Package blockdev keeps a storage tier's blocks in fixed slots of a raw
// block device (an NVMe-oF namespace, /dev/nvmeXnY) or of one file,
// written and read by the io_uring engine with O_DIRECT, each checked by
// its CRC-32C when read back.
//
// kvsim never overwrites what it did not create: Open claims a device only
// when its first 64 KiB are all zero (a blank or discarded device), by
// writing its signature there; a device that carries the signature is
// taken again; anything else is refused. The slot index lives in memory:
// a store starts empty every time it is opened.
package blockdev

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"kvsim/hw/hostmem"
	"kvsim/hw/ioengine"
	"kvsim/hw/store"
)

// Signature starts the first sector of a device kvsim has claimed.
const Signature = "kvsim block-device store v1\n"

const (
	headerBytes = 1 << 20  // reserved at the start: the signature, then nothing
	probeBytes  = 64 << 10 // must be zero for a device to be claimed
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrNotOurs is a device that holds data kvsim did not write.
var ErrNotOurs = errors.New("holds data kvsim did not write")

// maxSlots bounds a store's in-memory index (its free list alone is 4
// bytes a slot).
const maxSlots = 1 << 27

// TooSmall is a device with fewer slots than the capacity asks for.
type TooSmall struct {
	Path             string
	Bytes, Need      int64 // the device's size, and the size it would need
	Slots, NeedSlots int64
	SlotBytes        int
}

func (e *TooSmall) Error() string {
	return fmt.Sprintf("%s is %s, too small: the tier needs %s (%d slots of %s after a %s header), it holds %d: give a larger device or a smaller capacity",
		e.Path, hostmem.FormatBytes(e.Bytes), hostmem.FormatBytes(e.Need), e.NeedSlots, hostmem.FormatBytes(int64(e.SlotBytes)), hostmem.FormatBytes(headerBytes), e.Slots)
}

// Options open a store.
type Options struct {
	Path       string // a block device or a regular file on a disk filesystem
	SlotBytes  int    // the largest block
	Capacity   int64  // the tier's bytes: a device without a slot per SlotBytes of it is refused (0: the whole device)
	Engine     string // auto, io_uring, pread
	QueueDepth int
	// WrapEngine, for tests, puts an engine around the one made (a
	// bucket.FaultEngine, to fail writes); the store closes both.
	WrapEngine func(ioengine.Engine) ioengine.Engine
}

type slot struct {
	idx int32
	n   int32
	crc uint32
}

// Store is a store.Store on a device. Safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	f        *os.File
	eng      ioengine.Engine
	inner    ioengine.Engine // the engine made, when WrapEngine wrapped it
	arena    *ioengine.Arena
	slot     int // bytes per slot, aligned
	slots    int
	free     []int32
	index    map[int32]slot
	backend  string
	Kind     string // "block device" or "file"
	Claimed  bool   // Open wrote the signature (a blank device)
	DevBytes int64
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Concurrent = (*Store)(nil)
)

var errClosed = fmt.Errorf("blockdev: %w", store.ErrClosed)

// ConcurrentSafe implements store.Concurrent: one mutex serialises it.
func (s *Store) ConcurrentSafe() {}

// Open opens (and if blank, claims) the device at o.Path.
func Open(o Options) (_ *Store, err error) {
	if o.SlotBytes <= 0 {
		return nil, errors.New("blockdev: slot bytes must be > 0")
	}
	fi, err := os.Stat(o.Path)
	if err != nil {
		return nil, err
	}
	kind := "file"
	switch {
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		kind = "block device"
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a block device nor a regular file", o.Path)
	}
	f, align, err := openDirect(o.Path, kind)
	if err != nil {
		return nil, err
	}
	s := &Store{f: f, Kind: kind, index: map[int32]slot{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("%s: size: %w", o.Path, err)
	}
	s.DevBytes = size
	unit := int(max(align.Offset, align.Mem, 4096))
	s.slot = (o.SlotBytes + unit - 1) / unit * unit
	have := (size - headerBytes) / int64(s.slot)
	if size < headerBytes || have < 1 {
		return nil, fmt.Errorf("%s: %d bytes hold no %d-byte slot after its %d-byte header", o.Path, size, s.slot, headerBytes)
	}
	if o.Capacity > 0 {
		// A slot per full block of the capacity; the replay's core holds
		// at most Slots() blocks, so no write the core allows is refused.
		need := (o.Capacity + int64(o.SlotBytes) - 1) / int64(o.SlotBytes)
		if have < need {
			return nil, &TooSmall{Path: o.Path, Bytes: size, Need: headerBytes + need*int64(s.slot), Slots: have, NeedSlots: need, SlotBytes: s.slot}
		}
		// Room beyond that takes short blocks before the core must
		// evict by count; bounded, as the index is in memory.
		have = min(have, 2*need+64)
	}
	s.slots = int(min(have, maxSlots))
	if s.arena, err = ioengine.NewArenaPages(max(s.slot, probeBytes), false); err != nil {
		return nil, err
	}
	var reason string
	if s.eng, reason, err = ioengine.NewEngine(o.Engine, o.QueueDepth, s.arena); err != nil {
		return nil, err
	}
	s.backend = s.eng.Name() + "+O_DIRECT on a " + kind
	if reason != "" {
		s.backend += " (" + reason + ")"
	}
	if o.WrapEngine != nil {
		s.inner, s.eng = s.eng, o.WrapEngine(s.eng)
	}
	if err := s.claim(o.Path); err != nil {
		return nil, err
	}
	s.free = make([]int32, s.slots)
	for i := range s.free {
		s.free[i] = int32(s.slots - 1 - i) // pop from the end: slot 0 first
	}
	return s, nil
}

// openDirect opens path for O_DIRECT I/O. A device node is opened as it
// is (ioengine.OpenDirect judges a path by its directory's filesystem,
// and /dev is a tmpfs), aligned to what the kernel reports for it, else
// to 4 KiB, which every logical block size divides.
func openDirect(path, kind string) (*os.File, ioengine.Align, error) {
	if kind != "block device" {
		return ioengine.OpenDirect(path, os.O_RDWR, 0)
	}
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, ioengine.Align{}, err
	}
	a := ioengine.Align{Mem: 4096, Offset: 4096, Path: path}
	if mem, off, err := ioengine.DIOAlign(int(f.Fd())); err == nil && mem > 0 && off > 0 {
		a.Mem, a.Offset = mem, off
	}
	return f, a, nil
}

// claim checks the device's first 64 KiB: kvsim's signature, or zeros
// (then it writes the signature), else ErrNotOurs.
func (s *Store) claim(path string) error {
	buf := s.arena.Slice(0, probeBytes)
	if err := s.eng.Do([]ioengine.Op{{FD: int(s.f.Fd()), Off: 0, Buf: buf}}); err != nil {
		return fmt.Errorf("%s: reading its first %d bytes: %w", path, probeBytes, err)
	}
	if bytes.HasPrefix(buf, []byte(Signature)) {
		return nil
	}
	for _, c := range buf {
		if c != 0 {
			return fmt.Errorf("%s %w (its first %d KiB are neither zero nor kvsim's signature): kvsim will not overwrite it; if it is meant for kvsim, empty it yourself (e.g. blkdiscard)", path, ErrNotOurs, probeBytes>>10)
		}
	}
	copy(buf, Signature)
	if err := s.eng.Do([]ioengine.Op{{Write: true, FD: int(s.f.Fd()), Off: 0, Buf: buf[:4096]}}); err != nil {
		return fmt.Errorf("%s: writing kvsim's signature: %w", path, err)
	}
	if err := unix.Fdatasync(int(s.f.Fd())); err != nil {
		return fmt.Errorf("%s: fdatasync: %w", path, err)
	}
	s.Claimed = true
	return nil
}

// Backend implements store.Store.
func (s *Store) Backend() string { return s.backend }

// Slots is the number of slots, and SlotBytes their size.
func (s *Store) Slots() int     { return s.slots }
func (s *Store) SlotBytes() int { return s.slot }

func (s *Store) off(idx int32) int64 { return headerBytes + int64(idx)*int64(s.slot) }

// Put implements store.Store: data goes to a free slot (b's old copy,
// if any, is freed once the new one is written).
func (s *Store) Put(b int32, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return errClosed
	}
	if b < 0 {
		return fmt.Errorf("blockdev: block %d: negative id", b)
	}
	if len(data) > s.slot {
		return fmt.Errorf("blockdev: block %d: %d bytes, slots hold %d", b, len(data), s.slot)
	}
	if len(s.free) == 0 {
		return fmt.Errorf("blockdev: block %d: all %d slots full", b, s.slots)
	}
	idx := s.free[len(s.free)-1]
	buf := s.arena.Slice(0, s.slot)
	n := copy(buf, data)
	clear(buf[n:])
	if err := s.eng.Do([]ioengine.Op{{Write: true, FD: int(s.f.Fd()), Off: s.off(idx), Buf: buf}}); err != nil {
		return fmt.Errorf("blockdev: block %d: %w", b, err)
	}
	s.free = s.free[:len(s.free)-1]
	if old, ok := s.index[b]; ok {
		s.free = append(s.free, old.idx)
	}
	s.index[b] = slot{idx: idx, n: int32(n), crc: crc32.Checksum(data, castagnoli)}
	return nil
}

// Get implements store.Store: a copy whose bytes do not match their
// checksum is an error, never returned.
func (s *Store) Get(b int32, dst []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return 0, errClosed
	}
	sl, ok := s.index[b]
	if !ok {
		return 0, store.ErrNotStored
	}
	if len(dst) < int(sl.n) {
		return 0, fmt.Errorf("blockdev: block %d: %d bytes into %d", b, sl.n, len(dst))
	}
	buf := s.arena.Slice(0, s.slot)
	if err := s.eng.Do([]ioengine.Op{{FD: int(s.f.Fd()), Off: s.off(sl.idx), Buf: buf}}); err != nil {
		return 0, fmt.Errorf("blockdev: block %d: %w", b, err)
	}
	if crc32.Checksum(buf[:sl.n], castagnoli) != sl.crc {
		return 0, fmt.Errorf("blockdev: block %d: checksum mismatch at offset %d (corrupt)", b, s.off(sl.idx))
	}
	return copy(dst, buf[:sl.n]), nil
}

// Delete implements store.Store.
func (s *Store) Delete(b int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl, ok := s.index[b]; ok {
		delete(s.index, b)
		s.free = append(s.free, sl.idx)
	}
}

// Has implements store.Store.
func (s *Store) Has(b int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.index[b]
	return ok
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	if s.eng != nil {
		first = s.eng.Close()
		s.eng = nil
	}
	if s.inner != nil {
		if err := s.inner.Close(); err != nil && first == nil {
			first = err
		}
		s.inner = nil
	}
	clear(s.index) // Has is false from now on
	if s.arena != nil {
		if err := s.arena.Close(); err != nil && first == nil {
			first = err
		}
		s.arena = nil
	}
	if s.f != nil {
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
		s.f = nil
	}
	return first
}
