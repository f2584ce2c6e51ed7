package mrc

// Stack holds exact LRU stack distances of a trace (Mattson, Gecsei,
// Slutz and Traiger, "Evaluation techniques for storage hierarchies", 1970):
// a reference hits in an LRU cache of N blocks iff fewer than N distinct
// blocks were referenced since the previous reference to its block. One
// pass with a Fenwick tree over positions, where a position holds 1 while
// it is its block's latest reference, gives every distance in O(log n).
type Stack struct {
	accesses int64
	hits     []int64 // hits[n]: block-mode hits with a cache of n blocks (cumulative)
	prefix   []int64 // the same in prefix mode
}

// NewStack computes t's stack distances.
func NewStack(t *Trace) *Stack {
	n := len(t.Blocks)
	tree := make([]int32, n+1) // Fenwick, 1-based
	add := func(i int, d int32) {
		for i++; i <= n; i += i & -i {
			tree[i] += d
		}
	}
	sum := func(i int) int32 { // positions [0, i)
		var s int32
		for ; i > 0; i -= i & -i {
			s += tree[i]
		}
		return s
	}
	last := make([]int32, t.Distinct)
	for i := range last {
		last[i] = -1
	}
	// dist[d] counts references at distance d (1..Distinct); cold ones are
	// left out (they miss at every size).
	dist := make([]int64, t.Distinct+2)
	pdist := make([]int64, t.Distinct+2)
	cold := t.Distinct + 1
	for q := 0; q < t.Requests(); q++ {
		worst := 0 // largest distance so far in this request's prefix
		for i := int(t.Starts[q]); i < int(t.Starts[q+1]); i++ {
			b := t.Blocks[i]
			d := cold
			if p := int(last[b]); p >= 0 {
				d = int(sum(i)-sum(p+1)) + 1
				add(p, -1)
			}
			add(i, 1)
			last[b] = int32(i)
			dist[d]++
			worst = max(worst, d)
			pdist[worst]++
		}
	}
	s := &Stack{accesses: int64(n), hits: make([]int64, t.Distinct+1), prefix: make([]int64, t.Distinct+1)}
	for d := 1; d <= t.Distinct; d++ {
		s.hits[d] = s.hits[d-1] + dist[d]
		s.prefix[d] = s.prefix[d-1] + pdist[d]
	}
	return s
}

// Counts are the totals of an LRU cache of size blocks.
func (s *Stack) Counts(size int) Counts {
	size = min(max(size, 0), len(s.hits)-1)
	return Counts{Accesses: s.accesses, Hits: s.hits[size], PrefixHits: s.prefix[size]}
}
