package mrc

import (
	"math"
	"sort"
	"sync"
)

// Future is Belady's oracle for a Trace replayed with now = the reference's
// position. NextUse of the block referenced at now is one array read; any
// other (block, now) pair falls back to a binary search in the block's
// positions, built on first need. Safe for concurrent use.
type Future struct {
	blocks []int32
	next   []int32 // next[i]: position of the next reference to blocks[i], or -1
	dist   int

	once sync.Once
	off  []int32 // positions of block b are pos[off[b]:off[b+1]]
	pos  []int32
}

// NewFuture indexes t's next uses.
func NewFuture(t *Trace) *Future {
	f := &Future{blocks: t.Blocks, next: make([]int32, len(t.Blocks)), dist: t.Distinct}
	last := make([]int32, t.Distinct)
	for i := range last {
		last[i] = -1
	}
	for i := len(t.Blocks) - 1; i >= 0; i-- {
		b := t.Blocks[i]
		f.next[i] = last[b]
		last[b] = int32(i)
	}
	return f
}

// NextUse implements policy.Future.
func (f *Future) NextUse(b int32, now int64) int64 {
	if now >= 0 && now < int64(len(f.blocks)) && f.blocks[now] == b {
		if n := f.next[now]; n >= 0 {
			return int64(n)
		}
		return math.MaxInt64
	}
	if b < 0 || int(b) >= f.dist {
		return math.MaxInt64
	}
	f.once.Do(f.index)
	ps := f.pos[f.off[b]:f.off[b+1]]
	i := sort.Search(len(ps), func(i int) bool { return int64(ps[i]) > now })
	if i == len(ps) {
		return math.MaxInt64
	}
	return int64(ps[i])
}

func (f *Future) index() {
	f.off = make([]int32, f.dist+1)
	for _, b := range f.blocks {
		f.off[b+1]++
	}
	for i := 1; i <= f.dist; i++ {
		f.off[i] += f.off[i-1]
	}
	f.pos = make([]int32, len(f.blocks))
	fill := append([]int32(nil), f.off[:f.dist]...)
	for i, b := range f.blocks {
		f.pos[fill[b]] = int32(i)
		fill[b]++
	}
}
