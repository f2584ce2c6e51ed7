package report

import (
	"io"
	"math"
	"slices"
)

// PlanPoint is one simulated (configuration, policy) of a kvsim plan.
type PlanPoint struct {
	Policy  string
	Label   string // the configuration: "host=128GiB ssd=256GiB"
	CostUSD float64
	TTFTp99 float64 // ms
	Meets   bool
}

// Plan is a kvsim plan page: its choice in words, the Pareto front as a
// table, and every simulated point.
type Plan struct {
	Title   string
	Facts   []string
	Head    []string
	Rows    [][]string
	Points  []PlanPoint
	Front   []PlanPoint // the Pareto front, cheapest first
	TTFTSLO float64     // ms; 0: no TTFT target
}

// PlanPage writes the plan: $ against TTFT p99 for every simulated point,
// one series per policy, the Pareto front joined, and the TTFT target.
func PlanPage(w io.Writer, v Plan, o Options) error {
	p := &page{Title: v.Title, Heading: v.Title, Facts: v.Facts, Table: textTable(v.Head, v.Rows)}
	c := chart{ID: "plan_pareto", Kind: kindScatter, Title: "Cost against TTFT p99",
		Subtitle: "every simulated configuration, one series per policy; the line joins the Pareto front",
		XName:    "hierarchy cost ($)", YName: "TTFT p99 (ms)", Unit: " ms", Decimals: 1, XUnit: " $", XDecimals: 0}
	var policies []string
	for _, q := range v.Points {
		if !slices.Contains(policies, q.Policy) {
			policies = append(policies, q.Policy)
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pol := range policies {
		s := series{Name: pol}
		for _, q := range v.Points {
			if q.Policy == pol && !math.IsNaN(q.TTFTp99) {
				s.X, s.Y = append(s.X, round(q.CostUSD)), append(s.Y, round(q.TTFTp99))
				lo, hi = min(lo, q.CostUSD), max(hi, q.CostUSD)
			}
		}
		c.Series = append(c.Series, s)
	}
	front := series{Name: "Pareto front", Line: true}
	for _, q := range v.Front {
		front.X, front.Y = append(front.X, round(q.CostUSD)), append(front.Y, round(q.TTFTp99))
	}
	c.Series = append(c.Series, front)
	if v.TTFTSLO > 0 && lo <= hi {
		c.Series = append(c.Series, series{Name: "TTFT target", X: nums{round(lo), round(hi)}, Y: nums{round(v.TTFTSLO), round(v.TTFTSLO)}, Line: true})
	}
	p.Charts = append(p.Charts, c)
	return writePage(w, p, o)
}
