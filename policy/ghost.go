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

// Add remembers b with weight w. A member stays where it is (FIFO:
// re-adding does not refresh it). Add does not drop old members down to the
// capacity; Trim does. Policies add a victim in Evict and trim in the Insert
// that follows, after testing the incoming block, so a block is still found
// when the eviction made for it pushed it out: the same outcome as testing
// before evicting, which callers that evict first cannot do. Add alone keeps
// the total under twice the capacity.
func (g *Ghost) Add(b Block, w int64) {
	if g.l.Contains(b) || w > g.cap {
		return
	}
	g.w = ensure(g.w, b, 0)
	g.w[b] = w
	g.used += w
	g.l.PushFront(b)
	for g.used > 2*g.cap {
		g.dropOldest()
	}
}

// Reserve grows the per-block state to cover b (see List.Reserve).
func (g *Ghost) Reserve(b Block) {
	g.l.Reserve(b)
	g.w = ensure(g.w, b, 0)
}

// Trim drops the oldest members until the total fits the capacity.
func (g *Ghost) Trim() {
	for g.used > g.cap {
		g.dropOldest()
	}
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
