package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// paperARC is Figure 4 of Megiddo and Modha (FAST'03), unit sizes, lists
// as slices with the LRU end first, p real as in libCacheSim. It returns
// the block leaving the cache on a miss, or None.
type paperARC struct {
	t1, t2, b1, b2 []Block
	p              float64
	c              int
}

func drop(l []Block, x Block) ([]Block, bool) {
	if i := slices.Index(l, x); i >= 0 {
		return slices.Delete(l, i, i+1), true
	}
	return l, false
}

func (a *paperARC) replace(inB2 bool) Block {
	if n := len(a.t1); n >= 1 && ((inB2 && float64(n) == a.p) || float64(n) > a.p) {
		v := a.t1[0]
		a.t1, a.b1 = a.t1[1:], append(a.b1, v)
		return v
	}
	v := a.t2[0]
	a.t2, a.b2 = a.t2[1:], append(a.b2, v)
	return v
}

func (a *paperARC) access(x Block) (hit bool, victim Block) {
	var ok bool
	if a.t1, ok = drop(a.t1, x); ok {
		a.t2 = append(a.t2, x)
		return true, None
	}
	if a.t2, ok = drop(a.t2, x); ok {
		a.t2 = append(a.t2, x)
		return true, None
	}
	c := float64(a.c)
	if a.b1, ok = drop(a.b1, x); ok { // case II
		a.p = min(a.p+max(float64(len(a.b2))/float64(len(a.b1)+1), 1), c)
		victim = a.replace(false)
		a.t2 = append(a.t2, x)
		return false, victim
	}
	if a.b2, ok = drop(a.b2, x); ok { // case III
		a.p = max(a.p-max(float64(len(a.b1))/float64(len(a.b2)+1), 1), 0)
		victim = a.replace(true)
		a.t2 = append(a.t2, x)
		return false, victim
	}
	victim = None // case IV
	l1, all := len(a.t1)+len(a.b1), len(a.t1)+len(a.b1)+len(a.t2)+len(a.b2)
	switch {
	case l1 == a.c && len(a.t1) < a.c:
		a.b1 = a.b1[1:]
		victim = a.replace(false)
	case l1 == a.c:
		victim, a.t1 = a.t1[0], a.t1[1:]
	case all >= a.c:
		if all == 2*a.c {
			a.b2 = a.b2[1:]
		}
		victim = a.replace(false)
	}
	a.t1 = append(a.t1, x)
	return false, victim
}

// TestARCPaper replays random unit-size workloads through ARC, driven as
// mrc drives it (Expect, then evict while full, then Insert), and through
// the paper's pseudocode: every hit and victim must agree, including at
// ghost hits, where p adapts before REPLACE and |T1| = p with the block
// in B2 evicts from T1.
func TestARCPaper(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	ties := 0
	for trial := range 300 {
		c := 1 + r.IntN(8)
		n := c + 1 + r.IntN(3*c)
		ref := &paperARC{c: c}
		p := NewARC(int64(c))
		resident := 0
		for step := range 400 {
			x := Block(min(r.ExpFloat64()*float64(n)/3, float64(n-1)))
			wantHit, want := ref.access(x)
			if p.t1.Contains(x) || p.t2.Contains(x) {
				if !wantHit {
					t.Fatalf("trial %d step %d: block %d hit in kvsim, missed in the paper", trial, step, x)
				}
				p.Access(x, 0)
				continue
			}
			if wantHit {
				t.Fatalf("trial %d step %d: block %d missed in kvsim, hit in the paper", trial, step, x)
			}
			if p.b2.Contains(x) && float64(p.t1.Len()) == p.p-max(float64(p.g1)/float64(p.g2), 1) {
				ties++
			}
			p.Expect(x)
			got := None
			if resident == c {
				got, _ = p.Evict(0, NoPins)
				resident--
			}
			p.Insert(x, 1, 0)
			resident++
			if got != want {
				t.Fatalf("trial %d (c=%d) step %d: miss on %d evicts %d, paper %d", trial, c, step, x, got, want)
			}
		}
	}
	if ties == 0 {
		t.Error("no workload reached the tie rule (|T1| = p on a B2 hit)")
	}
}
