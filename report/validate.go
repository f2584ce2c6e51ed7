package report

import (
	"fmt"
	"io"
	"math"
)

// Paired is one latency of a validation: per request, what the real run
// measured and what kvsim predicted, in ms (pairs at equal indices).
type Paired struct {
	ID        string // [a-z0-9_]: the charts' ids
	Name      string // "TTFT"
	Title     string // "Time to first token"
	Measured  []float64
	Predicted []float64
}

// Validation is a kvsim validate page: its figures and the pairs drawn.
type Validation struct {
	Title   string
	Facts   []string
	Head    []string   // the figures' table: a header,
	Rows    [][]string // and rows; cells that parse as numbers align right
	Metrics []Paired
}

// ValidationPage writes a page comparing a real run with kvsim's
// prediction of it: per metric, the two distributions' CDFs overlaid and
// each request's predicted value against its measured one.
func ValidationPage(w io.Writer, v Validation, o Options) error {
	p := &page{Title: v.Title, Heading: v.Title, Facts: v.Facts, Table: textTable(v.Head, v.Rows)}
	for _, m := range v.Metrics {
		p.Charts = append(p.Charts, pairedCDF(m), pairedScatter(m))
	}
	return writePage(w, p, o)
}

func pairedCDF(m Paired) chart {
	c := chart{ID: m.ID + "_cdf", Kind: kindLine, Title: m.Title + ": CDF",
		Subtitle: fmt.Sprintf("share of requests with %s ≤ x, measured and predicted (log scale; at most %d points each)", m.Name, maxCDFPoints),
		XName:    m.Name + " (ms)", YName: "requests (%)", XLog: true, YMax: 100,
		Unit: " %", Decimals: 2, XUnit: " ms", XDecimals: 3}
	for _, s := range []struct {
		name string
		v    []float64
	}{{"measured", m.Measured}, {"kvsim", m.Predicted}} {
		x, y := cdf(s.v, maxCDFPoints)
		c.Series = append(c.Series, series{Name: s.name, X: x, Y: y})
	}
	return c
}

// maxScatterPoints bounds a scatter's points: evenly spaced requests.
const maxScatterPoints = 2000

func pairedScatter(m Paired) chart {
	c := chart{ID: m.ID + "_scatter", Kind: kindScatter, Title: m.Title + ": predicted against measured",
		Subtitle: fmt.Sprintf("one point per request (at most %d); on the line, kvsim is exact", maxScatterPoints),
		XName:    "measured " + m.Name + " (ms)", YName: "kvsim " + m.Name + " (ms)",
		Unit: " ms", Decimals: 3, XUnit: " ms", XDecimals: 3}
	n := min(len(m.Measured), len(m.Predicted))
	k := min(n, maxScatterPoints)
	pts := series{Name: "requests"}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < k; i++ {
		j := i
		if k < n {
			j = int(int64(i) * int64(n-1) / int64(max(k-1, 1)))
		}
		x, y := m.Measured[j], m.Predicted[j]
		if math.IsNaN(x) || math.IsNaN(y) {
			continue
		}
		pts.X, pts.Y = append(pts.X, round(x)), append(pts.Y, round(y))
		lo, hi = min(lo, x, y), max(hi, x, y)
	}
	c.Series = append(c.Series, pts)
	if lo <= hi {
		c.Series = append(c.Series, series{Name: "y = x", X: nums{round(lo), round(hi)}, Y: nums{round(lo), round(hi)}, Line: true})
	}
	return c
}

// textTable is a page's table of text cells, the first column a label and
// the others numbers; nil without a header.
func textTable(head []string, rows [][]string) *table {
	if len(head) == 0 {
		return nil
	}
	t := &table{Head: head}
	for _, r := range rows {
		var row []cell
		for i, s := range r {
			row = append(row, cell{Text: s, Num: i > 0})
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
