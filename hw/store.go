package hw

import (
	"errors"
	"fmt"
	"io"
)

// Store holds the blocks of one tier on real memory or storage.
type Store interface {
	// Backend names the path this tier really uses, e.g. "emulated",
	// "memfd+hugetlb-2MB", "io_uring+O_DIRECT".
	Backend() string
	Put(b int32, data []byte) error
	Get(b int32, dst []byte) (int, error)
	Delete(b int32)
	Has(b int32) bool
	Close() error
}

// ErrNotStored is returned by Get for a block the store does not hold.
var ErrNotStored = errors.New("block not stored")

// Chunk is memory a MemStore carves into slots, with whatever owns it.
type Chunk struct {
	Mem    []byte
	Closer io.Closer
}

// MemStore keeps fixed-size slots in chunks of memory obtained on demand
// (anonymous mmap for emulated tiers, memfd pools for DRAM).
type MemStore struct {
	backend  string
	slot     int
	perChunk int
	newChunk func(bytes int) (Chunk, error)
	chunks   []Chunk
	free     []int32
	where    []int32 // block -> slot+1 (0: absent)
	size     []int32
	n        int
}

// NewMemStore makes a store of slotBytes-sized slots, growing by chunks of
// perChunk slots from newChunk.
func NewMemStore(backend string, slotBytes, perChunk int, newChunk func(bytes int) (Chunk, error)) *MemStore {
	return &MemStore{backend: backend, slot: slotBytes, perChunk: max(perChunk, 1), newChunk: newChunk}
}

// Backend implements Store.
func (m *MemStore) Backend() string { return m.backend }

// Has implements Store.
func (m *MemStore) Has(b int32) bool { return int(b) < len(m.where) && m.where[b] != 0 }

// Len is the number of blocks held.
func (m *MemStore) Len() int { return m.n }

func (m *MemStore) slotMem(s int32) []byte {
	c := m.chunks[int(s)/m.perChunk]
	off := (int(s) % m.perChunk) * m.slot
	return c.Mem[off : off+m.slot : off+m.slot]
}

// Put implements Store; a block already held is overwritten.
func (m *MemStore) Put(b int32, data []byte) error {
	if len(data) > m.slot {
		return fmt.Errorf("%s: block %d is %d bytes, slots hold %d", m.backend, b, len(data), m.slot)
	}
	for int(b) >= len(m.where) {
		n := max(2*len(m.where), 1024)
		m.where = append(m.where, make([]int32, n-len(m.where))...)
		m.size = append(m.size, make([]int32, n-len(m.size))...)
	}
	s := m.where[b] - 1
	if s < 0 {
		if len(m.free) == 0 {
			c, err := m.newChunk(m.slot * m.perChunk)
			if err != nil {
				return fmt.Errorf("%s: %w", m.backend, err)
			}
			base := int32(len(m.chunks) * m.perChunk)
			m.chunks = append(m.chunks, c)
			for i := m.perChunk - 1; i >= 0; i-- {
				m.free = append(m.free, base+int32(i))
			}
		}
		s = m.free[len(m.free)-1]
		m.free = m.free[:len(m.free)-1]
		m.where[b] = s + 1
		m.n++
	}
	copy(m.slotMem(s), data)
	m.size[b] = int32(len(data))
	return nil
}

// Get implements Store.
func (m *MemStore) Get(b int32, dst []byte) (int, error) {
	if !m.Has(b) {
		return 0, ErrNotStored
	}
	n := int(m.size[b])
	if len(dst) < n {
		return 0, fmt.Errorf("%s: block %d needs %d bytes, buffer has %d", m.backend, b, n, len(dst))
	}
	return copy(dst, m.slotMem(m.where[b] - 1)[:n]), nil
}

// Delete implements Store.
func (m *MemStore) Delete(b int32) {
	if !m.Has(b) {
		return
	}
	m.free = append(m.free, m.where[b]-1)
	m.where[b] = 0
	m.n--
}

// Close releases every chunk.
func (m *MemStore) Close() error {
	var first error
	for _, c := range m.chunks {
		if c.Closer != nil {
			if err := c.Closer.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	m.chunks, m.free, m.where, m.size, m.n = nil, nil, nil, nil, 0
	return first
}
