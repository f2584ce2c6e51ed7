package core

import (
	"math/rand/v2"
	"testing"
)

// TestHistMerge: merging two histograms equals adding all their values to
// one, quantiles, count, extremes and mean included (an empty side too).
func TestHistMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var a, b, all Hist
	for i := range 5000 {
		v := rng.Int64N(1 << uint(1+i%40))
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
		all.Add(v)
	}
	var m Hist
	m.Merge(&a)
	m.Merge(&Hist{})
	m.Merge(&b)
	if m.Count() != all.Count() || m.Max() != all.Max() || m.min != all.min {
		t.Fatalf("merged n/min/max %d/%d/%d, want %d/%d/%d", m.Count(), m.min, m.Max(), all.Count(), all.min, all.Max())
	}
	if d := m.Mean() - all.Mean(); d > 1e-6*all.Mean() || d < -1e-6*all.Mean() {
		t.Fatalf("merged mean %g, want %g", m.Mean(), all.Mean())
	}
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
		if m.Quantile(q) != all.Quantile(q) {
			t.Fatalf("q%g: merged %d, want %d", q, m.Quantile(q), all.Quantile(q))
		}
	}
}
