package cluster

import (
	"math/rand/v2"
	"testing"

	"kvsim/core"
)

// check verifies the tree's bookkeeping: size, index, the LRU list, and
// that every node's parent is present (the tree stays prefix-closed).
func (tr *routeTree) check(t *testing.T) {
	t.Helper()
	if len(tr.index) != tr.size || tr.size > tr.max {
		t.Fatalf("size %d, index %d, max %d", tr.size, len(tr.index), tr.max)
	}
	seen, prev := 0, int32(-1)
	for id := tr.head; id != -1; id = tr.nodes[id].next {
		n := tr.nodes[id]
		if n.prev != prev {
			t.Fatalf("node %d: prev %d, want %d", id, n.prev, prev)
		}
		if tr.index[n.key] != id {
			t.Fatalf("node %d not indexed under its key", id)
		}
		if parent := int32(n.key>>32) - 1; parent != -1 {
			if _, ok := tr.index[tr.nodes[parent].key]; !ok {
				t.Fatalf("node %d's parent %d is gone", id, parent)
			}
		}
		prev = id
		seen++
	}
	if prev != tr.tail || seen != tr.size {
		t.Fatalf("list: %d nodes ending at %d; size %d, tail %d", seen, prev, tr.size, tr.tail)
	}
}

func blocks(b ...core.Block) []core.Block { return b }

func TestRouteTreeMatchAndInsert(t *testing.T) {
	tr := newRouteTree(100)
	if m := tr.match(blocks(1, 2)); m != 0 {
		t.Fatalf("empty tree matched %d", m)
	}
	tr.insert(blocks(1, 2, 3))
	tr.insert(blocks(1, 2, 4, 5))
	tr.check(t)
	if tr.size != 5 {
		t.Fatalf("size %d, want 5 (1, 2, 3, 4, 5)", tr.size)
	}
	for _, tc := range []struct {
		b    []core.Block
		want int
	}{
		{blocks(1, 2, 3), 3}, {blocks(1, 2, 3, 9), 3}, {blocks(1, 2, 4, 5, 6), 4},
		{blocks(1, 9, 3), 1}, {blocks(2, 3), 0}, {nil, 0},
	} {
		if m := tr.match(tc.b); m != tc.want {
			t.Errorf("match(%v) = %d, want %d", tc.b, m, tc.want)
		}
	}
}

func TestRouteTreeEvictsLeastRecentLeaves(t *testing.T) {
	tr := newRouteTree(5)
	tr.insert(blocks(1, 2, 3)) // 3 nodes
	tr.insert(blocks(7, 8))    // 5 nodes
	tr.insert(blocks(1, 2))    // touch 1, 2: 7 8 and then 3 are the oldest
	tr.insert(blocks(9))       // 6 nodes: the least recent leaf, 3, goes
	tr.check(t)
	if tr.match(blocks(1, 2, 3)) != 2 || tr.match(blocks(7, 8)) != 2 || tr.match(blocks(9)) != 1 {
		t.Fatalf("after one eviction: %d %d %d, want 2 2 1",
			tr.match(blocks(1, 2, 3)), tr.match(blocks(7, 8)), tr.match(blocks(9)))
	}
	tr.insert(blocks(10, 11)) // two more go: 8 then 7 (7 is a leaf once 8 is gone)
	tr.check(t)
	if tr.match(blocks(7)) != 0 || tr.match(blocks(1, 2)) != 2 || tr.match(blocks(10, 11)) != 2 {
		t.Fatalf("7 kept or 1 2 / 10 11 lost: %d %d %d",
			tr.match(blocks(7)), tr.match(blocks(1, 2)), tr.match(blocks(10, 11)))
	}
}

func TestRouteTreeLongerThanBoundKeepsItsPrefix(t *testing.T) {
	tr := newRouteTree(3)
	tr.insert(blocks(1, 2, 3, 4, 5, 6))
	tr.check(t)
	if m := tr.match(blocks(1, 2, 3, 4, 5, 6)); m != 3 {
		t.Fatalf("match %d, want the first 3 blocks", m)
	}
}

func TestRouteTreeRandomStaysConsistent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	tr := newRouteTree(40)
	for k := range 3000 {
		n := 1 + rng.IntN(12)
		b := make([]core.Block, n)
		for j := range b {
			b[j] = core.Block(rng.IntN(3))
		}
		tr.insert(b)
		if m := tr.match(b); m != n {
			t.Fatalf("step %d: just inserted %v, matched %d", k, b, m)
		}
		if k%97 == 0 {
			tr.check(t)
		}
	}
	tr.check(t)
	if len(tr.nodes) > 40+12 {
		t.Fatalf("%d node slots for a bound of 40: freed slots not reused", len(tr.nodes))
	}
}
