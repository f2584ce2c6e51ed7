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
type Belady struct {
	h    keyHeap[int64] // key = -next use: the min is the farthest
	f    Future
	tick uint64 // heap tie-break: among equals, the least recently touched goes
	pos  int64  // the request served, once seqd
	seqd bool
}

// NewBelady returns an empty MIN that asks f for next uses.
func NewBelady(f Future) *Belady { return &Belady{f: f} }

func (p *Belady) Len() int { return p.h.Len() }

// SetSeq implements Sequencer.
func (p *Belady) SetSeq(seq int64) { p.pos, p.seqd = seq, true }

func (p *Belady) Insert(b Block, _ int64, now int64) { p.Access(b, now) }

func (p *Belady) Access(b Block, now int64) {
	if p.seqd {
		now = p.pos
	}
	p.tick++
	p.h.push(b, -p.f.NextUse(b, now), p.tick) // -MaxInt64 (never) is the minimum
}

func (p *Belady) Remove(b Block) { p.h.remove(b) }

func (p *Belady) Evict(_ int64, pinned Pinned) (Block, bool) {
	it, ok := p.h.popUnpinned(pinned)
	if !ok {
		return None, false
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
