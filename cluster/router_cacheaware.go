package cluster

import (
	"math"

	"kvsim/core"
	"kvsim/param"
)

func init() {
	RegisterRouter(RouterSpec{Name: "cache_aware", Rank: 3, Brief: "SGLang's rule: the longest routed prefix, or the least loaded",
		Reads: "`Queued`, `Running`", State: "a tree of routed prefixes per instance",
		Keys: []param.Key{
			{Name: "cache_threshold", Type: param.Number, Default: 0.5, Min: param.AtLeast0, FMax: 1, Msg: "must be within 0..1, got %g", Example: "0.5",
				Doc: "cache_aware: a prefix match above this share of the prompt wins (SGLang)"},
			{Name: "balance_abs", Type: param.Number, Default: 32.0, Min: param.AtLeast0, Example: "32",
				Doc: "cache_aware: imbalanced when the loads differ by more than this ..."},
			{Name: "balance_rel", Type: param.Number, Default: 1.0001, Min: param.AtLeast1, Msg: "must be >= 1, got %g", Example: "1.0001",
				Doc: "... and the largest exceeds the smallest times this"},
		},
		New: func(p Params) Router { return newCacheAware(p) }})
}

// cacheAware is SGLang's cache-aware policy. Like SGLang's router it keeps,
// per instance, an approximate tree of the prefixes it routed there (not
// what the instance really caches), because the fallback needs each tree's
// size and because the real router sees nothing else of the caches.
type cacheAware struct {
	p     Params
	trees []routeTree
}

func newCacheAware(p Params) *cacheAware { return &cacheAware{p: p} }

func (*cacheAware) Name() string { return "cache_aware" }

func (c *cacheAware) Route(_ int64, r *core.Request, v View) (int, bool) {
	n := v.Instances()
	if n <= 0 {
		return 0, true
	}
	for len(c.trees) < n {
		c.trees = append(c.trees, newRouteTree(c.p.MaxTreeBlocks))
	}
	pick := c.choose(r, v, n)
	c.trees[pick].insert(r.Blocks)
	return pick, false
}

// choose applies SGLang's rule; the chosen tree learns r either way.
func (c *cacheAware) choose(r *core.Request, v View, n int) int {
	// SGLang's load is a worker's requests in flight: routed, unfinished.
	minLoad, maxLoad, least := math.MaxInt, math.MinInt, 0
	for i := range n {
		l := v.Queued(i) + v.Running(i)
		if l < minLoad {
			minLoad, least = l, i
		}
		maxLoad = max(maxLoad, l)
	}
	if imbalanced(c.p, minLoad, maxLoad) {
		return least
	}
	bestMatch, best := -1, 0
	smallest, smallestSize := 0, math.MaxInt
	for i := range n {
		if m := c.trees[i].match(r.Blocks); m > bestMatch {
			bestMatch, best = m, i
		}
		if s := c.trees[i].size; s < smallestSize {
			smallest, smallestSize = i, s
		}
	}
	rate := 0.0
	if len(r.Blocks) > 0 {
		rate = float64(bestMatch) / float64(len(r.Blocks))
	}
	if rate > c.p.CacheThreshold {
		return best
	}
	return smallest
}

// imbalanced is SGLang's test: both thresholds exceeded, strictly.
func imbalanced(p Params, minLoad, maxLoad int) bool {
	return float64(maxLoad-minLoad) > p.BalanceAbs && float64(maxLoad) > float64(minLoad)*p.BalanceRel
}

// routeTree is one instance's tree of routed prefixes: a trie of block ids
// whose nodes sit on an LRU list, bounded to max nodes. A touched path is
// moved to the front deepest first, so a parent is always more recent than
// its children and the list's tail is always a leaf: evicting the tail
// keeps the tree prefix-closed, as SGLang's leaf-first LRU eviction does.
type routeTree struct {
	index      map[uint64]int32 // (parent+1, block) -> node
	nodes      []treeNode
	free       []int32
	head, tail int32 // most and least recently touched; -1: empty
	size, max  int
	path       []int32 // scratch for insert
}

type treeNode struct {
	key        uint64
	prev, next int32
}

func newRouteTree(max int) routeTree {
	return routeTree{index: map[uint64]int32{}, head: -1, tail: -1, max: max}
}

func treeKey(parent int32, b core.Block) uint64 {
	return uint64(uint32(parent+1))<<32 | uint64(uint32(b))
}

// match is how many leading blocks of blocks the tree holds.
func (t *routeTree) match(blocks []core.Block) int {
	parent := int32(-1)
	for k, b := range blocks {
		id, ok := t.index[treeKey(parent, b)]
		if !ok {
			return k
		}
		parent = id
	}
	return len(blocks)
}

// insert adds blocks as a path, touches it and evicts down to max.
func (t *routeTree) insert(blocks []core.Block) {
	t.path = t.path[:0]
	parent := int32(-1)
	for _, b := range blocks {
		k := treeKey(parent, b)
		id, ok := t.index[k]
		if !ok {
			id = t.alloc(k)
			t.index[k] = id
			t.size++
		}
		t.path = append(t.path, id)
		parent = id
	}
	for j := len(t.path) - 1; j >= 0; j-- {
		t.toFront(t.path[j])
	}
	for t.size > t.max {
		t.evictTail()
	}
}

func (t *routeTree) alloc(k uint64) int32 {
	if n := len(t.free); n > 0 {
		id := t.free[n-1]
		t.free = t.free[:n-1]
		t.nodes[id] = treeNode{key: k, prev: -1, next: -1}
		return id
	}
	t.nodes = append(t.nodes, treeNode{key: k, prev: -1, next: -1})
	return int32(len(t.nodes) - 1)
}

// linked says whether id is on the list (a fresh node is not).
func (t *routeTree) linked(id int32) bool {
	return t.head == id || t.nodes[id].prev != -1
}

func (t *routeTree) unlink(id int32) {
	n := &t.nodes[id]
	if n.prev != -1 {
		t.nodes[n.prev].next = n.next
	} else {
		t.head = n.next
	}
	if n.next != -1 {
		t.nodes[n.next].prev = n.prev
	} else {
		t.tail = n.prev
	}
	n.prev, n.next = -1, -1
}

func (t *routeTree) toFront(id int32) {
	if t.head == id {
		return
	}
	if t.linked(id) {
		t.unlink(id)
	}
	n := &t.nodes[id]
	n.next = t.head
	if t.head != -1 {
		t.nodes[t.head].prev = id
	}
	t.head = id
	if t.tail == -1 {
		t.tail = id
	}
}

func (t *routeTree) evictTail() {
	id := t.tail
	t.unlink(id)
	delete(t.index, t.nodes[id].key)
	t.free = append(t.free, id)
	t.size--
}
