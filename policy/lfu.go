package policy

// LFU evicts the least frequently used block, as libCacheSim's LFU does:
// the count covers only the block's current stay in the cache (a new block
// starts at 1 and the count is forgotten on eviction), and among blocks of
// equal count the one that reached that count first goes first (FIFO per
// count). O(1) per call, after Shah, Mitra and Matani, "An O(1) algorithm
// for implementing the LFU cache eviction scheme" (2010): one intrusive FIFO
// per distinct count in use, those count nodes linked in ascending order and
// recycled through a free list, so memory follows the number of resident
// blocks, not the largest count.
type LFU struct {
	node       []int32 // per block: its count node
	prev, next []Block // links inside a count node's FIFO

	// count nodes
	count      []int64
	head, tail []Block // FIFO ends: head oldest
	up, down   []int32 // neighbour nodes by count, -1 = none
	free       []int32
	low        int32 // node of the smallest count, -1 = empty
	n          int
}

// NewLFU returns an empty LFU. The node pool starts with room for 128
// distinct counts (it doubles if more are ever in use at once).
func NewLFU() *LFU {
	const n = 128
	return &LFU{low: -1, count: make([]int64, 0, n), head: make([]Block, 0, n), tail: make([]Block, 0, n),
		up: make([]int32, 0, n), down: make([]int32, 0, n), free: make([]int32, 0, n)}
}

func (p *LFU) Len() int { return p.n }

// newNode returns a node for count c linked right above below (-1: at the
// bottom).
func (p *LFU) newNode(c int64, below int32) int32 {
	var x int32
	if k := len(p.free); k > 0 {
		x = p.free[k-1]
		p.free = p.free[:k-1]
	} else {
		x = int32(len(p.count))
		p.count = append(p.count, 0)
		p.head = append(p.head, None)
		p.tail = append(p.tail, None)
		p.up = append(p.up, -1)
		p.down = append(p.down, -1)
	}
	p.count[x], p.head[x], p.tail[x] = c, None, None
	above := p.low
	if below >= 0 {
		above = p.up[below]
		p.up[below] = x
	} else {
		p.low = x
	}
	p.down[x], p.up[x] = below, above
	if above >= 0 {
		p.down[above] = x
	}
	return x
}

func (p *LFU) push(b Block, x int32) {
	if t := p.tail[x]; t != None {
		p.next[t] = b
		p.prev[b] = t
	} else {
		p.head[x] = b
		p.prev[b] = None
	}
	p.next[b] = None
	p.tail[x] = b
	p.node[b] = x
}

// unlink takes b out of its node, freeing the node if it empties.
func (p *LFU) unlink(b Block) {
	x := p.node[b]
	pr, nx := p.prev[b], p.next[b]
	if pr != None {
		p.next[pr] = nx
	} else {
		p.head[x] = nx
	}
	if nx != None {
		p.prev[nx] = pr
	} else {
		p.tail[x] = pr
	}
	if p.head[x] != None {
		return
	}
	lo, hi := p.down[x], p.up[x]
	if lo >= 0 {
		p.up[lo] = hi
	} else {
		p.low = hi
	}
	if hi >= 0 {
		p.down[hi] = lo
	}
	p.free = append(p.free, x)
}

func (p *LFU) Insert(b Block, _ int64, _ int64) {
	p.node = ensure(p.node, b, -1)
	p.prev = ensure(p.prev, b, None)
	p.next = ensure(p.next, b, None)
	x := p.low
	if x < 0 || p.count[x] != 1 {
		x = p.newNode(1, -1)
	}
	p.push(b, x)
	p.n++
}

func (p *LFU) Access(b Block, _ int64) {
	x := p.node[b]
	c := p.count[x]
	y := p.up[x]
	if y < 0 || p.count[y] != c+1 {
		y = p.newNode(c+1, x) // linked while x is still in the list
	}
	p.unlink(b)
	p.push(b, y)
}

func (p *LFU) Remove(b Block) {
	p.unlink(b)
	p.n--
}

func (p *LFU) Evict(_ int64, pinned Pinned) (Block, bool) {
	for x := p.low; x >= 0; x = p.up[x] {
		for b := p.head[x]; b != None; b = p.next[b] {
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
