package sim

import (
	"math"
	"testing"
)

// A ring all-reduce over n GPUs sends 2(n-1)/n of the bytes each way in
// 2(n-1) steps; an all-to-all sends (ep-1)/ep of a GPU's share once.
func TestCollectives(t *testing.T) {
	c := Collectives{TP: 4, DP: 1, EP: 1, Bandwidth: 100e9, LatencyNs: 1000, Layers: 10, TokenBytes: 8192}
	// 1000 tokens: 8,192,000 B; 2 x 3/4 = 1.5 x 8,192,000 / 100e9 = 122,880 ns + 6 x 1000.
	if got, want := c.ringAllReduceNs(4, 8_192_000), 128_880.0; math.Abs(got-want) > 1e-6 {
		t.Errorf("ring all-reduce %g ns, want %g", got, want)
	}
	// Two per layer, 10 layers.
	if got, want := c.Ns(1000), 20*128_880.0; math.Abs(got-want) > 1e-6 {
		t.Errorf("tp 4: %g ns, want %g", got, want)
	}
	// ep = 4 over one group (tp 4), 6 of 10 layers MoE: every GPU has
	// every token, the experts' sums are all-reduced: as without ep.
	c.EP, c.MoELayers, c.ExpertsPerToken = 4, 6, 2
	if got, want := c.Ns(1000), 20*128_880.0; math.Abs(got-want) > 1e-6 {
		t.Errorf("ep 4, dp 1: %g ns, want %g", got, want)
	}
	// ep = 4 over tp 2 x dp 2, 2 experts per token: each group
	// all-reduces 500 tokens, 4,096,000 B in 1 x 4,096,000 / 100e9 =
	// 40,960 ns + 2 x 1000; 4 dense layers keep both all-reduces, every
	// layer its attention one, each MoE layer 2 all-to-alls of 1000/4 x 2
	// x 8192 x 3/4 = 3,072,000 B = 30,720 ns + 1000.
	c.TP, c.DP = 2, 2
	if got, want := c.Ns(1000), 14*42_960.0+12*31_720.0; math.Abs(got-want) > 1e-6 {
		t.Errorf("ep 4, dp 2: %g ns, want %g", got, want)
	}
	if c.Ns(0) != 0 || (&Collectives{TP: 8}).Ns(100) != 0 {
		t.Error("no tokens, or no bandwidth, must cost nothing")
	}
}

// DistinctExperts: k of E for one token, E in the limit, and never fewer
// than a skewed router touches for the same picks.
func TestDistinctExperts(t *testing.T) {
	if got := DistinctExperts(128, 8, 1); math.Abs(got-8) > 1e-9 {
		t.Errorf("one token: %g experts, want 8", got)
	}
	if got := DistinctExperts(128, 8, 1e6); math.Abs(got-128) > 1e-9 {
		t.Errorf("many tokens: %g experts, want 128", got)
	}
	// k = 1, E = 4, n = 3 tokens: uniform gives 4 x (1 - (3/4)^3) = 2.3125;
	// a router picking with weights .4, .3, .2, .1 gives sum of 1 - (1-p)^3
	// = .784 + .657 + .488 + .271 = 2.2.
	uniform := DistinctExperts(4, 1, 3)
	skewed := 0.0
	for _, p := range []float64{.4, .3, .2, .1} {
		skewed += 1 - math.Pow(1-p, 3)
	}
	if math.Abs(uniform-2.3125) > 1e-12 || math.Abs(skewed-2.2) > 1e-12 || !(skewed < uniform) {
		t.Errorf("uniform %g, skewed %g", uniform, skewed)
	}
}
