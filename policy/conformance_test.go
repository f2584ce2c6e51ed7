package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// op is one step of a random workload.
type op struct {
	kind byte // 'a' access, 'p' toggle pin, 'r' remove, 'e' explicit evict
	b    Block
	size int64
}

// randomOps draws a workload over n blocks with a skewed popularity.
func randomOps(r *rand.Rand, steps, n int, sizes bool) []op {
	ops := make([]op, steps)
	for i := range ops {
		b := Block(min(r.ExpFloat64()*float64(n)/4, float64(n-1)))
		o := op{kind: 'a', b: b, size: 1}
		if sizes {
			o.size = 1 + int64(b)%4 // a block keeps its size
		}
		switch x := r.IntN(100); {
		case x < 8:
			o.kind = 'p'
		case x < 11:
			o.kind = 'r'
		case x < 13:
			o.kind = 'e'
		}
		ops[i] = o
	}
	return ops
}

// opsFuture is Belady's oracle over a workload: now is the step index.
type opsFuture struct{ next []int64 }

func newOpsFuture(ops []op, n int) *opsFuture {
	f := &opsFuture{next: make([]int64, len(ops))}
	last := make([]int64, n)
	for i := range last {
		last[i] = math.MaxInt64
	}
	for i := len(ops) - 1; i >= 0; i-- {
		f.next[i] = last[ops[i].b]
		if ops[i].kind == 'a' {
			last[ops[i].b] = int64(i)
		}
	}
	return f
}

// NextUse is exact for the block of step now, which is all callers ask.
func (f *opsFuture) NextUse(_ Block, now int64) int64 { return f.next[now] }

type pinCount []bool

func (p pinCount) Pinned(b Block) bool { return p[b] }

// drive runs ops through a fresh policy and checks the contract at every
// step; it returns the victims (and -1 for each failed Evict) and hits.
func drive(t *testing.T, name string, capacity int64, ops []op, n int) (victims []Block, hits int) {
	t.Helper()
	base, wrap := strings.CutPrefix(name, "idle:")
	p, err := New(base, Config{Capacity: capacity, Future: newOpsFuture(ops, n)})
	if err == nil && wrap {
		p, err = IdleRank(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	idler, _ := p.(Idler)        // marks drawn from the step and block, as the core would send them
	hold, isHolder := p.(Holder) // the core's pins reach a Holder as Acquire/Release
	batcher, _ := p.(Batcher)    // drained and evicted ahead of need, as the core does
	resident := make([]bool, n)
	size := make([]int64, n)
	pins := make(pinCount, n)
	var used int64
	count := 0
	var evict func(i int) bool
	evict = func(i int) bool {
		v, ok := p.Evict(int64(i), pins)
		if ok && batcher != nil {
			defer func() {
				for batcher.Pending() {
					if !evict(i) {
						t.Fatalf("%s step %d: a batch is pending but Evict fails", name, i)
					}
				}
			}()
		}
		if !ok {
			for b := range resident {
				if resident[b] && !pins[b] {
					t.Fatalf("%s step %d: Evict failed but block %d is resident and unpinned", name, i, b)
				}
			}
			victims = append(victims, -1)
			return false
		}
		if v < 0 || int(v) >= n || !resident[v] {
			t.Fatalf("%s step %d: victim %d is not resident", name, i, v)
		}
		if pins[v] {
			t.Fatalf("%s step %d: victim %d is pinned", name, i, v)
		}
		resident[v] = false
		used -= size[v]
		count--
		victims = append(victims, v)
		return true
	}
	for i, o := range ops {
		b := o.b
		switch o.kind {
		case 'a':
			if resident[b] {
				hits++
				p.Access(b, int64(i))
				break
			}
			if e, ok := p.(Expecter); ok {
				e.Expect(b) // the Insert may not follow when all is pinned
			}
			fits := true
			for used+o.size > capacity {
				if !evict(i) {
					fits = false // everything left is pinned: the caller gives up
					break
				}
			}
			if fits {
				p.Insert(b, o.size, int64(i))
				if isHolder && pins[b] {
					hold.Acquire(b)
				}
				resident[b], size[b] = true, o.size
				used += o.size
				count++
				if batcher != nil && batcher.Overfull(used, capacity) {
					evict(i)
				}
			}
		case 'p':
			pins[b] = !pins[b]
			if isHolder && resident[b] {
				if pins[b] {
					hold.Acquire(b)
				} else {
					hold.Release(b, int64(i))
				}
			}
		case 'r':
			if resident[b] {
				p.Remove(b)
				resident[b] = false
				used -= size[b]
				count--
			}
		case 'e':
			evict(i)
		}
		if idler != nil {
			switch h := (int(b)*7919 + i) % 11; {
			case h < 3 && resident[b] && !pins[b]: // back from 50 before now to 150 after
				idler.Idle(b, int64(i+h*100-50))
			case h == 3:
				idler.Busy(b)
			}
		}
		if used > capacity {
			t.Fatalf("%s step %d: %d used > capacity %d", name, i, used, capacity)
		}
		if p.Len() != count {
			t.Fatalf("%s step %d: Len() = %d, %d resident", name, i, p.Len(), count)
		}
	}
	return victims, hits
}

// TestConformance runs every registered policy over random workloads with
// random pins, removals and sizes, twice, checking the contract and
// determinism.
func TestConformance(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(20) {
				r := rand.New(rand.NewPCG(seed, 7))
				n := 8 + r.IntN(200)
				capacity := int64(1 + r.IntN(n/2+4))
				ops := randomOps(r, 3000, n, seed%2 == 1)
				v1, h1 := drive(t, name, capacity, ops, n)
				v2, h2 := drive(t, name, capacity, ops, n)
				if h1 != h2 || !slices.Equal(v1, v2) {
					t.Fatalf("seed %d: two runs of the same input differ", seed)
				}
			}
		})
	}
}

// TestConformanceIdle runs the same workloads through IdleRank over every
// policy it can wrap, with idle marks (some overdue) and returns.
func TestConformanceIdle(t *testing.T) {
	for _, name := range Names() {
		base, _ := New(name, Config{Capacity: 1, Future: newOpsFuture(nil, 0)})
		if _, err := IdleRank(base); err != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(20) {
				r := rand.New(rand.NewPCG(seed, 7))
				n := 8 + r.IntN(200)
				capacity := int64(1 + r.IntN(n/2+4))
				ops := randomOps(r, 3000, n, seed%2 == 1)
				v1, h1 := drive(t, "idle:"+name, capacity, ops, n)
				v2, h2 := drive(t, "idle:"+name, capacity, ops, n)
				if h1 != h2 || !slices.Equal(v1, v2) {
					t.Fatalf("seed %d: two runs of the same input differ", seed)
				}
			}
		})
	}
}

// TestBeladyIsOptimal checks that no policy misses less than MIN on random
// unit-size traces without pins.
func TestBeladyIsOptimal(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 11))
		n := 10 + r.IntN(300)
		ops := make([]op, 4000)
		for i := range ops {
			b := Block(r.IntN(n))
			if r.IntN(2) == 0 { // half the references from a hot tenth
				b = Block(r.IntN(n/10 + 1))
			}
			ops[i] = op{kind: 'a', b: b, size: 1}
		}
		capacity := int64(1 + r.IntN(n/2))
		_, best := drive(t, "belady", capacity, ops, n)
		for _, name := range Names() {
			if _, h := drive(t, name, capacity, ops, n); h > best {
				t.Errorf("seed %d cap %d: %s hits %d > belady %d", seed, capacity, name, h, best)
			}
		}
	}
}

// TestNoAllocs checks that a warmed-up policy allocates nothing per call.
func TestNoAllocs(t *testing.T) {
	const n, capacity = 4096, 512
	r := rand.New(rand.NewPCG(1, 2))
	ops := make([]op, 1<<16)
	for i := range ops {
		ops[i] = op{kind: 'a', b: Block(min(r.ExpFloat64()*n/8, n-1)), size: 1}
	}
	fut := newOpsFuture(ops, n)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p, err := New(name, Config{Capacity: capacity, Future: fut})
			if err != nil {
				t.Fatal(err)
			}
			resident := make([]bool, n)
			used, i := 0, 0
			step := func() {
				o := ops[i%len(ops)]
				now := int64(i % len(ops)) // the future repeats with the ops
				i++
				if resident[o.b] {
					p.Access(o.b, now)
					return
				}
				if used == capacity {
					v, _ := p.Evict(now, NoPins)
					resident[v] = false
					used--
				}
				p.Insert(o.b, 1, now)
				resident[o.b] = true
				used++
			}
			for range 3 * len(ops) { // warm up: every slice grown
				step()
			}
			if a := testing.AllocsPerRun(len(ops), step); a != 0 {
				t.Errorf("%s: %v allocations per access", name, a)
			}
		})
	}
}

func ExampleNames() {
	fmt.Println(Names())
	// Output: [2q arc belady clock fifo gdsf lfu lru mooncake prefix-lru s3fifo sieve wtinylfu]
}

// TestIdleRankNoAllocs: once warmed up, IdleRank over lru allocates
// nothing per mark, return, access or eviction.
func TestIdleRankNoAllocs(t *testing.T) {
	const n, capacity = 4096, 512
	base, _ := New("lru", Config{Capacity: capacity})
	p, err := IdleRank(base)
	if err != nil {
		t.Fatal(err)
	}
	idler := p.(Idler)
	r := rand.New(rand.NewPCG(3, 4))
	ops := make([]Block, 1<<16)
	for i := range ops {
		ops[i] = Block(min(r.ExpFloat64()*n/8, n-1))
	}
	resident := make([]bool, n)
	used, i := 0, 0
	step := func() {
		b := ops[i%len(ops)]
		now := int64(i)
		i++
		switch {
		case resident[b] && i%3 == 0:
			idler.Idle(b, now+int64(i%97)*10) // some pass before the next eviction, some do not
		case resident[b] && i%5 == 0:
			idler.Busy(b)
		case resident[b]:
			p.Access(b, now)
		default:
			if used == capacity {
				v, _ := p.Evict(now, NoPins)
				resident[v] = false
				used--
			}
			p.Insert(b, 1, now)
			resident[b] = true
			used++
		}
	}
	for range 3 * len(ops) {
		step()
	}
	if a := testing.AllocsPerRun(len(ops), step); a != 0 {
		t.Errorf("%v allocations per step", a)
	}
}
