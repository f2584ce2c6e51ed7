package policy

// ARC is the Adaptive Replacement Cache (Megiddo and Modha, FAST'03): two
// LRU lists of resident blocks, T1 (seen once recently) and T2 (seen at least
// twice), each with a ghost list (B1, B2) of blocks recently evicted from
// it. A miss that hits B1 means T1 was too small and grows the target size
// p of T1; a hit in B2 shrinks it. Sizes are weights (bytes, or 1 each).
//
// It follows the paper and libCacheSim's ARC. The caller evicts before it
// inserts, so Evict alone cannot know whether the incoming block is a
// ghost: a caller that calls Expect(b) first (mrc does) gets the paper's
// order, p adapted before REPLACE and its tie rule (|T1| = p with the
// block in B2 evicts from T1); without it (the core, which evicts for a
// batch of blocks) REPLACE runs with the p of the previous ghost hit.
// Insert trims the ghost lists as the paper's case IV does (equivalent,
// since REPLACE moves a block between a list and its own ghost and leaves
// the sums the trim tests unchanged).
type ARC struct {
	t1, t2, b1, b2 *List
	s1, s2, g1, g2 int64 // weights of T1, T2, B1, B2
	size           []int64
	p              float64
	c              int64
	evicted        int   // Evict calls since the last Insert
	expected       Block // block of the last Expect, until its Insert
	announced      bool  // expected is set
	ghostHit       int8  // 1: expected came from B1, 2: from B2, 0: neither
}

// NewARC returns an empty ARC for a cache of capacity c.
func NewARC(c int64) *ARC {
	return &ARC{t1: NewList(), t2: NewList(), b1: NewList(), b2: NewList(), c: c}
}

func (p *ARC) Len() int { return p.t1.Len() + p.t2.Len() }

// Expect tells ARC that b is about to be inserted, before the evictions
// made for it: a ghost hit adapts p now (cases II and III), so REPLACE
// sees it. The next Insert must be b's.
func (p *ARC) Expect(b Block) {
	p.reserve(b)
	p.expected, p.ghostHit, p.announced = b, p.adapt(b), true
}

func (p *ARC) reserve(b Block) {
	p.size = ensure(p.size, b, 0)
	for _, l := range [...]*List{p.t1, p.t2, p.b1, p.b2} {
		l.Reserve(b)
	}
}

// adapt applies a ghost hit on b (case II or III): p moves and b leaves
// its ghost list. It returns 1 if b was in B1, 2 if in B2, else 0.
func (p *ARC) adapt(b Block) int8 {
	switch {
	case p.b1.Contains(b): // case II: T1 was too small
		p.p = min(p.p+max(float64(p.g2)/float64(p.g1), 1), float64(p.c))
		p.b1.Remove(b)
		p.g1 -= p.size[b]
		return 1
	case p.b2.Contains(b): // case III: T2 was too small
		p.p = max(p.p-max(float64(p.g1)/float64(p.g2), 1), 0)
		p.b2.Remove(b)
		p.g2 -= p.size[b]
		return 2
	}
	return 0
}

func (p *ARC) Insert(b Block, size int64, _ int64) {
	ghost := p.ghostHit
	if !p.announced || p.expected != b {
		p.reserve(b)
		ghost = p.adapt(b)
	}
	p.ghostHit, p.announced = 0, false
	switch {
	case ghost != 0: // a ghost comes back into T2
		p.size[b] = size
		p.t2.PushFront(b)
		p.s2 += size
	default: // case IV: trim the ghosts once per eviction made for it
		for ; p.evicted > 0; p.evicted-- {
			if p.s1+p.g1+size > p.c {
				if p.g1 > 0 {
					p.g1 -= p.size[p.b1.PopBack()]
				}
			} else if p.s1+p.g1+p.s2+p.g2 >= 2*p.c && p.g2 > 0 {
				p.g2 -= p.size[p.b2.PopBack()]
			}
		}
		p.size[b] = size
		p.t1.PushFront(b)
		p.s1 += size
	}
	p.evicted = 0
	// Evictions without inserts (the core making room for a batch) must
	// not let the directory outgrow 2c.
	for p.s1+p.g1+p.s2+p.g2 > 2*p.c && p.g2+p.g1 > 0 {
		if p.g2 > 0 {
			p.g2 -= p.size[p.b2.PopBack()]
		} else {
			p.g1 -= p.size[p.b1.PopBack()]
		}
	}
}

func (p *ARC) Access(b Block, _ int64) {
	if p.t1.Contains(b) {
		p.t1.Remove(b)
		p.s1 -= p.size[b]
		p.t2.PushFront(b)
		p.s2 += p.size[b]
		return
	}
	p.t2.MoveToFront(b)
}

func (p *ARC) Remove(b Block) {
	if p.t1.Contains(b) {
		p.t1.Remove(b)
		p.s1 -= p.size[b]
	} else {
		p.t2.Remove(b)
		p.s2 -= p.size[b]
	}
}

// Evict is REPLACE: take T1's LRU block when T1 exceeds its target p (or
// equals it and the expected block is in B2, or T2 is empty), else T2's, and remember it in the matching ghost list.
func (p *ARC) Evict(_ int64, pinned Pinned) (Block, bool) {
	tie := p.ghostHit == 2 && float64(p.s1) == p.p
	fromT1 := (p.s1 > 0 && (float64(p.s1) > p.p || tie)) || p.s2 == 0
	for range 2 {
		if fromT1 {
			if b, ok := evictFromBack(p.t1, pinned); ok {
				p.s1 -= p.size[b]
				p.b1.PushFront(b)
				p.g1 += p.size[b]
				p.evicted++
				return b, true
			}
		} else if b, ok := evictFromBack(p.t2, pinned); ok {
			p.s2 -= p.size[b]
			p.b2.PushFront(b)
			p.g2 += p.size[b]
			p.evicted++
			return b, true
		}
		fromT1 = !fromT1
	}
	return None, false
}

func init() {
	Register(Spec{Name: "arc", Brief: "Adaptive Replacement Cache (FAST'03)",
		New: func(c Config) (Policy, error) { return NewARC(c.Capacity), nil }})
}
