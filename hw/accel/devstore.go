package accel

import (
	"errors"
	"fmt"

	"kvsim/hw/hostmem"
	"kvsim/hw/ioengine"
	"kvsim/hw/store"
)

// devChunkBytes is the size of one device or pinned allocation a store
// grows by: large enough that cudaMalloc (milliseconds) is rare.
const devChunkBytes = 64 << 20

func devChunkSlots(slot int) int { return max(1, devChunkBytes/max(slot, 1)) }

// NewDeviceStore makes the store of a GPU tier. kind "hbm": blocks live in
// device memory; Put copies host to device (staged through a pool buffer
// unless the caller's buffer is pinned), Get device to host, each waiting
// for its copy. kind "pinned": blocks live in page-locked host memory. A
// device that is not Available gives the emulated store (host memory,
// Backend "emulated"). pool may be nil: the store then keeps its own.
func NewDeviceStore(dev Device, kind string, slotBytes int, pool *PinnedBufferPool) store.Store {
	perChunk := devChunkSlots(slotBytes)
	switch {
	case kind != "hbm" && kind != "pinned":
		return &devErrStore{fmt.Errorf("device store: kind %q: must be hbm or pinned", kind)}
	case slotBytes <= 0:
		return &devErrStore{fmt.Errorf("device store: slot size %d: must be > 0", slotBytes)}
	case dev == nil || !dev.Available():
		return hostmem.NewMemStore("emulated", slotBytes, perChunk, func(n int) (hostmem.Chunk, error) {
			a, err := ioengine.NewArena(n)
			if err != nil {
				return hostmem.Chunk{}, err
			}
			return hostmem.Chunk{Mem: a.Bytes(), Closer: a}, nil
		})
	case kind == "pinned":
		return hostmem.NewMemStore(dev.Kind()+" pinned host memory", slotBytes, perChunk, func(n int) (hostmem.Chunk, error) {
			mem, err := dev.HostAlloc(n)
			if err != nil {
				return hostmem.Chunk{}, err
			}
			return hostmem.Chunk{Mem: mem, Closer: devHostFreer{dev, mem}}, nil
		})
	}
	s := &devStore{dev: dev, pool: pool, slot: slotBytes, perChunk: perChunk,
		backend: fmt.Sprintf("%s:%s (device memory)", dev.Kind(), dev.Name())}
	if pool == nil {
		s.pool = NewPinnedBufferPool(dev, PinnedPoolOptions{MaxBuffers: 4, MaxBytes: int64(4 * max(slotBytes, pinnedAlign))})
		s.ownPool = true
	}
	return s
}

type devHostFreer struct {
	dev Device
	mem []byte
}

func (h devHostFreer) Close() error { return h.dev.HostFree(h.mem) }

// devErrStore is a store that could not be made: every Put says why.
type devErrStore struct{ err error }

func (e *devErrStore) Backend() string                      { return "invalid (" + e.err.Error() + ")" }
func (e *devErrStore) Put(b int32, data []byte) error       { return e.err }
func (e *devErrStore) Get(b int32, dst []byte) (int, error) { return 0, store.ErrNotStored }
func (e *devErrStore) Delete(b int32)                       {}
func (e *devErrStore) Has(b int32) bool                     { return false }
func (e *devErrStore) Close() error                         { return nil }

// devStore keeps fixed-size slots in chunks of device memory. Not safe for
// concurrent use, like MemStore.
type devStore struct {
	dev      Device
	pool     *PinnedBufferPool
	ownPool  bool
	backend  string
	slot     int
	perChunk int
	chunks   []uintptr
	free     []int32
	where    []int32 // block -> slot+1 (0: absent)
	size     []int32
	n        int
	stream   AccelStream
	hasSt    bool
	closed   bool
}

var (
	_ store.Store = (*devStore)(nil)
	_ store.Store = (*devErrStore)(nil)
)

func (s *devStore) Backend() string { return s.backend }

func (s *devStore) Has(b int32) bool { return b >= 0 && int(b) < len(s.where) && s.where[b] != 0 }

// Len is the number of blocks held.
func (s *devStore) Len() int { return s.n }

func (s *devStore) addr(slot int32) uintptr {
	return s.chunks[int(slot)/s.perChunk] + uintptr(int(slot)%s.perChunk*s.slot)
}

// getStream makes the store's stream on first use (the constructor cannot
// fail): a non-blocking stream keeps the store's copies off stream 0.
func (s *devStore) getStream() (AccelStream, error) {
	if !s.hasSt {
		st, err := s.dev.NewStream()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", s.backend, err)
		}
		s.stream, s.hasSt = st, true
	}
	return s.stream, nil
}

// Put implements Store; a block already held is overwritten.
func (s *devStore) Put(b int32, data []byte) error {
	if s.closed {
		return fmt.Errorf("%s: %w", s.backend, store.ErrClosed)
	}
	if b < 0 {
		return fmt.Errorf("%s: block %d: must be >= 0", s.backend, b)
	}
	if len(data) > s.slot {
		return fmt.Errorf("%s: block %d is %d bytes, slots hold %d", s.backend, b, len(data), s.slot)
	}
	st, err := s.getStream()
	if err != nil {
		return err
	}
	for int(b) >= len(s.where) {
		n := max(2*len(s.where), 1024)
		s.where = append(s.where, make([]int32, n-len(s.where))...)
		s.size = append(s.size, make([]int32, n-len(s.size))...)
	}
	slot, fresh := s.where[b]-1, false
	if slot < 0 {
		if len(s.free) == 0 {
			p, err := s.dev.Malloc(s.slot * s.perChunk)
			if err != nil {
				return fmt.Errorf("%s: %w", s.backend, err)
			}
			base := int32(len(s.chunks) * s.perChunk)
			s.chunks = append(s.chunks, p)
			for i := s.perChunk - 1; i >= 0; i-- {
				s.free = append(s.free, base+int32(i))
			}
		}
		slot, fresh = s.free[len(s.free)-1], true
		s.free = s.free[:len(s.free)-1]
	}
	if err := s.h2d(s.addr(slot), data, st); err != nil {
		if fresh {
			s.free = append(s.free, slot)
		} else {
			// The old contents may be half overwritten: drop the block.
			s.Delete(b)
		}
		return fmt.Errorf("%s: put block %d: %w", s.backend, b, err)
	}
	if fresh {
		s.where[b] = slot + 1
		s.n++
	}
	s.size[b] = int32(len(data))
	return nil
}

// h2d copies data to the device and waits, staging through a pool buffer
// when data is not pinned (it may be Go heap memory, which an async copy
// must not read).
func (s *devStore) h2d(dst uintptr, data []byte, st AccelStream) error {
	if len(data) == 0 {
		return nil
	}
	src := data
	var stage *PinnedBuffer
	if !s.pool.IsPinned(data) {
		var err error
		if stage, err = s.pool.Get(len(data)); err != nil {
			return err
		}
		defer s.pool.Put(stage)
		copy(stage.Mem, data)
		src = stage.Mem
	}
	if err := s.dev.CopyH2D(dst, src, st); err != nil {
		return errors.Join(err, s.dev.StreamSync(st))
	}
	return s.dev.StreamSync(st)
}

// Get implements Store.
func (s *devStore) Get(b int32, dst []byte) (int, error) {
	if s.closed {
		return 0, fmt.Errorf("%s: %w", s.backend, store.ErrClosed)
	}
	if !s.Has(b) {
		return 0, store.ErrNotStored
	}
	n := int(s.size[b])
	if len(dst) < n {
		return 0, fmt.Errorf("%s: block %d needs %d bytes, buffer has %d", s.backend, b, n, len(dst))
	}
	if n == 0 {
		return 0, nil
	}
	st, err := s.getStream()
	if err != nil {
		return 0, err
	}
	out := dst[:n]
	var stage *PinnedBuffer
	if !s.pool.IsPinned(out) {
		if stage, err = s.pool.Get(n); err != nil {
			return 0, fmt.Errorf("%s: get block %d: %w", s.backend, b, err)
		}
		defer s.pool.Put(stage)
		out = stage.Mem
	}
	err = s.dev.CopyD2H(out, s.addr(s.where[b]-1), st)
	if err = errors.Join(err, s.dev.StreamSync(st)); err != nil {
		return 0, fmt.Errorf("%s: get block %d: %w", s.backend, b, err)
	}
	if stage != nil {
		copy(dst, stage.Mem)
	}
	return n, nil
}

// Delete implements Store.
func (s *devStore) Delete(b int32) {
	if !s.Has(b) {
		return
	}
	s.free = append(s.free, s.where[b]-1)
	s.where[b] = 0
	s.n--
}

// Close frees the device memory, the stream and a pool of the store's own.
func (s *devStore) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.hasSt {
		errs = append(errs, s.dev.StreamSync(s.stream), s.dev.DestroyStream(s.stream))
		s.hasSt = false
	}
	for _, c := range s.chunks {
		errs = append(errs, s.dev.Free(c))
	}
	if s.ownPool {
		errs = append(errs, s.pool.Close())
	}
	s.chunks, s.free, s.where, s.size, s.n = nil, nil, nil, nil, 0
	return errors.Join(errs...)
}
