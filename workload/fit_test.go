package workload

import (
	"context"
	"math"
	"testing"
)

// naiveLRU is an LRU cache's hit ratio per size from stack distances
// found by a linear scan: the reference for the tests' small traces.
func naiveLRU(ids []int64, starts []int32, sizes []int) []float64 {
	var stack []int64 // most recent first
	dist := map[int]int{}
	for _, h := range ids {
		i := 0
		for i < len(stack) && stack[i] != h {
			i++
		}
		if i < len(stack) {
			dist[i+1]++
			copy(stack[1:i+1], stack[:i])
		} else {
			stack = append(stack, 0)
			copy(stack[1:], stack)
		}
		stack[0] = h
	}
	out := make([]float64, len(sizes))
	for k, n := range sizes {
		hits := 0
		for d, c := range dist {
			if d <= n {
				hits += c
			}
		}
		if len(ids) > 0 {
			out[k] = float64(hits) / float64(len(ids))
		}
	}
	return out
}

// A trace the model itself made is fitted back (under its seed, so that
// an exact answer exists): its curve within 1.5 points, its system prompt
// found, and the same result twice.
func TestFitRecoversModel(t *testing.T) {
	var shapes []Shape
	for i := range 400 {
		shapes = append(shapes, Shape{Input: 200 + (i*7919)%1500, Output: 20 + (i*31)%200})
	}
	const bt = 64
	truth := Inject{SystemTokens: 256, TenantZipf: 1, SessionContinue: 0.7, Sessions: 40, SessionGap: 10}
	ids, starts, err := Injected(truth, 3, bt, shapes)
	if err != nil {
		t.Fatal(err)
	}
	sys := SharedPrefixBlocks(ids, starts)
	if sys != 4 {
		t.Errorf("shared prefix %d blocks, want 4", sys)
	}
	distinct := map[int64]bool{}
	for _, h := range ids {
		distinct[h] = true
	}
	var sizes []int
	for _, p := range []float64{0.01, 0.05, 0.1, 0.25, 1} {
		sizes = append(sizes, max(1, int(p*float64(len(distinct)))))
	}
	target := naiveLRU(ids, starts, sizes)
	res, err := Fit(context.Background(), shapes, bt, 3, sys*bt, sizes, target, naiveLRU)
	if err != nil {
		t.Fatal(err)
	}
	if e := res.MaxAbsError(); e > 0.015 {
		t.Errorf("fitted %+v: curve %.3f, target %.3f: %.1f points apart", res.Inject, res.Fitted, res.Target, 100*e)
	}
	t.Logf("fitted %+v, %.1f points from the curve", res.Inject, 100*res.MaxAbsError())
	again, _ := Fit(context.Background(), shapes, bt, 3, sys*bt, sizes, target, naiveLRU)
	if again.Inject != res.Inject || again.Evals != res.Evals {
		t.Errorf("two fits differ: %+v, %+v", res.Inject, again.Inject)
	}
	if _, err := Fit(context.Background(), shapes, bt, 1, 0, sizes, target[:1], naiveLRU); err == nil {
		t.Error("mismatched sizes and target accepted")
	}
	if math.IsNaN(res.MaxAbsError()) {
		t.Error("NaN error")
	}
}
