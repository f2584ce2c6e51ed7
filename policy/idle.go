package policy

import (
	"errors"
	"math"
)

// Idler is implemented by policies that rank the blocks of idle agent
// sessions (IdleRank). The caller calls Idle(b, back) when the last
// request using resident block b has finished and b's session is expected
// to send its next call at time back (the caller's clock), and Busy(b)
// when a request that needs b arrives (it may queue before it touches b).
// A block marked by several sessions keeps the earliest return. Busy,
// Access, Insert, Remove and Acquire clear the mark.
type Idler interface {
	Idle(b Block, back int64)
	Busy(b Block)
}

// IdleRank wraps base so that Evict takes, among unpinned blocks marked
// idle, first the one whose session is most overdue (expected back before
// now and not back: a longer wait than estimated, or a session that
// ended), then the one expected back latest; at equal times the block
// marked last (the deeper one of a prefix) goes first. With no unpinned
// block marked, base chooses as it would alone. MORI (Xia et al. 2026, "Idleness is
// Relative") ranks an agent's programs by idleness and keeps the least
// idle in HBM; this is the block-level form of that ranking.
//
// Policies that evict in batches (Batcher) or follow the request order
// (Sequencer) are refused: the wrapper would hide what the caller needs.
func IdleRank(base Policy) (Policy, error) {
	if _, ok := base.(Batcher); ok {
		return nil, errors.New("idle ranking cannot wrap a policy that evicts in batches")
	}
	if _, ok := base.(Sequencer); ok {
		return nil, errors.New("idle ranking cannot wrap an offline policy")
	}
	r := &idleRank{base: base}
	if h, ok := base.(Holder); ok {
		return &idleRankHolder{idleRank: r, h: h}, nil
	}
	return r, nil
}

type idleRank struct {
	base  Policy
	early keyHeap[int64] // key: back, the earliest return on top
	late  keyHeap[int64] // the same blocks, key -back: the latest on top
	n     uint64         // marks so far: seq MaxUint64-n puts the last marked first among equals
}

// Idle implements Idler.
func (r *idleRank) Idle(b Block, back int64) {
	if r.early.contains(b) && r.early.h[r.early.pos[b]-1].key <= back {
		return
	}
	r.n++
	r.early.push(b, back, math.MaxUint64-r.n)
	r.late.push(b, -back, math.MaxUint64-r.n)
}

// Busy implements Idler.
func (r *idleRank) Busy(b Block) { r.clear(b) }

func (r *idleRank) clear(b Block) {
	if r.early.contains(b) {
		r.early.remove(b)
		r.late.remove(b)
	}
}

func (r *idleRank) Insert(b Block, size int64, now int64) {
	r.clear(b)
	r.base.Insert(b, size, now)
}

func (r *idleRank) Access(b Block, now int64) {
	r.clear(b)
	r.base.Access(b, now)
}

func (r *idleRank) Remove(b Block) {
	r.clear(b)
	r.base.Remove(b)
}

func (r *idleRank) Len() int { return r.base.Len() }

func (r *idleRank) Evict(now int64, pinned Pinned) (Block, bool) {
	if r.early.Len() > 0 && r.early.h[0].key < now {
		if it, ok := r.early.popUnpinned(pinned); ok {
			if it.key < now {
				r.late.remove(it.b)
				r.base.Remove(it.b)
				return it.b, true
			}
			r.early.push(it.b, it.key, it.seq) // no unpinned block is overdue
		}
	}
	if it, ok := r.late.popUnpinned(pinned); ok {
		r.early.remove(it.b)
		r.base.Remove(it.b)
		return it.b, true
	}
	b, ok := r.base.Evict(now, pinned)
	if ok {
		r.clear(b)
	}
	return b, ok
}

// idleRankHolder is idleRank over a Holder: a block taken into use is no
// longer idle.
type idleRankHolder struct {
	*idleRank
	h Holder
}

func (r *idleRankHolder) Acquire(b Block) {
	r.clear(b)
	r.h.Acquire(b)
}

func (r *idleRankHolder) Release(b Block, now int64) { r.h.Release(b, now) }
