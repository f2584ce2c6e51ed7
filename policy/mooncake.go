package policy

import (
	"fmt"
	"math"

	"kvsim/param"
)

// Mooncake models Mooncake Store's memory eviction (kvcache-ai/Mooncake,
// mooncake-store/src/master_service.cpp: EvictionThreadFunc, BatchEvict).
// The store evicts in batches, counted in objects: when use passes
// eviction_high_watermark_ratio (checked every 10 ms), or after a put could
// not allocate, one BatchEvict removes
//
//	ceil(evictable x max(eviction_ratio, used/capacity - high + eviction_ratio))
//
// objects (evictable: not pinned, not in use), those whose lease ran out
// first. The lease is set to the put time at PutEnd and to the read time
// plus a TTL on every read, so the order is approximately LRU by last
// access; kvsim orders by last access (put or read) exactly and models no
// lease TTL (its pins keep blocks in use). Evicted objects are gone at once.
//
// Here a batch is chosen by Evict when none is pending, or at once after an
// insert that leaves use above high_watermark (Overfull); a caller that
// drains the batch (Batcher) removes every member at once. One that does
// not gets one member per Evict: members are doomed when selected, so a hit
// meanwhile does not save them, and one pinned by its turn is skipped.
type Mooncake struct {
	l       *List
	size    []int64
	doomed  []bool
	batch   []Block
	next    int // first batch entry not yet handed out
	used, c int64
	frac    float64
	high    float64
}

// Mooncake Store's defaults (mooncake-store/include/types.h:
// DEFAULT_EVICTION_RATIO, DEFAULT_EVICTION_HIGH_WATERMARK_RATIO).
const (
	MooncakeEvictRatio    = 0.05
	MooncakeHighWatermark = 0.90
)

// NewMooncake returns an empty Mooncake policy for capacity c that evicts
// at least frac of the evictable blocks per batch and evicts ahead of need
// above high x c.
func NewMooncake(c int64, frac, high float64) *Mooncake {
	return &Mooncake{l: NewList(), c: c, frac: frac, high: high}
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

// Overfull implements Batcher: Mooncake's eviction thread runs a batch
// whenever use is above the high watermark.
func (p *Mooncake) Overfull(used, capacity int64) bool {
	return float64(used) > p.high*float64(capacity)
}

// Pending implements Batcher: members of the chosen batch not yet handed out.
func (p *Mooncake) Pending() bool {
	for p.next < len(p.batch) && !p.doomed[p.batch[p.next]] {
		p.next++ // removed since it was chosen
	}
	return p.next < len(p.batch)
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
				continue // in use since: it stays
			}
			p.Remove(b)
			return b, true
		}
		p.selectBatch(pinned)
	}
	return None, false
}

// selectBatch dooms the least recently used evictable blocks, as many as
// BatchEvict's evict_ratio_target asks of the evictable count.
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
	target := p.frac
	if p.c > 0 {
		target = max(target, float64(p.used)/float64(p.c)-p.high+p.frac)
	}
	want := int(math.Ceil(min(target, 1) * float64(evictable)))
	for b := p.l.Back(); b != None && len(p.batch) < want; b = p.l.Prev(b) {
		if pinned.Pinned(b) {
			continue
		}
		p.batch = append(p.batch, b)
		p.doomed[b] = true
	}
}

func init() {
	Register(Spec{Name: "mooncake", Brief: "Mooncake Store: LRU evicted in batches (5% of objects) above a 0.90 high watermark or when full",
		Params: []param.Key{
			{Name: "evict_fraction", Type: param.Number, Default: MooncakeEvictRatio, Doc: "share of the objects one batch evicts"},
			{Name: "high_watermark", Type: param.Number, Default: MooncakeHighWatermark, Doc: "share of the capacity past which a batch goes ahead of need"},
		},
		New: func(c Config) (Policy, error) {
			f, hi := c.Params["evict_fraction"], c.Params["high_watermark"]
			if f <= 0 || f > 1 || hi < 0 || hi > 1 {
				return nil, fmt.Errorf("mooncake: need 0 < evict_fraction <= 1 and 0 <= high_watermark <= 1 (got %g, %g)", f, hi)
			}
			return NewMooncake(c.Capacity, f, hi), nil
		}})
}
