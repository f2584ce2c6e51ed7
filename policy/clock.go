package policy

// Clock is CLOCK / second chance (Corbató 1968; FIFO-Reinsertion in
// libCacheSim): a FIFO queue with one reference bit per block. A hit sets
// the bit; eviction looks at the oldest block and, if its bit is set, clears
// it and moves the block to the front instead of evicting it. It
// approximates LRU without touching the queue on hits.
type Clock struct {
	l   *List
	ref []bool
}

// NewClock returns an empty CLOCK.
func NewClock() *Clock { return &Clock{l: NewList()} }

func (p *Clock) Insert(b Block, _ int64, _ int64) {
	p.ref = ensure(p.ref, b, false)
	p.ref[b] = false
	p.l.PushFront(b)
}
func (p *Clock) Access(b Block, _ int64) { p.ref[b] = true }
func (p *Clock) Remove(b Block)          { p.l.Remove(b) }
func (p *Clock) Len() int                { return p.l.Len() }

func (p *Clock) Evict(_ int64, pinned Pinned) (Block, bool) {
	return clockSweep(p.l, pinned, p)
}

// secondChance implements chancer: a referenced block loses its bit and stays.
func (p *Clock) secondChance(b Block) bool {
	if !p.ref[b] {
		return false
	}
	p.ref[b] = false
	return true
}

// chancer decides, during a CLOCK sweep, whether a block is spared (and
// updates what it keeps about the block).
type chancer interface{ secondChance(b Block) bool }

// clockSweep is the CLOCK hand over l from the back: a spared block goes to
// the front, pinned ones are skipped, and the first other block is removed
// and returned. ok is false when every block is pinned.
func clockSweep(l *List, pinned Pinned, c chancer) (Block, bool) {
	run := 0 // consecutive pinned blocks seen: Len of them means all are
	for b := l.Back(); b != None; {
		prev := l.Prev(b)
		switch {
		case pinned.Pinned(b):
			if run++; run >= l.Len() {
				return None, false
			}
		case c.secondChance(b):
			run = 0
			l.MoveToFront(b)
		default:
			l.Remove(b)
			return b, true
		}
		if prev == None {
			prev = l.Back()
		}
		b = prev
	}
	return None, false
}

func init() {
	Register(Spec{Name: "clock", Brief: "CLOCK / second chance (FIFO with a reference bit)",
		New: func(Config) (Policy, error) { return NewClock(), nil }})
}
