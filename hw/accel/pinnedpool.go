package accel

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"kvsim/hw/hostmem"
)

// PinnedPoolOptions configures NewPinnedBufferPool.
type PinnedPoolOptions struct {
	// MaxBuffers is how many page-locked buffers the pool keeps (default
	// 32, as Mooncake's PinnedBufferPool).
	MaxBuffers int
	// MaxBytes is the budget of page-locked bytes the buffers may hold
	// (default 1 GiB); registered memory (RegisterHost) is not counted.
	MaxBytes int64
	// NoFallback makes a request that cannot be pinned an error instead of
	// a pageable (mmap) buffer.
	NoFallback bool
	// MemlockBytes caps pinned plus registered bytes: 0 means RLIMIT_MEMLOCK
	// where the device's pinning counts against it (mlock does; the CUDA
	// and HIP drivers pin outside it), < 0 no cap.
	MemlockBytes int64
	// OnFallback, if set, hears each pageable fallback as it happens.
	OnFallback func(reason string)
}

// ErrNotPinned wraps a request the pool could not pin (with NoFallback).
var ErrNotPinned = errors.New("pinned buffer unavailable")

// PinnedBuffer is a buffer from the pool: Mem is exactly the bytes asked
// for; Pinned is false for a pageable fallback.
type PinnedBuffer struct {
	Mem    []byte
	Pinned bool
	full   []byte
	slot   *pinnedSlot
}

type pinnedSlot struct {
	mem   []byte
	inUse bool
}

type pinnedRegion struct {
	start, end uintptr
	mem        []byte
}

// PinnedPoolStats is what the pool did; fallbacks are never silent.
type PinnedPoolStats struct {
	Buffers, InUse  int   // pinned buffers held, and lent out
	PinnedBytes     int64 // bytes in pinned buffers
	MaxBuffers      int
	MaxBytes        int64
	RegisteredBytes int64 // host memory pinned through RegisterHost
	MemlockLimit    int64 // the cap applied; -1: none
	Allocs, Reuses  int64 // pinned allocations, and requests served by reuse
	Evictions       int64 // free buffers released to make room
	Fallbacks       int64 // pageable buffers handed out instead
	FallbackBytes   int64
	FallbacksInUse  int
	LastFallback    string // why the last fallback happened
}

// String is a one-line summary, e.g. for kvsim notes.
func (s PinnedPoolStats) String() string {
	out := fmt.Sprintf("pinned pool: %d/%d buffers (%d in use), %s of %s pinned, %d allocs, %d reuses",
		s.Buffers, s.MaxBuffers, s.InUse, hostmem.FormatBytes(s.PinnedBytes), hostmem.FormatBytes(s.MaxBytes), s.Allocs, s.Reuses)
	if s.RegisteredBytes > 0 {
		out += fmt.Sprintf(", %s registered", hostmem.FormatBytes(s.RegisteredBytes))
	}
	if s.Fallbacks > 0 {
		out += fmt.Sprintf("; %d pageable fallbacks (%s), last: %s", s.Fallbacks, hostmem.FormatBytes(s.FallbackBytes), s.LastFallback)
	}
	return out
}

// PinnedBufferPool reuses page-locked host buffers, which are slow to
// allocate: first fit over the buffers it holds, a bounded count and byte
// budget, and a counted fallback to pageable memory when pinning is not
// possible. Safe for concurrent use.
type PinnedBufferPool struct {
	dev     Device
	o       PinnedPoolOptions
	memlock int64 // -1: no cap
	mu      sync.Mutex
	slots   []*pinnedSlot // in allocation order: first fit scans it
	regions []pinnedRegion
	st      PinnedPoolStats
	closed  bool
}

// NewPinnedBufferPool makes a pool over dev's page-locked memory.
func NewPinnedBufferPool(dev Device, o PinnedPoolOptions) *PinnedBufferPool {
	if o.MaxBuffers <= 0 {
		o.MaxBuffers = 32
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 30
	}
	p := &PinnedBufferPool{dev: dev, o: o, memlock: -1}
	switch {
	case o.MemlockBytes > 0:
		p.memlock = o.MemlockBytes
	case o.MemlockBytes == 0:
		if m, ok := dev.(memlockAccounted); ok && m.MemlockAccounted() {
			if lim, unlimited := hostmem.MemlockLimit(); !unlimited {
				p.memlock = lim
			}
		}
	}
	p.st.MaxBuffers, p.st.MaxBytes, p.st.MemlockLimit = o.MaxBuffers, o.MaxBytes, p.memlock
	return p
}

const pinnedAlign = 4096

// Get lends a buffer of n bytes: a free pinned buffer that fits (the first
// in allocation order), else a new pinned one if the count, budget and
// memlock cap allow (releasing free buffers too small to be of use), else
// a pageable buffer, counted in Stats (or ErrNotPinned with NoFallback).
func (p *PinnedBufferPool) Get(n int) (*PinnedBuffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("pinned pool: request of %d bytes: must be > 0", n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("pinned pool: closed")
	}
	for _, s := range p.slots {
		if !s.inUse && len(s.mem) >= n {
			s.inUse = true
			p.st.Reuses++
			return &PinnedBuffer{Mem: s.mem[:n:n], Pinned: true, full: s.mem, slot: s}, nil
		}
	}
	size := int64(n+pinnedAlign-1) &^ (pinnedAlign - 1)
	why := p.makeRoom(size)
	if why == "" {
		mem, err := p.dev.HostAlloc(int(size))
		if err == nil {
			s := &pinnedSlot{mem: mem, inUse: true}
			p.slots = append(p.slots, s)
			p.st.Allocs++
			p.st.PinnedBytes += size
			return &PinnedBuffer{Mem: mem[:n:n], Pinned: true, full: mem, slot: s}, nil
		}
		why = err.Error()
	}
	if p.o.NoFallback {
		return nil, fmt.Errorf("pinned pool: %s: %w", why, ErrNotPinned)
	}
	mem, err := accelHostAlloc(n)
	if err != nil {
		return nil, fmt.Errorf("pinned pool: %s, and the pageable fallback failed: %w", why, err)
	}
	p.st.Fallbacks++
	p.st.FallbackBytes += int64(n)
	p.st.FallbacksInUse++
	p.st.LastFallback = why
	if p.o.OnFallback != nil {
		p.o.OnFallback(why)
	}
	return &PinnedBuffer{Mem: mem[:n:n], full: mem}, nil
}

// makeRoom releases free buffers (smallest first: none fits, or first fit
// would have taken it) until size more pinned bytes fit the count, budget
// and memlock cap; it returns why they cannot ("" when they fit).
func (p *PinnedBufferPool) makeRoom(size int64) string {
	if size > p.o.MaxBytes {
		return fmt.Sprintf("request of %s exceeds the pinned budget of %s", hostmem.FormatBytes(size), hostmem.FormatBytes(p.o.MaxBytes))
	}
	if p.memlock >= 0 && size+p.st.RegisteredBytes > p.memlock {
		return fmt.Sprintf("request of %s (plus %s registered) exceeds RLIMIT_MEMLOCK of %s (raise it with ulimit -l)",
			hostmem.FormatBytes(size), hostmem.FormatBytes(p.st.RegisteredBytes), hostmem.FormatBytes(p.memlock))
	}
	over := func() string {
		switch {
		case len(p.slots) >= p.o.MaxBuffers:
			return fmt.Sprintf("all %d pinned buffers are in use", p.o.MaxBuffers)
		case p.st.PinnedBytes+size > p.o.MaxBytes:
			return fmt.Sprintf("the pinned budget of %s is in use", hostmem.FormatBytes(p.o.MaxBytes))
		case p.memlock >= 0 && p.st.PinnedBytes+p.st.RegisteredBytes+size > p.memlock:
			return fmt.Sprintf("RLIMIT_MEMLOCK of %s is in use (raise it with ulimit -l)", hostmem.FormatBytes(p.memlock))
		}
		return ""
	}
	for why := over(); why != ""; why = over() {
		victim := -1
		for i, s := range p.slots {
			if !s.inUse && (victim < 0 || len(s.mem) < len(p.slots[victim].mem)) {
				victim = i
			}
		}
		if victim < 0 {
			return why
		}
		s := p.slots[victim]
		p.slots = append(p.slots[:victim], p.slots[victim+1:]...)
		p.st.PinnedBytes -= int64(len(s.mem))
		p.st.Evictions++
		if err := p.dev.HostFree(s.mem); err != nil {
			return why + " (and freeing a buffer failed: " + err.Error() + ")"
		}
	}
	return ""
}

// Put returns a buffer; a pageable fallback is unmapped. Putting a buffer
// twice does nothing.
func (p *PinnedBufferPool) Put(b *PinnedBuffer) error {
	if b == nil || b.full == nil {
		return nil
	}
	full, s := b.full, b.slot
	b.Mem, b.full, b.slot = nil, nil, nil
	p.mu.Lock()
	defer p.mu.Unlock()
	if s == nil {
		p.st.FallbacksInUse--
		return accelHostFree(full)
	}
	s.inUse = false
	if p.closed {
		for i, t := range p.slots {
			if t == s {
				p.slots = append(p.slots[:i], p.slots[i+1:]...)
				p.st.PinnedBytes -= int64(len(s.mem))
				break
			}
		}
		return p.dev.HostFree(full)
	}
	return nil
}

// RegisterHost pins existing host memory (e.g. the hugepage DRAM pool's
// Bytes()) with the runtime (cudaHostRegister), so copies from it need no
// staging. mem must be mmap'd, not Go heap. An error says why not; the
// caller reports it and carries on with staged copies.
func (p *PinnedBufferPool) RegisterHost(mem []byte) error {
	if len(mem) == 0 {
		return errors.New("pinned pool: register: empty buffer")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("pinned pool: closed")
	}
	n := int64(len(mem))
	if p.memlock >= 0 && p.st.PinnedBytes+p.st.RegisteredBytes+n > p.memlock {
		return fmt.Errorf("pinned pool: registering %s would exceed RLIMIT_MEMLOCK of %s (%s already pinned; raise it with ulimit -l): %w",
			hostmem.FormatBytes(n), hostmem.FormatBytes(p.memlock), hostmem.FormatBytes(p.st.PinnedBytes+p.st.RegisteredBytes), ErrNotPinned)
	}
	if err := p.dev.HostRegister(mem); err != nil {
		return fmt.Errorf("pinned pool: register %s: %w", hostmem.FormatBytes(n), err)
	}
	start := uintptr(unsafe.Pointer(&mem[0]))
	p.regions = append(p.regions, pinnedRegion{start: start, end: start + uintptr(len(mem)), mem: mem})
	p.st.RegisteredBytes += n
	return nil
}

// UnregisterHost undoes RegisterHost for the same mem.
func (p *PinnedBufferPool) UnregisterHost(mem []byte) error {
	if len(mem) == 0 {
		return nil
	}
	start := uintptr(unsafe.Pointer(&mem[0]))
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.regions {
		if r.start == start && r.end == start+uintptr(len(mem)) {
			p.regions = append(p.regions[:i], p.regions[i+1:]...)
			p.st.RegisteredBytes -= int64(len(mem))
			return p.dev.HostUnregister(r.mem)
		}
	}
	return errors.New("pinned pool: unregister: memory was not registered here")
}

// IsPinned says whether b lies in a pool buffer or registered memory, or
// the runtime knows it as pinned: then copies need no staging.
func (p *PinnedBufferPool) IsPinned(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(&b[0]))
	hi := lo + uintptr(len(b))
	p.mu.Lock()
	for _, s := range p.slots {
		if pinnedContains(lo, hi, s.mem) {
			p.mu.Unlock()
			return true
		}
	}
	for _, r := range p.regions {
		if lo >= r.start && hi <= r.end {
			p.mu.Unlock()
			return true
		}
	}
	p.mu.Unlock()
	return p.dev.IsPinned(b)
}

func pinnedContains(lo, hi uintptr, mem []byte) bool {
	start := uintptr(unsafe.Pointer(&mem[0]))
	return lo >= start && hi <= start+uintptr(len(mem))
}

// Stats is a snapshot of the pool's counters.
func (p *PinnedBufferPool) Stats() PinnedPoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	st.Buffers = len(p.slots)
	for _, s := range p.slots {
		if s.inUse {
			st.InUse++
		}
	}
	return st
}

// Close frees the free buffers and unregisters registered memory; buffers
// still lent out are freed when they are Put back.
func (p *PinnedBufferPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var first error
	keep := p.slots[:0]
	for _, s := range p.slots {
		if s.inUse {
			keep = append(keep, s)
			continue
		}
		p.st.PinnedBytes -= int64(len(s.mem))
		if err := p.dev.HostFree(s.mem); err != nil && first == nil {
			first = err
		}
	}
	p.slots = keep
	for _, r := range p.regions {
		if err := p.dev.HostUnregister(r.mem); err != nil && first == nil {
			first = err
		}
	}
	p.regions, p.st.RegisteredBytes = nil, 0
	return first
}
