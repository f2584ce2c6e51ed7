package minheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type item struct{ key, seq int }

func before(a, b *item) bool { return a.key < b.key || a.key == b.key && a.seq < b.seq }

// TestOrder: random pushes interleaved with pops come out in (key, seq)
// order, each pop the least of what is held, ties in push order.
func TestOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h []item
	var held []item
	seq := 0
	for range 5000 {
		if len(h) > 0 && rng.IntN(3) == 0 {
			got := Pop(&h, before)
			slices.SortFunc(held, func(a, b item) int {
				if before(&a, &b) {
					return -1
				}
				return 1
			})
			if got != held[0] {
				t.Fatalf("popped %v, least held %v", got, held[0])
			}
			held = held[1:]
			continue
		}
		x := item{key: rng.IntN(50), seq: seq}
		seq++
		Push(&h, x, before)
		held = append(held, x)
	}
	if len(h) != len(held) {
		t.Fatalf("%d held, %d expected", len(h), len(held))
	}
}

// TestNoAllocs: once the slice has grown, pushes and pops allocate nothing.
func TestNoAllocs(t *testing.T) {
	h := make([]item, 0, 64)
	if n := testing.AllocsPerRun(100, func() {
		for i := range 32 {
			Push(&h, item{key: 31 - i, seq: i}, before)
		}
		for range 32 {
			Pop(&h, before)
		}
	}); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}
