package policy

// Ghost is a bounded FIFO of block ids without data: the "ghost" (shadow)
// entries that ARC, 2Q and S3-FIFO keep for recently evicted blocks, so that
// a quick return can be told from a first visit. Members carry a weight (the
// block's size) and the oldest are dropped while the total exceeds the
// capacity. Membership is O(1) through intrusive links; nothing is allocated
// once the per-block slices have grown.
type Ghost struct {
	l         *List
	w         []int64
	used, cap int64
}

// NewGhost returns an empty ghost set holding at most capacity weight.
func NewGhost(capacity int64) *Ghost { return &Ghost{l: NewList(), cap: capacity} }

// Contains reports whether b is remembered.
func (g *Ghost) Contains(b Block) bool { return g.l.Contains(b) }

// Len is the number of members; Used their total weight.
func (g *Ghost) Len() int    { return g.l.Len() }
func (g *Ghost) Used() int64 { return g.used }

// Add remembers b with weight w, dropping the oldest members to make room.
// A member stays where it is (FIFO: re-adding does not refresh it), and a
// weight above the capacity is not remembered at all.
func (g *Ghost) Add(b Block, w int64) {
	if g.l.Contains(b) || w > g.cap {
		return
	}
	for g.used+w > g.cap {
		g.dropOldest()
	}
	g.w = ensure(g.w, b, 0)
	g.w[b] = w
	g.used += w
	g.l.PushFront(b)
}

// Remove forgets b and reports whether it was a member.
func (g *Ghost) Remove(b Block) bool {
	if !g.l.Contains(b) {
		return false
	}
	g.l.Remove(b)
	g.used -= g.w[b]
	return true
}

func (g *Ghost) dropOldest() {
	b := g.l.PopBack()
	g.used -= g.w[b]
}
