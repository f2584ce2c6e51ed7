package mrc

import (
	"context"
	"runtime"
	"time"

	"kvsim/policy"
)

// BenchResult is the single-core replay speed of one policy and size.
type BenchResult struct {
	Policy          string
	SizeBlocks      int
	Accesses        int64 // references timed
	Seconds         float64
	AccessesPerSec  float64
	AllocsPerAccess float64
	// Cold is one pass over the trace from an empty cache, the replay
	// whose miss ratio Curve reports (the timed pass starts warm).
	Cold Counts
}

// Twice is t followed by itself: benchmarks replay the first copy to warm
// the cache and grow every per-block slice, and time the second, so they
// see the steady state.
func Twice(t *Trace) *Trace {
	n := int32(len(t.Blocks))
	out := &Trace{Blocks: append(append(make([]int32, 0, 2*n), t.Blocks...), t.Blocks...),
		Starts: append(make([]int32, 0, 2*len(t.Starts)), t.Starts...), Distinct: t.Distinct}
	for _, s := range t.Starts[1:] {
		out.Starts = append(out.Starts, s+n)
	}
	return out
}

// Bench measures sp at size blocks on one goroutine: tt must come from
// Twice, fut may be nil unless sp needs it. Allocations are counted with
// runtime.MemStats over the timed pass (the whole process: run it alone).
func Bench(ctx context.Context, tt *Trace, sp Spec, size int, fut *Future) (BenchResult, error) {
	r := BenchResult{Policy: sp.Label, SizeBlocks: size}
	half := tt.Requests() / 2
	one := &Trace{Blocks: tt.Blocks[:tt.Starts[half]], Starts: tt.Starts[:half+1], Distinct: tt.Distinct}
	var ms0, ms1 runtime.MemStats
	if sp.Name == StackLRU { // one pass over the first copy, all sizes at once
		runtime.ReadMemStats(&ms0)
		t0 := time.Now()
		c := NewStack(one).Counts(size)
		r.Seconds = time.Since(t0).Seconds()
		runtime.ReadMemStats(&ms1)
		r.Accesses = c.Accesses
		r.Cold = c
	} else {
		p, err := newPolicy(sp, size, func() *Future { return fut })
		if err != nil {
			return r, err
		}
		s := newSim(p, size, tt.Distinct)
		if err := s.run(ctx, tt, 0, half, 0); err != nil {
			return r, err
		}
		// The first pass is the curve's replay, except for Belady, whose
		// oracle here sees the second copy coming.
		warm := s.c
		r.Cold = warm
		if policy.Offline(sp.Name) {
			if r.Cold, err = Simulate(ctx, one, sp, size); err != nil {
				return r, err
			}
		}
		runtime.ReadMemStats(&ms0)
		t0 := time.Now()
		err = s.run(ctx, tt, half, tt.Requests(), 0)
		r.Seconds = time.Since(t0).Seconds()
		runtime.ReadMemStats(&ms1)
		if err != nil {
			return r, err
		}
		r.Accesses = s.c.Accesses - warm.Accesses
	}
	if r.Seconds > 0 {
		r.AccessesPerSec = float64(r.Accesses) / r.Seconds
	}
	if r.Accesses > 0 {
		r.AllocsPerAccess = float64(ms1.Mallocs-ms0.Mallocs) / float64(r.Accesses)
	}
	return r, nil
}
