package policy

import (
	"errors"
	"math"
)

// Idler is implemented by policies that rank the blocks of idle agent
// sessions (IdleRank). The caller calls Idle(b, back) when the last
// request using resident block b has finished and b's session is expected
// to send its next call at time back (the caller's clock). A block marked
// by several sessions keeps the earliest return. Access, Insert, Remove and
// Acquire clear the mark: the session came back, or the copy is gone.
type Idler interface {
	Idle(b Block, back int64)
}

// IdleRank wraps base so that Evict first takes, among unpinned blocks
// marked idle, the one whose session is expected back latest, as long as
// that return is still ahead of now; at equal returns the block marked last
// (the deeper one of a prefix) goes first. When no marked block is
// expected after now (none marked, or every estimate has passed) base
// chooses as it would alone. MORI (Xia et al. 2026, "Idleness is
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
	marks keyHeap[int64] // key: -back, so the latest return is on top
	n     uint64         // marks so far: seq MaxUint64-n puts the last marked first among equals
}

// Idle implements Idler.
func (r *idleRank) Idle(b Block, back int64) {
	if r.marks.contains(b) && -r.marks.h[r.marks.pos[b]-1].key <= back {
		return
	}
	r.n++
	r.marks.push(b, -back, math.MaxUint64-r.n)
}

func (r *idleRank) clear(b Block) {
	if r.marks.contains(b) {
		r.marks.remove(b)
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
	if r.marks.Len() > 0 && -r.marks.h[0].key > now {
		if it, ok := r.marks.popUnpinned(pinned); ok {
			if -it.key > now {
				r.base.Remove(it.b)
				return it.b, true
			}
			r.marks.push(it.b, it.key, it.seq) // every unpinned estimate has passed
		}
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
