package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A huge capacity in tiny blocks must not size the sketch past its cap
// (it once asked for a terabyte and died).
func TestSketchCapped(t *testing.T) {
	s := NewSketch(1<<40, true)
	if w := len(s.rows[0]) * 16; w != MaxSketchBlocks {
		t.Fatalf("sketch row has %d counters, want the cap %d", w, MaxSketchBlocks)
	}
	if len(s.door)*8 != MaxSketchBlocks {
		t.Fatalf("doorkeeper sized for %d blocks, want %d", len(s.door)*8, MaxSketchBlocks)
	}
	s.Add(7)
	if s.Estimate(7) < 1 {
		t.Fatal("capped sketch lost a count")
	}
}

func TestSketch(t *testing.T) {
	s := NewSketch(1000, false)
	for i := range 20 {
		for range i % 16 {
			s.Add(Block(i))
		}
	}
	for i := range 20 {
		// count-min never underestimates; 4-bit counters saturate at 15
		if got, want := s.Estimate(Block(i)), min(i%16, 15); got < want {
			t.Errorf("block %d: estimate %d < %d", i, got, want)
		}
	}
	// Aging halves every counter once sampleSize increments are recorded.
	s = NewSketch(16, false) // 16 counters a row, aging every 160 adds
	for range 8 {
		s.Add(1)
	}
	if s.Estimate(1) != 8 {
		t.Fatalf("estimate %d, want 8", s.Estimate(1))
	}
	for i := range 152 {
		s.Add(Block(1000 + i%3)) // other blocks, to reach 160
	}
	if got := s.Estimate(1); got > 4 {
		t.Fatalf("after aging: estimate %d, want <= 4", got)
	}
	// The doorkeeper absorbs a first occurrence.
	d := NewSketch(1000, true)
	d.Add(7)
	if d.Estimate(7) != 1 {
		t.Fatalf("doorkeeper: estimate %d after one add", d.Estimate(7))
	}
	d.Add(7)
	d.Add(7)
	if d.Estimate(7) != 3 {
		t.Fatalf("doorkeeper: estimate %d after three adds", d.Estimate(7))
	}
}

func TestGhost(t *testing.T) {
	g := NewGhost(3)
	for b := range Block(5) {
		g.Add(b, 1)
	}
	g.Trim()
	if g.Len() != 3 || g.Contains(1) || !g.Contains(2) || g.Used() != 3 {
		t.Fatalf("after 5 adds and a trim: len %d, 1 in %v, 2 in %v", g.Len(), g.Contains(1), g.Contains(2))
	}
	// A member is found before the trim its neighbour's add calls for.
	g.Add(5, 1)
	if !g.Remove(2) {
		t.Fatal("oldest member lost before Trim")
	}
	g.Trim()
	if g.Len() != 3 || g.Remove(2) {
		t.Fatal("Remove or Trim wrong")
	}
	g.Add(3, 1) // already a member: stays put, no double count
	if g.Used() != 3 {
		t.Fatalf("used %d", g.Used())
	}
	for b := Block(10); b < 20; b++ { // Add alone stays under twice the cap
		g.Add(b, 1)
	}
	if g.Used() > 6 {
		t.Fatalf("used %d > 2*cap", g.Used())
	}
}

func TestKeyHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var h keyHeap[int64]
	keys := map[Block]int64{}
	for i := range 2000 {
		b := Block(r.IntN(300))
		switch {
		case r.IntN(4) == 0 && h.contains(b):
			h.remove(b)
			delete(keys, b)
		default:
			k := int64(r.IntN(50))
			h.push(b, k, uint64(i))
			keys[b] = k
		}
	}
	var want []Block
	for b := range keys {
		want = append(want, b)
	}
	slices.SortFunc(want, func(a, b Block) int {
		if keys[a] != keys[b] {
			return int(keys[a] - keys[b])
		}
		return 0
	})
	pinned := pinSet{want[0]: true}
	it, ok := h.popUnpinned(pinned) // skips the pinned minimum
	if !ok || it.b == want[0] || it.key < keys[want[0]] {
		t.Fatalf("popUnpinned returned %+v", it)
	}
	delete(keys, it.b)
	prev := int64(-1)
	for h.Len() > 0 {
		it, _ := h.popUnpinned(NoPins)
		if it.key < prev || keys[it.b] != it.key {
			t.Fatalf("popped %+v after key %d", it, prev)
		}
		prev = it.key
		delete(keys, it.b)
	}
	if len(keys) != 0 {
		t.Fatalf("%d keys never popped", len(keys))
	}
}
