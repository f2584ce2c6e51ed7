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
	l := p.l
	run := 0 // consecutive pinned blocks seen: Len of them means all are
	for b := l.Back(); b != None; {
		prev := l.Prev(b)
		switch {
		case pinned.Pinned(b):
			if run++; run >= l.Len() {
				return None, false
			}
		case p.ref[b]:
			run = 0
			p.ref[b] = false
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
