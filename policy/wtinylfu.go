package policy

import (
	"fmt"

	"kvsim/param"
)

// WTinyLFU is W-TinyLFU (Einziger, Friedman and Manes, ACM TOS 2017; the
// policy of Caffeine): new blocks enter a small LRU window (param window,
// 1% of the capacity); the rest is a segmented LRU main cache whose
// protected segment takes param protected (80%) of it. A block pushed out of
// the window enters main only if a count-min sketch with aging says it was
// seen more often than main's victim (probation's LRU); ties keep the
// incumbent. Every insert and hit is counted. The sketch is sized at the
// first Insert for capacity/size blocks; param doorkeeper=1 adds a Bloom
// filter for first occurrences. Caffeine's hill climbing of the window size
// is not modelled.
type WTinyLFU struct {
	win, prob, prot     *List
	sketch              *Sketch
	size                []int64
	wUsed, bUsed, tUsed int64 // window, probation, protected
	c, wCap, mCap, tCap int64
	doorkeeper          bool
}

// NewWTinyLFU returns an empty W-TinyLFU for capacity c.
func NewWTinyLFU(c int64, window, protected float64, doorkeeper bool) *WTinyLFU {
	w := int64(window * float64(c))
	return &WTinyLFU{win: NewList(), prob: NewList(), prot: NewList(), c: c,
		wCap: w, mCap: c - w, tCap: int64(protected * float64(c-w)), doorkeeper: doorkeeper}
}

func (p *WTinyLFU) Len() int { return p.win.Len() + p.prob.Len() + p.prot.Len() }

func (p *WTinyLFU) Insert(b Block, size int64, _ int64) {
	if p.sketch == nil {
		p.sketch = NewSketch(int(p.c/max(size, 1)), p.doorkeeper)
	}
	p.size = ensure(p.size, b, 0)
	p.size[b] = size
	p.win.Reserve(b)
	p.prob.Reserve(b)
	p.prot.Reserve(b)
	p.sketch.Add(b)
	p.win.PushFront(b)
	p.wUsed += size
}

func (p *WTinyLFU) Access(b Block, _ int64) {
	p.sketch.Add(b)
	switch {
	case p.win.Contains(b):
		p.win.MoveToFront(b)
	case p.prob.Contains(b): // second hit in main: promote, demoting overflow
		p.prob.Remove(b)
		p.bUsed -= p.size[b]
		p.prot.PushFront(b)
		p.tUsed += p.size[b]
		for p.tUsed > p.tCap && p.prot.Len() > 1 {
			v := p.prot.PopBack()
			p.tUsed -= p.size[v]
			p.prob.PushFront(v)
			p.bUsed += p.size[v]
		}
	default:
		p.prot.MoveToFront(b)
	}
}

func (p *WTinyLFU) Remove(b Block) {
	switch {
	case p.win.Contains(b):
		p.win.Remove(b)
		p.wUsed -= p.size[b]
	case p.prob.Contains(b):
		p.prob.Remove(b)
		p.bUsed -= p.size[b]
	default:
		p.prot.Remove(b)
		p.tUsed -= p.size[b]
	}
}

// lruUnpinned is the least recently used unpinned member of l, or None.
func lruUnpinned(l *List, pinned Pinned) Block {
	for b := l.Back(); b != None; b = l.Prev(b) {
		if !pinned.Pinned(b) {
			return b
		}
	}
	return None
}

// Evict makes room for a block about to enter the window. If the window is
// full, the block that entry will push out (the window's LRU) moves into
// main while main has room, else it duels main's victim (probation's LRU)
// and the loser is evicted: Caffeine's order (insert, then settle the
// overflow), shifted because the caller evicts first. With room in the
// window, main's LRU (probation first) goes.
func (p *WTinyLFU) Evict(_ int64, pinned Pinned) (Block, bool) {
	for p.wUsed >= p.wCap && p.wUsed > 0 {
		c := lruUnpinned(p.win, pinned)
		if c == None {
			break
		}
		if p.bUsed+p.tUsed+p.size[c] <= p.mCap {
			p.toProbation(c)
			continue
		}
		v := lruUnpinned(p.prob, pinned)
		if v == None {
			v = lruUnpinned(p.prot, pinned)
		}
		if v != None && p.sketch.Estimate(c) > p.sketch.Estimate(v) {
			p.Remove(v)
			p.toProbation(c)
			return v, true
		}
		p.Remove(c)
		return c, true
	}
	for _, l := range [...]*List{p.prob, p.prot, p.win} {
		if b := lruUnpinned(l, pinned); b != None {
			p.Remove(b)
			return b, true
		}
	}
	return None, false
}

func (p *WTinyLFU) toProbation(b Block) {
	p.win.Remove(b)
	p.wUsed -= p.size[b]
	p.prob.PushFront(b)
	p.bUsed += p.size[b]
}

func init() {
	Register(Spec{Name: "wtinylfu", Brief: "W-TinyLFU (Caffeine): LRU window, SLRU main, count-min admission",
		Params: []param.Key{
			{Name: "window", Type: param.Number, Default: 0.01, Doc: "the LRU window's share of the capacity"},
			{Name: "protected", Type: param.Number, Default: 0.80, Doc: "the protected segment's share of the main SLRU"},
			{Name: "doorkeeper", Type: param.Number, Default: 0.0, Doc: "1: a Bloom filter in front of the sketch"},
		},
		New: func(c Config) (Policy, error) {
			w, pr, d := c.Params["window"], c.Params["protected"], c.Params["doorkeeper"]
			if w < 0 || w >= 1 || pr < 0 || pr > 1 || (d != 0 && d != 1) {
				return nil, fmt.Errorf("wtinylfu: need window in [0,1), protected in [0,1], doorkeeper 0 or 1 (got %g, %g, %g)", w, pr, d)
			}
			return NewWTinyLFU(c.Capacity, w, pr, d == 1), nil
		}})
}
