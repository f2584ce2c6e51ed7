package policy

import (
	"fmt"
	"math"
)

// Mooncake models Mooncake Store's DRAM eviction (kvcache-ai/Mooncake,
// FAST'25): approximate LRU by last access time, evicting in batches. When
// Evict finds no batch pending it selects one: the evictable (unpinned)
// blocks with the oldest access times, at least evict_fraction of them, and
// if use is above high_watermark of Config.Capacity, enough to bring it down
// to low_watermark. The batch is then handed out one block per Evict call.
// Mooncake evicts above the high watermark "or when a put cannot get
// space"; the core calls Evict exactly when a put does not fit, which is the
// second trigger (it never evicts ahead of need, so use can stay above the
// high watermark between puts).
//
// Batch members are doomed when selected: a later hit refreshes their place
// in the LRU order but does not save them, as Mooncake would already have
// dropped them. One that is pinned or gone by its turn is skipped.
type Mooncake struct {
	l         *List
	size      []int64
	doomed    []bool
	batch     []Block
	next      int // first batch entry not yet handed out
	used, c   int64
	frac      float64
	high, low float64
}

// NewMooncake returns an empty Mooncake policy for capacity c.
func NewMooncake(c int64, frac, high, low float64) *Mooncake {
	return &Mooncake{l: NewList(), c: c, frac: frac, high: high, low: low}
}

func (p *Mooncake) Len() int { return p.l.Len() }

func (p *Mooncake) Insert(b Block, size int64, _ int64) {
	p.size = ensure(p.size, b, 0)
	p.doomed = ensure(p.doomed, b, false)
	p.size[b], p.doomed[b] = size, false
	p.used += size
	p.l.PushFront(b)
}

func (p *Mooncake) Access(b Block, _ int64) { p.l.MoveToFront(b) }

func (p *Mooncake) Remove(b Block) {
	p.doomed[b] = false
	p.used -= p.size[b]
	p.l.Remove(b)
}

func (p *Mooncake) Evict(_ int64, pinned Pinned) (Block, bool) {
	for pass := 0; pass < 2; pass++ {
		for p.next < len(p.batch) {
			b := p.batch[p.next]
			p.next++
			if !p.doomed[b] {
				continue // removed since
			}
			p.doomed[b] = false
			if pinned.Pinned(b) {
				continue // in use: its lease keeps it
			}
			p.Remove(b)
			return b, true
		}
		p.selectBatch(pinned)
	}
	return None, false
}

// selectBatch dooms the oldest evictable blocks.
func (p *Mooncake) selectBatch(pinned Pinned) {
	p.batch, p.next = p.batch[:0], 0
	evictable := p.l.Len()
	if pinned != NoPins {
		evictable = 0
		for b := p.l.Back(); b != None; b = p.l.Prev(b) {
			if !pinned.Pinned(b) {
				evictable++
			}
		}
	}
	want := int(math.Ceil(p.frac * float64(evictable)))
	target := int64(math.MaxInt64) // use to get down to
	if float64(p.used) > p.high*float64(p.c) {
		target = int64(p.low * float64(p.c))
	}
	left := p.used
	for b := p.l.Back(); b != None; b = p.l.Prev(b) {
		if len(p.batch) >= want && left <= target {
			break
		}
		if pinned.Pinned(b) {
			continue
		}
		p.batch = append(p.batch, b)
		p.doomed[b] = true
		left -= p.size[b]
	}
}

func init() {
	Register(Spec{Name: "mooncake", Brief: "Mooncake Store: approximate LRU, batch eviction between watermarks",
		Params: []string{"evict_fraction", "high_watermark", "low_watermark"},
		New: func(c Config) (Policy, error) {
			f := c.Params.Get("evict_fraction", 0.05)
			hi, lo := c.Params.Get("high_watermark", 0.90), c.Params.Get("low_watermark", 0.80)
			if f <= 0 || f > 1 || lo < 0 || lo > hi || hi > 1 {
				return nil, fmt.Errorf("mooncake: need 0 < evict_fraction <= 1 and 0 <= low_watermark <= high_watermark <= 1 (got %g, %g, %g)", f, lo, hi)
			}
			return NewMooncake(c.Capacity, f, hi, lo), nil
		}})
}
