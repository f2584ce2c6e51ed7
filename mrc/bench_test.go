package mrc

import (
	"context"
	"math"
	"math/rand"
	"sync"
	"testing"

	"kvsim/policy"
)

// zipfTrace is a deterministic synthetic trace: 10M references to 1M
// blocks drawn from a Zipf(1.01) popularity, block ids shuffled so that hot
// blocks are not neighbours in memory.
var zipfTrace = sync.OnceValue(func() *Trace {
	const n, items = 10_000_000, 1_000_000
	r := rand.New(rand.NewSource(1))
	z := rand.NewZipf(r, 1.01, 1, items-1)
	perm := r.Perm(items)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(perm[z.Uint64()])
	}
	// One request per 64 references keeps the request loop representative.
	reqs := make([][]int64, 0, n/64)
	for i := 0; i < n; i += 64 {
		reqs = append(reqs, ids[i:min(i+64, n)])
	}
	return FromRequests(reqs)
})

// benchPolicies are measured in both benchmarks.
func benchPolicies() []string { return append(policy.Names(), StackLRU) }

// benchReplay times one reference per b.N iteration, cycling over t after a
// full warm-up pass, so ns/op and allocs/op are per reference.
func benchReplay(b *testing.B, t *Trace, name string, size int, fut *Future) {
	sp, err := ParseSpec(name)
	if err != nil {
		b.Fatal(err)
	}
	if name == StackLRU {
		// Whole passes (every size at once), at least b.N references.
		b.ReportAllocs()
		done := 0
		for done < b.N {
			NewStack(t)
			done += len(t.Blocks)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/op")
		b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "accesses/s")
		return
	}
	p, err := newPolicy(sp, size, func() *Future { return fut })
	if fut != nil && name == "belady" {
		p, err = policy.New("belady", policy.Config{Capacity: int64(size), Future: periodic(fut)})
	}
	if err != nil {
		b.Fatal(err)
	}
	s := newSim(p, size, t.Distinct)
	ctx := context.Background()
	if err := s.run(ctx, t, 0, t.Requests(), 0); err != nil {
		b.Fatal(err)
	}
	// Time whole requests, at least b.N references in all; pass k of the
	// trace runs at now = k*len + position.
	b.ReportAllocs()
	b.ResetTimer()
	done, q, base := 0, 0, int64(len(t.Blocks))
	for done < b.N {
		hi := min(q+256, t.Requests())
		if err := s.run(ctx, t, q, hi, base); err != nil {
			b.Fatal(err)
		}
		done += int(t.Starts[hi] - t.Starts[q])
		if q = hi; q == t.Requests() {
			q, base = 0, base+int64(len(t.Blocks))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/op")
	b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "accesses/s")
}

// periodicFuture is the oracle of t repeated forever, for benchmarks that
// cycle over a trace: now = pass*len + position.
type periodicFuture struct {
	f     *Future
	first []int64 // first position of each block
}

func periodic(f *Future) *periodicFuture {
	pf := &periodicFuture{f: f, first: make([]int64, f.dist)}
	for i := range pf.first {
		pf.first[i] = -1
	}
	for i := len(f.blocks) - 1; i >= 0; i-- {
		pf.first[f.blocks[i]] = int64(i)
	}
	return pf
}

func (p *periodicFuture) NextUse(b policy.Block, now int64) int64 {
	n := int64(len(p.f.blocks))
	base := now - now%n
	if nx := p.f.NextUse(b, now%n); nx != math.MaxInt64 {
		return base + nx
	}
	if p.first[b] < 0 {
		return math.MaxInt64
	}
	return base + n + p.first[b]
}

func benchTrace(b *testing.B, t *Trace, size int) {
	fut := NewFuture(t)
	for _, name := range benchPolicies() {
		b.Run(name, func(b *testing.B) { benchReplay(b, t, name, size, fut) })
	}
}

// BenchmarkConversation replays the conversation trace at 1% of its
// distinct blocks (the reference's smallest size, 1827 blocks).
func BenchmarkConversation(b *testing.B) {
	t := conversation(b)
	benchTrace(b, t, int(0.01*float64(t.Distinct)))
}

// BenchmarkZipf replays the synthetic 10M-reference Zipf trace at 1% of its
// distinct blocks.
func BenchmarkZipf(b *testing.B) {
	t := zipfTrace()
	benchTrace(b, t, int(0.01*float64(t.Distinct)))
}
