package policy

// LRU evicts the least recently used unpinned block. As a Holder it ages
// blocks from their release.
type LRU struct {
	l    *List
	held int // resident blocks taken out by Acquire
}

// NewLRU returns an empty LRU.
func NewLRU() *LRU { return &LRU{l: NewList()} }

func (p *LRU) Insert(b Block, _ int64, _ int64) { p.l.PushFront(b) }
func (p *LRU) Len() int                         { return p.l.Len() + p.held }

// Access refreshes b; a held block is refreshed at its release instead.
func (p *LRU) Access(b Block, _ int64) {
	if p.l.Contains(b) {
		p.l.MoveToFront(b)
	}
}

func (p *LRU) Remove(b Block) {
	if p.l.Contains(b) {
		p.l.Remove(b)
	} else {
		p.held--
	}
}

// Acquire implements Holder.
func (p *LRU) Acquire(b Block) {
	if p.l.Contains(b) {
		p.l.Remove(b)
		p.held++
	}
}

// Release implements Holder.
func (p *LRU) Release(b Block, _ int64) {
	if !p.l.Contains(b) {
		p.held--
		p.l.PushFront(b)
	}
}

// Evict walks from the cold end past pinned blocks. In-use blocks were
// touched recently, so the walk is short in practice.
func (p *LRU) Evict(_ int64, pinned Pinned) (Block, bool) {
	return evictFromBack(p.l, pinned)
}

// evictFromBack removes and returns the backmost unpinned member of l.
func evictFromBack(l *List, pinned Pinned) (Block, bool) {
	for b := l.Back(); b != None; b = l.Prev(b) {
		if !pinned.Pinned(b) {
			l.Remove(b)
			return b, true
		}
	}
	return None, false
}

// FIFO evicts the oldest inserted unpinned block; hits do not reorder.
type FIFO struct{ l *List }

// NewFIFO returns an empty FIFO.
func NewFIFO() *FIFO { return &FIFO{l: NewList()} }

func (p *FIFO) Insert(b Block, _ int64, _ int64) { p.l.PushFront(b) }
func (p *FIFO) Access(Block, int64)              {}
func (p *FIFO) Remove(b Block)                   { p.l.Remove(b) }
func (p *FIFO) Len() int                         { return p.l.Len() }
func (p *FIFO) Evict(_ int64, pinned Pinned) (Block, bool) {
	return evictFromBack(p.l, pinned)
}

func init() {
	Register(Spec{Name: "lru", Brief: "least recently used", New: func(Config) (Policy, error) { return NewLRU(), nil }})
	Register(Spec{Name: "fifo", Brief: "first in, first out", New: func(Config) (Policy, error) { return NewFIFO(), nil }})
}
