package policy

import (
	"fmt"

	"kvsim/param"
)

// TwoQ is the full 2Q of Johnson and Shasha (VLDB'94). New blocks enter
// A1in, a FIFO holding about kin of the capacity; blocks pushed out of A1in
// are remembered in the ghost queue A1out (kout of the capacity). A block
// that returns while in A1out has proven itself and goes to Am, an LRU
// holding the rest. Hits in A1in change nothing (correlated references), so
// a burst of one-off blocks cannot flush Am.
type TwoQ struct {
	in, am      *List
	out         *Ghost
	size        []int64
	inUsed, kin int64
}

// NewTwoQ returns an empty 2Q for capacity c.
func NewTwoQ(c int64, kin, kout float64) *TwoQ {
	return &TwoQ{in: NewList(), am: NewList(), out: NewGhost(int64(kout * float64(c))), kin: int64(kin * float64(c))}
}

func (p *TwoQ) Len() int { return p.in.Len() + p.am.Len() }

func (p *TwoQ) Insert(b Block, size int64, _ int64) {
	p.size = ensure(p.size, b, 0)
	p.size[b] = size
	p.in.Reserve(b)
	p.am.Reserve(b)
	p.out.Reserve(b)
	hit := p.out.Remove(b)
	p.out.Trim()
	if hit {
		p.am.PushFront(b)
		return
	}
	p.in.PushFront(b)
	p.inUsed += size
}

func (p *TwoQ) Access(b Block, _ int64) {
	if p.am.Contains(b) {
		p.am.MoveToFront(b)
	}
}

func (p *TwoQ) Remove(b Block) {
	if p.in.Contains(b) {
		p.in.Remove(b)
		p.inUsed -= p.size[b]
		return
	}
	p.am.Remove(b)
}

// Evict reclaims from A1in while it is over its share (or Am has nothing
// to give), else from Am.
func (p *TwoQ) Evict(_ int64, pinned Pinned) (Block, bool) {
	if p.inUsed > p.kin || p.am.Len() == 0 {
		if b, ok := p.evictIn(pinned); ok {
			return b, true
		}
		return evictFromBack(p.am, pinned)
	}
	if b, ok := evictFromBack(p.am, pinned); ok {
		return b, true
	}
	return p.evictIn(pinned)
}

func (p *TwoQ) evictIn(pinned Pinned) (Block, bool) {
	b, ok := evictFromBack(p.in, pinned)
	if ok {
		p.inUsed -= p.size[b]
		p.out.Add(b, p.size[b])
	}
	return b, ok
}

func init() {
	Register(Spec{Name: "2q", Brief: "2Q (VLDB'94): FIFO probation, ghost queue, LRU main",
		Params: []param.Key{
			{Name: "kin", Type: param.Number, Default: 0.25, Doc: "the probation FIFO's share of the capacity"},
			{Name: "kout", Type: param.Number, Default: 0.50, Doc: "the ghost queue's size, a share of the capacity"},
		},
		New: func(c Config) (Policy, error) {
			kin, kout := c.Params["kin"], c.Params["kout"]
			if kin <= 0 || kin >= 1 || kout < 0 {
				return nil, fmt.Errorf("2q: kin must be in (0,1) and kout >= 0 (got kin=%g kout=%g)", kin, kout)
			}
			return NewTwoQ(c.Capacity, kin, kout), nil
		}})
}
