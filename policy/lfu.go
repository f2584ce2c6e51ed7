package policy

// LFU evicts the least frequently used block, as libCacheSim's LFU does:
// the count covers only the block's current stay in the cache (a new block
// starts at 1 and the count is forgotten on eviction), and among blocks of
// equal count the one that reached that count first goes first (FIFO per
// count). O(1) per call: one intrusive FIFO per count value, and the
// non-empty counts linked in ascending order (Shah, Mitra and Matani, "An
// O(1) algorithm for implementing the LFU cache eviction scheme", 2010).
type LFU struct {
	freq       []int32 // per block; 0 = not resident
	prev, next []Block // links inside a count's FIFO

	// per count value
	head, tail   []Block // FIFO ends: head oldest
	upper, lower []int32 // next higher / lower non-empty count, 0 = none
	min          int32   // smallest non-empty count, 0 = empty
	n            int
}

// NewLFU returns an empty LFU.
func NewLFU() *LFU { return &LFU{} }

func (p *LFU) Len() int { return p.n }

// bucket makes sure the per-count slices cover f.
func (p *LFU) bucket(f int32) {
	if int(f) < len(p.head) {
		return
	}
	p.head = ensure(p.head, f, None)
	p.tail = ensure(p.tail, f, None)
	p.upper = ensure(p.upper, f, 0)
	p.lower = ensure(p.lower, f, 0)
}

// append puts b at the back of count f's FIFO, linking f into the count list
// right above below (0: at the bottom) if it was empty.
func (p *LFU) append(b Block, f, below int32) {
	if p.head[f] == None {
		var above int32
		if below == 0 {
			above = p.min
			p.min = f
		} else {
			above = p.upper[below]
			p.upper[below] = f
		}
		p.lower[f], p.upper[f] = below, above
		if above != 0 {
			p.lower[above] = f
		}
		p.head[f] = b
		p.prev[b] = None
	} else {
		p.next[p.tail[f]] = b
		p.prev[b] = p.tail[f]
	}
	p.next[b] = None
	p.tail[f] = b
	p.freq[b] = f
}

// unlink takes b out of its count's FIFO, unlinking the count if it empties.
func (p *LFU) unlink(b Block) {
	f := p.freq[b]
	pr, nx := p.prev[b], p.next[b]
	if pr != None {
		p.next[pr] = nx
	} else {
		p.head[f] = nx
	}
	if nx != None {
		p.prev[nx] = pr
	} else {
		p.tail[f] = pr
	}
	if p.head[f] == None {
		lo, up := p.lower[f], p.upper[f]
		if lo != 0 {
			p.upper[lo] = up
		} else {
			p.min = up
		}
		if up != 0 {
			p.lower[up] = lo
		}
	}
}

func (p *LFU) Insert(b Block, _ int64, _ int64) {
	p.freq = ensure(p.freq, b, 0)
	p.prev = ensure(p.prev, b, None)
	p.next = ensure(p.next, b, None)
	p.bucket(1)
	p.append(b, 1, 0)
	p.n++
}

func (p *LFU) Access(b Block, _ int64) {
	f := p.freq[b]
	p.bucket(f + 1)
	// Link f+1 above f while f is still non-empty, then leave f.
	below := f
	if p.head[f] == b && p.tail[f] == b {
		below = p.lower[f] // f empties: f+1 takes its place
	}
	p.unlink(b)
	p.append(b, f+1, below)
}

func (p *LFU) Remove(b Block) {
	p.unlink(b)
	p.freq[b] = 0
	p.n--
}

func (p *LFU) Evict(_ int64, pinned Pinned) (Block, bool) {
	for f := p.min; f != 0; f = p.upper[f] {
		for b := p.head[f]; b != None; b = p.next[b] {
			if !pinned.Pinned(b) {
				p.Remove(b)
				return b, true
			}
		}
	}
	return None, false
}

func init() {
	Register(Spec{Name: "lfu", Brief: "least frequently used while cached, FIFO among equal counts (libCacheSim LFU)",
		New: func(Config) (Policy, error) { return NewLFU(), nil }})
}
