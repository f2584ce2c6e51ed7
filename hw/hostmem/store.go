package hostmem

import (
	"fmt"
	"io"

	"kvsim/hw/store"
)

// Chunk is memory a MemStore carves into slots, with whatever owns it.
type Chunk struct {
	Mem    []byte
	Closer io.Closer
}

// MemStore keeps blocks in fixed-size slots of memory chunks obtained on
// demand (anonymous mmap for emulated tiers, memfd pools for DRAM), each
// chunk carved by a Slots allocator.
type MemStore struct {
	backend  string
	slot     int
	perChunk int
	newChunk func(bytes int) (Chunk, error)
	chunks   []Chunk
	slots    []*Slots
	avail    []int32 // chunks that may have a free slot
	where    []int32 // block -> chunk*perChunk + slot + 1 (0: absent)
	size     []int32
	n        int
	closed   bool
}

var _ store.Store = (*MemStore)(nil)

// NewMemStore makes a store of slotBytes-sized slots, growing by chunks of
// perChunk slots from newChunk.
func NewMemStore(backend string, slotBytes, perChunk int, newChunk func(bytes int) (Chunk, error)) *MemStore {
	return &MemStore{backend: backend, slot: slotBytes, perChunk: max(perChunk, 1), newChunk: newChunk}
}

// Backend implements Store.
func (m *MemStore) Backend() string { return m.backend }

// Has implements Store.
func (m *MemStore) Has(b int32) bool { return b >= 0 && int(b) < len(m.where) && m.where[b] != 0 }

// Len is the number of blocks held.
func (m *MemStore) Len() int { return m.n }

func (m *MemStore) slotMem(at int32) []byte {
	return m.slots[int(at)/m.perChunk].Slot(int(at) % m.perChunk)
}

// alloc finds a free slot, adding a chunk when every chunk is full.
func (m *MemStore) alloc() (int32, error) {
	for len(m.avail) > 0 {
		c := m.avail[len(m.avail)-1]
		if i, ok := m.slots[c].Alloc(); ok {
			return c*int32(m.perChunk) + int32(i), nil
		}
		m.avail = m.avail[:len(m.avail)-1] // full: it comes back on a Free
	}
	ch, err := m.newChunk(m.slot * m.perChunk)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", m.backend, err)
	}
	c := int32(len(m.chunks))
	m.chunks = append(m.chunks, ch)
	m.slots = append(m.slots, NewSlots(ch.Mem, m.slot))
	m.avail = append(m.avail, c)
	i, _ := m.slots[c].Alloc()
	return c*int32(m.perChunk) + int32(i), nil
}

// Put implements Store; a block already held is overwritten.
func (m *MemStore) Put(b int32, data []byte) error {
	if m.closed {
		return fmt.Errorf("%s: %w", m.backend, store.ErrClosed)
	}
	if b < 0 {
		return fmt.Errorf("%s: block %d: negative id", m.backend, b)
	}
	if len(data) > m.slot {
		return fmt.Errorf("%s: block %d is %d bytes, slots hold %d", m.backend, b, len(data), m.slot)
	}
	for int(b) >= len(m.where) {
		n := max(2*len(m.where), 1024)
		m.where = append(m.where, make([]int32, n-len(m.where))...)
		m.size = append(m.size, make([]int32, n-len(m.size))...)
	}
	if m.where[b] == 0 {
		at, err := m.alloc()
		if err != nil {
			return err
		}
		m.where[b] = at + 1
		m.n++
	}
	copy(m.slotMem(m.where[b]-1), data)
	m.size[b] = int32(len(data))
	return nil
}

// Get implements Store.
func (m *MemStore) Get(b int32, dst []byte) (int, error) {
	if !m.Has(b) {
		if m.closed {
			return 0, fmt.Errorf("%s: %w", m.backend, store.ErrClosed)
		}
		return 0, store.ErrNotStored
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
	at := m.where[b] - 1
	c := at / int32(m.perChunk)
	if m.slots[c].InUse() == m.slots[c].Cap() {
		m.avail = append(m.avail, c) // it had no free slot: list it again
	}
	m.slots[c].Free(int(at) % m.perChunk)
	m.where[b] = 0
	m.n--
}

// Close releases every chunk.
func (m *MemStore) Close() error {
	m.closed = true
	var first error
	for _, c := range m.chunks {
		if c.Closer != nil {
			if err := c.Closer.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	m.chunks, m.slots, m.avail, m.where, m.size, m.n = nil, nil, nil, nil, nil, 0
	return first
}
