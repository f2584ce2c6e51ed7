package experiment

import (
	"context"
	"slices"
	"testing"

	"kvsim/results"
)

// sweepBests reads, from an exhaustive sweep's summaries, each policy's
// cheapest point whose TTFT p99 meets target (ties to the earlier point;
// -1 for none) and the overall cheapest (point, policy) (ties to the
// earlier policy).
func sweepBests(sums []*results.Summary, target float64) (per []int, best, pol int) {
	best, pol = -1, -1
	for j := range sums[0].Policies {
		b := -1
		for k, s := range sums {
			if s.Policies[j].TTFTms.OrNaN().P99 <= target && (b < 0 || s.CostUSD < sums[b].CostUSD) {
				b = k
			}
		}
		per = append(per, b)
		if b >= 0 && (best < 0 || sums[b].CostUSD < sums[best].CostUSD) {
			best, pol = b, j
		}
	}
	return per, best, pol
}

// TestPlanConfirmedMatchesSweep: on a small grid of the quick start (its
// first 500 requests; host 4, 16, 64 GiB x SSD 64, 256, 1024 GiB) where
// TTFT p99 is not monotone in capacity, the monotone search alone chooses
// a dearer point than the exhaustive sweep at 375 ms (64GiB,64GiB with
// lru, against 16GiB,64GiB with s3fifo), and the confirmed search chooses
// the sweep's point, per policy and overall, at every target from 200 to
// 1500 ms in steps of 25. The footprint pre-pass (the 500 requests' blocks
// take 193.2 GiB, so 1 TiB of SSD repeats 256 GiB) keeps every choice and
// simulates, at each of those 53 targets, no more than the search without
// it, and in all 131 points against 156 (deterministic: exact figures).
func TestPlanConfirmedMatchesSweep(t *testing.T) {
	dims := []PlanDim{{Tier: "host", Values: []string{"4GiB", "16GiB", "64GiB"}}, {Tier: "ssd", Values: []string{"64GiB", "256GiB", "1TiB"}}}
	load := func() *Plan {
		p, err := LoadPlan("../scenarios/quickstart.toml", nil, dims, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	o := Options{Workers: 2, Limit: 500}
	sums, err := load().Sweep().Run(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	label := func(p *Plan, k, j int) string {
		if k < 0 {
			return "none"
		}
		return p.Values[k] + " " + p.Base.Policies[j].Name
	}
	p := load()
	r, err := p.Search(ctx, PlanOptions{Options: o, SLO: SLOTarget{TTFTp99: 375}, monotoneOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, best, pol := sweepBests(sums, 375); r.Best == nil || label(p, best, pol) != "16GiB,64GiB s3fifo" || r.Best.Point.Value+" "+r.Best.Policy != "64GiB,64GiB lru" {
		t.Errorf("at 375 ms the monotone search chose %+v, the sweep %s: not the case this test is about", r.Best, label(p, best, pol))
	}
	with, without := 0, 0
	for target := 200.0; target <= 1500; target += 25 {
		per, best, pol := sweepBests(sums, target)
		p := load()
		r, err := p.Search(ctx, PlanOptions{Options: o, SLO: SLOTarget{TTFTp99: target}, Margin: DefaultPlanMargin})
		if err != nil {
			t.Fatal(err)
		}
		w, err := load().Search(ctx, PlanOptions{Options: o, SLO: SLOTarget{TTFTp99: target}, Margin: DefaultPlanMargin, noFootprint: true})
		if err != nil {
			t.Fatal(err)
		}
		with, without = with+r.Simulated, without+w.Simulated
		if r.Simulated > w.Simulated || r.BeyondFootprint != 3 || w.BeyondFootprint != 0 {
			t.Errorf("%g ms: simulated %d with the footprint (%d beyond it), %d without", target, r.Simulated, r.BeyondFootprint, w.Simulated)
		}
		if r.Best != nil && w.Best != nil && r.Best.Point.Value+r.Best.Policy != w.Best.Point.Value+w.Best.Policy {
			t.Errorf("%g ms: the footprint changed the choice", target)
		}
		got := "none"
		if r.Best != nil {
			got = r.Best.Point.Value + " " + r.Best.Policy
		}
		if want := label(p, best, pol); got != want {
			t.Errorf("%g ms: plan chose %s, the sweep %s", target, got, want)
		}
		for j, c := range r.PerPolicy {
			g := -1
			if c.Met {
				g = slices.Index(p.Values, c.Point.Value)
			}
			if g != per[j] {
				t.Errorf("%g ms: %s: plan chose %s, the sweep %s", target, c.Policy, label(p, g, j), label(p, per[j], j))
			}
		}
	}
	t.Logf("simulated over the targets: %d with the footprint pre-pass, %d without", with, without)
	if with != 131 || without != 156 {
		t.Errorf("simulated %d with the footprint, %d without; want 131 and 156", with, without)
	}
}
