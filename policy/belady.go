package policy

import "errors"

// Belady is the offline optimum MIN (Belady, "A study of replacement
// algorithms for a virtual-storage computer", IBM Systems Journal 1966):
// evict the block whose next use is farthest in the future; blocks never
// used again go first. It needs Config.Future. Every miss is inserted, so
// compulsory misses count, as in libCacheSim's Belady. A heap keyed by next
// use is updated on every Insert and Access.
//
// Its clock is the reference order: once a caller calls SetSeq (the core,
// with the trace position of the request it serves) next uses are asked
// after that position, so the references of requests already queued are
// in the future; until then (mrc, one reference per position) after now.
//
// A block's next use is asked when it is touched. In a tier of a hierarchy
// a reference may pass without touching it (the request found the block in
// a higher tier), which would leave its next use in the past and the block
// kept for good; so once sequenced, Belady re-asks every block whose next
// use the position has reached (each block walks its references once).
type Belady struct {
	h    keyHeap[int64] // key = -next use: the min is the farthest
	due  keyHeap[int64] // once seqd: key = next use, the min is the next due
	f    Future
	tick uint64 // heap tie-break: among equals, the least recently touched goes
	pos  int64  // the request served, once seqd
	hi   int64  // the furthest position set
	seqd bool
}

// NewBelady returns an empty MIN that asks f for next uses.
func NewBelady(f Future) *Belady { return &Belady{f: f} }

func (p *Belady) Len() int { return p.h.Len() }

// SetSeq implements Sequencer. A position further than any before re-asks
// the next use of the blocks it reached.
func (p *Belady) SetSeq(seq int64) {
	if !p.seqd { // blocks touched before (preloaded ones) are due too
		p.seqd, p.hi = true, seq
		for _, it := range p.h.h {
			p.due.push(it.b, -it.key, it.seq)
		}
	}
	p.pos = seq
	if seq <= p.hi {
		return
	}
	p.hi = seq
	for p.due.Len() > 0 && p.due.h[0].key <= seq {
		it := p.due.h[0]
		nu := p.f.NextUse(it.b, seq)
		p.due.push(it.b, nu, it.seq) // keeps its tie-break: not touched
		p.h.push(it.b, -nu, it.seq)
	}
}

func (p *Belady) Insert(b Block, _ int64, now int64) { p.Access(b, now) }

func (p *Belady) Access(b Block, now int64) {
	if p.seqd {
		now = p.pos
	}
	p.tick++
	nu := p.f.NextUse(b, now)
	p.h.push(b, -nu, p.tick) // -MaxInt64 (never) is the minimum
	if p.seqd {
		p.due.push(b, nu, p.tick)
	}
}

func (p *Belady) Remove(b Block) {
	p.h.remove(b)
	if p.due.contains(b) {
		p.due.remove(b)
	}
}

func (p *Belady) Evict(_ int64, pinned Pinned) (Block, bool) {
	it, ok := p.h.popUnpinned(pinned)
	if !ok {
		return None, false
	}
	if p.due.contains(it.b) {
		p.due.remove(it.b)
	}
	return it.b, true
}

func init() {
	Register(Spec{Name: "belady", Brief: "offline optimum MIN (needs the future of the trace)", Offline: true,
		New: func(c Config) (Policy, error) {
			if c.Future == nil {
				return nil, errors.New("belady: needs the trace's future (Config.Future), which this caller does not provide")
			}
			return NewBelady(c.Future), nil
		}})
}
