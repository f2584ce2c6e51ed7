package workload

import (
	"context"
	"errors"
	"math"
)

// Shape is what injection reads of a request: its token counts.
type Shape struct{ Input, Output int }

// Injected gives every request of shapes, in order, its ids by c (as with
// Replace: shapes carry none), returned flat: request r's are
// ids[starts[r]:starts[r+1]].
func Injected(c Inject, seed int64, blockTokens int, shapes []Shape) (ids []int64, starts []int32, err error) {
	in, err := NewInjector(c, seed, blockTokens)
	if err != nil {
		return nil, nil, err
	}
	starts = make([]int32, 1, len(shapes)+1)
	for _, s := range shapes {
		ids = in.Blocks(ids, s.Input, s.Output)
		if len(ids) > math.MaxInt32 {
			return nil, nil, errors.New("more than 2^31-1 block references")
		}
		starts = append(starts, int32(len(ids)))
	}
	return ids, starts, nil
}

// SharedPrefixBlocks is the length of a trace's global system prompt in
// blocks: the leading positions at which one id is held by at least half
// of the requests.
func SharedPrefixBlocks(ids []int64, starts []int32) int {
	n := len(starts) - 1
	for pos := 0; ; pos++ {
		count := map[int64]int{}
		best := 0
		for r := range n {
			if int(starts[r+1]-starts[r]) > pos {
				id := ids[int(starts[r])+pos]
				count[id]++
				best = max(best, count[id])
			}
		}
		if n == 0 || 2*best < n {
			return pos
		}
	}
}

// HitCurve is an LRU cache's hit ratio, per size in blocks, on a trace
// given as Injected returns it (the caller's one-pass stack).
type HitCurve func(ids []int64, starts []int32, sizes []int) []float64

// FitResult is what Fit found: the parameters, and the target and fitted
// hit ratios at each size.
type FitResult struct {
	Inject         Inject
	Sizes          []int
	Target, Fitted []float64
	Evals          int // injections tried
}

// MaxAbsError is the largest difference between the curves, in hit ratio.
func (r FitResult) MaxAbsError() float64 {
	e := 0.0
	for i := range r.Target {
		e = max(e, math.Abs(r.Fitted[i]-r.Target[i]))
	}
	return e
}

// Fit searches the Inject parameters under which the requests of shapes
// (a hashed trace's token counts, in its order) reproduce target, that
// trace's LRU hit ratios at sizes, measured by curve. The system prompt is
// given (SharedPrefixBlocks measures it); the session layer (continue
// probability, open sessions) comes from a grid refined coordinate by
// coordinate, then a tenant layer is tried and kept only if it helps. The
// search is deterministic: same inputs, same result. ctx stops it between
// two candidates.
func Fit(ctx context.Context, shapes []Shape, blockTokens int, seed int64, systemTokens int, sizes []int, target []float64, curve HitCurve) (FitResult, error) {
	if len(sizes) != len(target) || len(sizes) == 0 {
		return FitResult{}, errors.New("fit: want one target hit ratio per size")
	}
	res := FitResult{Sizes: sizes, Target: target}
	maxSessions := max(1, min(MaxInjectSessions, len(shapes)))
	cache := map[Inject]float64{}
	var bestErr error
	// Parameters are kept to what the printed TOML says: a continue
	// probability of 4 decimals.
	clamp := func(c Inject) Inject {
		c.Sessions = min(max(c.Sessions, 1), maxSessions)
		c.SessionContinue = math.Round(min(max(c.SessionContinue, 0), 1)*1e4) / 1e4
		c.SessionGap = min(max(c.SessionGap, 0), MaxInjectGap)
		return c
	}
	loss := func(c Inject) float64 {
		c = clamp(c)
		if l, ok := cache[c]; ok {
			return l
		}
		if ctx.Err() != nil {
			return math.Inf(1)
		}
		ids, starts, err := Injected(c, seed, blockTokens, shapes)
		if err != nil {
			bestErr = err
			cache[c] = math.Inf(1)
			return math.Inf(1)
		}
		res.Evals++
		got := curve(ids, starts, sizes)
		l := 0.0
		for i := range got {
			d := got[i] - target[i]
			l += d * d
		}
		cache[c] = l
		return l
	}
	best := DefaultInject()
	best.SystemTokens = systemTokens
	bestL := loss(best)
	try := func(c Inject) bool {
		c = clamp(c)
		if l := loss(c); l < bestL {
			best, bestL = c, l
			return true
		}
		return false
	}
	// The session layer on a coarse grid.
	base := best
	for _, p := range []float64{0.2, 0.4, 0.6, 0.8, 0.9, 0.95} {
		for s := 1; s <= maxSessions; s *= 4 {
			for _, g := range []int{0, s / 4, s / 2, s} {
				c := base
				c.SessionContinue, c.Sessions, c.SessionGap = p, s, g
				try(c)
			}
		}
	}
	refine := func() {
		step, factor := 0.1, 2.0
		for range 5 {
			for moved := true; moved; {
				moved = false
				for _, d := range []float64{-step, step} {
					c := best
					c.SessionContinue += d
					moved = try(c) || moved
				}
				for _, f := range []float64{1 / factor, factor} {
					c := best
					c.Sessions = int(math.Round(float64(c.Sessions) * f))
					moved = try(c) || moved
					c = best
					c.SessionGap = int(math.Round(float64(max(c.SessionGap, 1)) * f))
					moved = try(c) || moved
				}
			}
			step, factor = step/2, math.Sqrt(factor)
		}
	}
	refine()
	// A tenant layer, kept only where it brings the curve closer.
	base = best
	for _, n := range []int{2, 8, 32, 128} {
		for _, blocks := range []int{1, 4, 16} {
			for _, z := range []float64{0.5, 1, 1.5} {
				c := base
				c.Tenants, c.TenantTokens, c.TenantZipf = n, blocks*blockTokens, z
				try(c)
			}
		}
	}
	if best.Tenants > 0 {
		refine()
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if math.IsInf(bestL, 1) {
		return res, bestErr
	}
	res.Inject = best
	ids, starts, err := Injected(best, seed, blockTokens, shapes)
	if err != nil {
		return res, err
	}
	res.Fitted = curve(ids, starts, sizes)
	return res, nil
}
