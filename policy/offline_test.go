package policy

import (
	"math"
	"testing"
)

// Offline is what callers ask instead of a policy's name: belady needs the
// future, and no online policy may be handed one by mistake.
func TestOfflineDeclared(t *testing.T) {
	for _, n := range Names() {
		if got, want := Offline(n), n == "belady"; got != want {
			t.Errorf("Offline(%q) = %v, want %v", n, got, want)
		}
	}
	if Offline("no-such-policy") {
		t.Error("an unknown policy is not offline")
	}
}

// seqFuture is a Future over given reference positions per block.
type seqFuture map[Block][]int64

func (f seqFuture) NextUse(b Block, at int64) int64 {
	for _, s := range f[b] {
		if s > at {
			return s
		}
	}
	return math.MaxInt64
}

// TestBeladyReasksPassedUses: in a tier of a hierarchy a request may use a
// block without touching this tier's copy (it hit a higher tier). Its next
// use, asked when it was touched, is then in the past; Belady asks again
// once the position reaches it, or it would keep that block for good.
func TestBeladyReasksPassedUses(t *testing.T) {
	const a, b, c Block = 0, 1, 2
	p := NewBelady(seqFuture{a: {0, 1}, b: {0, 2, 6}, c: {3}})
	p.SetSeq(0)
	p.Insert(a, 1, 0) // next use 1
	p.Insert(b, 1, 0) // next use 2
	p.SetSeq(1)       // a and b used by requests 1 and 2 from a higher tier:
	p.SetSeq(2)       // this tier sees nothing
	p.SetSeq(3)       // now a is never used again, b at 6
	if v, _ := p.Evict(0, NoPins); v != a {
		t.Fatalf("evicted %d, want a (%d): b is used again at 6, a never", v, a)
	}
	p.Insert(c, 1, 0)
	if p.Len() != 2 {
		t.Errorf("Len %d, want 2", p.Len())
	}
	p.Remove(b)
	if v, ok := p.Evict(0, NoPins); !ok || v != c || p.Len() != 0 {
		t.Errorf("evicted %d %v, Len %d; want c and empty", v, ok, p.Len())
	}
}
