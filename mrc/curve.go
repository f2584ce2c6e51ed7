package mrc

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// Result is one point of a miss-ratio curve.
type Result struct {
	Policy     string  `json:"policy"`
	SizeBlocks int     `json:"size_blocks"`
	Accesses   int64   `json:"accesses"`
	Misses     int64   `json:"misses"`
	MissRatio  float64 `json:"miss_ratio"`
	// Capped is the size asked for where it exceeded the trace's distinct
	// blocks and SizeBlocks was capped to them (set by the caller).
	Capped string `json:"capped_from,omitempty"`
}

// Options tune Curve.
type Options struct {
	Mode    Mode
	Workers int  // parallel replays; 0 means GOMAXPROCS
	NoStack bool // replay "lru" size by size instead of using the stack algorithm
}

// Curve computes every (policy, size) point, replaying on Workers
// goroutines. Results are ordered by spec, then size, as given.
func Curve(ctx context.Context, t *Trace, specs []Spec, sizes []int, o Options) ([]Result, error) {
	for _, n := range sizes {
		if n <= 0 {
			return nil, fmt.Errorf("cache size %d blocks: must be > 0", n)
		}
	}
	out := make([]Result, len(specs)*len(sizes))
	type job struct {
		id   int
		spec int
		size int // index into sizes; -1 for a whole stack curve
	}
	var jobs []job
	for i, sp := range specs {
		if sp.Name == StackLRU || (sp.Name == "lru" && len(sp.Params) == 0 && len(sizes) > 1 && !o.NoStack) {
			jobs = append(jobs, job{len(jobs), i, -1})
			continue
		}
		for j := range sizes {
			jobs = append(jobs, job{len(jobs), i, j})
		}
	}
	var (
		futOnce sync.Once
		fut     *Future
		stOnce  sync.Once
		stack   *Stack
	)
	future := func() *Future { futOnce.Do(func() { fut = NewFuture(t) }); return fut }
	put := func(i, j int, c Counts) {
		r := &out[i*len(sizes)+j]
		*r = Result{Policy: specs[i].Label, SizeBlocks: sizes[j], Accesses: c.Accesses, Misses: c.Misses(o.Mode)}
		if c.Accesses > 0 {
			r.MissRatio = float64(r.Misses) / float64(c.Accesses)
		}
	}

	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(jobs))
	ch := make(chan job)
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range ch {
				sp := specs[jb.spec]
				if jb.size < 0 {
					stOnce.Do(func() { stack = NewStack(t) })
					for j, n := range sizes {
						put(jb.spec, j, stack.Counts(n))
					}
					continue
				}
				p, err := newPolicy(sp, sizes[jb.size], future)
				if err != nil {
					errs[jb.id] = fmt.Errorf("policy %q: %w", sp.Label, err)
					continue
				}
				s := newSim(p, sizes[jb.size], t.Distinct)
				if err := s.run(ctx, t, 0, t.Requests(), 0); err != nil {
					errs[jb.id] = fmt.Errorf("policy %q, %d blocks: %w", sp.Label, sizes[jb.size], err)
					continue
				}
				put(jb.spec, jb.size, s.c)
			}
		}()
	}
	for _, jb := range jobs {
		if ctx.Err() != nil {
			break
		}
		ch <- jb
	}
	close(ch)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
