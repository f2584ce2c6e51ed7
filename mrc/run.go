package mrc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"kvsim/policy"
)

// Size is one cache size asked for: blocks, or a percentage of the trace's
// distinct blocks, resolved once the trace is read.
type Size struct {
	Text    string // as written
	Blocks  int
	Percent float64 // > 0 for "10%"
}

// ParseSizes parses a comma-separated list such as "1000,10%".
func ParseSizes(list string) ([]Size, error) {
	var out []Size
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		a := Size{Text: s}
		if p, ok := strings.CutSuffix(s, "%"); ok {
			v, err := strconv.ParseFloat(p, 64)
			if errors.Is(err, strconv.ErrRange) && v > 1 {
				err = nil // +Inf: capped to the distinct blocks
			}
			if err != nil || v != v {
				return nil, fmt.Errorf("bad size %q (want blocks like 1000 or a percentage like 10%%)", s)
			}
			if v <= 0 {
				return nil, fmt.Errorf("size %q must be > 0", s)
			}
			a.Percent = v
		} else {
			v, err := strconv.Atoi(s)
			if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(s, "-") {
				v, err = math.MaxInt, nil // capped to the distinct blocks once the trace is read
			}
			if err != nil {
				return nil, fmt.Errorf("bad size %q (want blocks like 1000 or a percentage like 10%%)", s)
			}
			if v <= 0 {
				return nil, fmt.Errorf("size %q must be > 0", s)
			}
			a.Blocks = v
		}
		out = append(out, a)
	}
	return out, nil
}

// Resolve gives the size in blocks: "10%" is int(0.10 × distinct), as the
// reference figures are sized. Sizes above distinct are capped to it: such
// a cache never evicts, so every larger size has the same misses, and no
// product of a size (policy state, sampled sizes) can overflow.
func (a Size) Resolve(distinct int) (int, error) {
	if a.Capped(distinct) {
		return distinct, nil
	}
	if a.Percent == 0 {
		return a.Blocks, nil
	}
	n := int(a.Percent / 100 * float64(distinct))
	if n <= 0 {
		return 0, fmt.Errorf("%s of %d distinct blocks is 0 blocks", a.Text, distinct)
	}
	return n, nil
}

// Capped reports whether the size is more than distinct blocks.
func (a Size) Capped(distinct int) bool {
	if a.Percent == 0 {
		return a.Blocks > distinct
	}
	return a.Percent/100*float64(distinct) > float64(distinct) // also +Inf
}

// ResolveSizes resolves every size against distinct blocks; capped[i] is
// the text asked for where size i was capped, "" elsewhere.
func ResolveSizes(sizes []Size, distinct int) (blocks []int, capped []string, err error) {
	blocks = make([]int, len(sizes))
	capped = make([]string, len(sizes))
	for i, s := range sizes {
		if blocks[i], err = s.Resolve(distinct); err != nil {
			return nil, nil, err
		}
		if s.Capped(distinct) {
			capped[i] = s.Text
		}
	}
	return blocks, capped, nil
}

// EmptySampleError says a sample rate kept none of a trace's blocks.
type EmptySampleError struct {
	Rate     float64
	Distinct int
}

func (e *EmptySampleError) Error() string {
	return fmt.Sprintf("rate %g keeps none of the trace's %d distinct blocks", e.Rate, e.Distinct)
}

// SampledCurve is Curve for t at sizes (from ResolveSizes, with its capped
// labels), replayed on a SHARDS sample of the given rate when it is in
// (0,1), with sizes scaled to the sample and the results adjusted back to
// t. It also returns the trace replayed: t itself when not sampling.
func SampledCurve(ctx context.Context, t *Trace, specs []Spec, sizes []int, capped []string, rate float64, o Options) ([]Result, *Trace, error) {
	run, runSizes := t, sizes
	sampled := rate > 0 && rate < 1
	if sampled {
		run = Sample(t, rate)
		if run.Distinct == 0 {
			return nil, nil, &EmptySampleError{rate, t.Distinct}
		}
		runSizes = make([]int, len(sizes))
		for i, n := range sizes {
			runSizes[i] = SampledSize(n, rate)
		}
	}
	res, err := Curve(ctx, run, specs, runSizes, o)
	if err != nil {
		return nil, nil, err
	}
	if sampled {
		AdjustSampled(res, sizes, int64(len(t.Blocks)), rate)
	}
	for i := range res {
		res[i].Capped = capped[i%len(capped)]
	}
	return res, run, nil
}

// BenchRow is one line of BenchCurve: the replay speed of a policy at a
// size, and the miss ratio of its curve there.
type BenchRow struct {
	Policy          string  `json:"policy"`
	SizeBlocks      int     `json:"size_blocks"`
	Accesses        int64   `json:"accesses"`
	Seconds         float64 `json:"seconds"`
	AccessesPerSec  float64 `json:"accesses_per_sec"`
	AllocsPerAccess float64 `json:"allocs_per_access"`
	MissRatio       float64 `json:"miss_ratio"`
}

// BenchCurve times each (policy, size) alone on one goroutine: the trace is
// replayed twice and the second, steady-state pass is measured.
func BenchCurve(ctx context.Context, t *Trace, specs []Spec, sizes []int, mode Mode) ([]BenchRow, error) {
	tt := Twice(t)
	var fut *Future
	for _, sp := range specs {
		if policy.Offline(sp.Name) {
			fut = NewFuture(tt)
		}
	}
	var rows []BenchRow
	for _, sp := range specs {
		for _, n := range sizes {
			r, err := Bench(ctx, tt, sp, n, fut)
			if err != nil {
				return nil, err
			}
			mr := float64(r.Cold.Misses(mode)) / float64(r.Cold.Accesses)
			rows = append(rows, BenchRow{r.Policy, r.SizeBlocks, r.Accesses, r.Seconds, r.AccessesPerSec, r.AllocsPerAccess, mr})
		}
	}
	return rows, nil
}
