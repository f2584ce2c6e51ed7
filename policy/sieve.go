package policy

// Sieve is SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI'24): a
// FIFO queue with a visited bit and a hand that sweeps from the oldest block
// toward the newest, clearing visited bits, and evicts the first unvisited
// block it meets. Unlike CLOCK, survivors stay in place, so new blocks near
// the front are sifted out quickly while popular old ones stay.
type Sieve struct {
	l       *List
	visited []bool
	hand    Block
}

// NewSieve returns an empty SIEVE.
func NewSieve() *Sieve { return &Sieve{l: NewList(), hand: None} }

func (p *Sieve) Insert(b Block, _ int64, _ int64) {
	p.visited = ensure(p.visited, b, false)
	p.visited[b] = false
	p.l.PushFront(b)
}
func (p *Sieve) Access(b Block, _ int64) { p.visited[b] = true }
func (p *Sieve) Len() int                { return p.l.Len() }

func (p *Sieve) Remove(b Block) {
	if p.hand == b {
		p.hand = p.l.Prev(b)
	}
	p.l.Remove(b)
}

func (p *Sieve) Evict(_ int64, pinned Pinned) (Block, bool) {
	l := p.l
	b := p.hand
	if b == None {
		b = l.Back()
	}
	run := 0
	for b != None {
		switch {
		case pinned.Pinned(b):
			if run++; run >= l.Len() {
				return None, false
			}
		case p.visited[b]:
			run = 0
			p.visited[b] = false
		default:
			p.hand = l.Prev(b)
			l.Remove(b)
			return b, true
		}
		if b = l.Prev(b); b == None {
			b = l.Back()
		}
	}
	return None, false
}

func init() {
	Register(Spec{Name: "sieve", Brief: "SIEVE (NSDI'24): FIFO with a visited bit and a sweeping hand",
		New: func(Config) (Policy, error) { return NewSieve(), nil }})
}
