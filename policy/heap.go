package policy

import "cmp"

// keyHeap is an indexed binary min-heap of blocks ordered by (key, seq):
// seq breaks ties so that results never depend on heap layout. pos holds
// each block's slot + 1 (0 = absent), so updates and removals are O(log n)
// with no allocation once the slices have grown.
type keyHeap[K cmp.Ordered] struct {
	h     []heapItem[K]
	pos   []int32
	spare []heapItem[K] // pinned tops set aside by popUnpinned
}

type heapItem[K cmp.Ordered] struct {
	key K
	seq uint64
	b   Block
}

func (h *keyHeap[K]) Len() int { return len(h.h) }

func (h *keyHeap[K]) contains(b Block) bool { return int(b) < len(h.pos) && h.pos[b] != 0 }

func (h *keyHeap[K]) less(i, j int) bool {
	a, c := &h.h[i], &h.h[j]
	if a.key != c.key {
		return a.key < c.key
	}
	return a.seq < c.seq
}

func (h *keyHeap[K]) swap(i, j int) {
	h.h[i], h.h[j] = h.h[j], h.h[i]
	h.pos[h.h[i].b] = int32(i + 1)
	h.pos[h.h[j].b] = int32(j + 1)
}

func (h *keyHeap[K]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *keyHeap[K]) down(i int) {
	n := len(h.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// push adds b (absent) or updates its key if present.
func (h *keyHeap[K]) push(b Block, key K, seq uint64) {
	h.pos = ensure(h.pos, b, 0)
	if i := h.pos[b]; i != 0 {
		it := &h.h[i-1]
		it.key, it.seq = key, seq
		h.up(int(i - 1))
		h.down(int(h.pos[b] - 1))
		return
	}
	h.h = append(h.h, heapItem[K]{key, seq, b})
	h.pos[b] = int32(len(h.h))
	h.up(len(h.h) - 1)
}

// remove takes b (present) out.
func (h *keyHeap[K]) remove(b Block) heapItem[K] {
	i := int(h.pos[b] - 1)
	it := h.h[i]
	last := len(h.h) - 1
	if i != last {
		h.swap(i, last)
	}
	h.h = h.h[:last]
	h.pos[b] = 0
	if i != last {
		moved := h.h[i].b
		h.up(i)
		h.down(int(h.pos[moved] - 1))
	}
	return it
}

// popUnpinned removes and returns the smallest unpinned item. Pinned items
// met on the way are set aside and pushed back afterwards.
func (h *keyHeap[K]) popUnpinned(pinned Pinned) (heapItem[K], bool) {
	var out heapItem[K]
	ok := false
	for len(h.h) > 0 {
		top := h.h[0]
		if !pinned.Pinned(top.b) {
			out, ok = h.remove(top.b), true
			break
		}
		h.spare = append(h.spare, h.remove(top.b))
	}
	for _, it := range h.spare {
		h.push(it.b, it.key, it.seq)
	}
	h.spare = h.spare[:0]
	return out, ok
}
