package workload

import (
	"fmt"
	"math"
	"time"

	"kvsim/trace"
)

// Profile streams what a trace's one-line summary says: the counts, the
// distinct blocks, the burstiness of arrivals. Add every request in order.
type Profile struct {
	trace.Counts
	NoIDs int64 // requests without block ids (their reuse is unknown)

	dict *trace.Dict
	// Inter-arrival gaps (s), by Welford's method.
	gaps       int64
	mean, m2   float64
	prev       int64
	window     int64 // current 1 s window
	inWindow   int64 // requests in it
	peakWindow int64 // most requests in one window
}

// NewProfile returns an empty Profile.
func NewProfile() *Profile { return &Profile{dict: trace.NewDict()} }

// Add counts q, arrivals being in order.
func (p *Profile) Add(q *trace.Request) {
	if p.Requests > 0 {
		g := float64(q.Arrival-p.prev) / 1e9
		p.gaps++
		d := g - p.mean
		p.mean += d / float64(p.gaps)
		p.m2 += d * (g - p.mean)
	}
	p.prev = q.Arrival
	if w := q.Arrival / 1e9; w != p.window || p.Requests == 0 {
		p.window, p.inWindow = w, 0
	}
	p.inWindow++
	p.peakWindow = max(p.peakWindow, p.inWindow)
	p.Counts.Add(q)
	if len(q.HashIDs) == 0 && q.InputTokens > 0 {
		p.NoIDs++
	}
	for _, h := range q.HashIDs {
		p.dict.ID(h)
	}
}

// Distinct is the number of distinct blocks.
func (p *Profile) Distinct() int { return p.dict.Len() }

// Ceiling is the hit ratio of an infinite cache, 1 - distinct/accesses (a
// block's first reference misses); 0 without accesses.
func (p *Profile) Ceiling() float64 {
	if p.BlockAccesses == 0 {
		return 0
	}
	return 1 - float64(p.Distinct())/float64(p.BlockAccesses)
}

// Span is the time from the first arrival to the last.
func (p *Profile) Span() time.Duration { return time.Duration(p.LastArrival) }

// Rate is requests per second over the span; 0 when it is empty.
func (p *Profile) Rate() float64 {
	if p.LastArrival <= 0 {
		return 0
	}
	return float64(p.Requests) / (float64(p.LastArrival) / 1e9)
}

// GapCV is the coefficient of variation of the inter-arrival times: 1 for
// Poisson arrivals, more for bursty ones; NaN with fewer than two gaps or
// all arrivals at once.
func (p *Profile) GapCV() float64 {
	if p.gaps < 2 || p.mean <= 0 {
		return math.NaN()
	}
	return math.Sqrt(p.m2/float64(p.gaps-1)) / p.mean
}

// PeakToMean is the most requests in one 1 s window over the mean per
// window (the windows the span covers); NaN without requests.
func (p *Profile) PeakToMean() float64 {
	if p.Requests == 0 {
		return math.NaN()
	}
	windows := float64(p.LastArrival/1e9 + 1)
	return float64(p.peakWindow) / (float64(p.Requests) / windows)
}

// NoReuse reports a trace whose every block is referenced once: no cache
// can hit, so every policy ties.
func (p *Profile) NoReuse() bool { return p.BlockAccesses > 0 && p.Distinct() == int(p.BlockAccesses) }

// Line is the one-line summary: requests, span, rate and burstiness,
// accesses, distinct blocks and the hit ceiling.
func (p *Profile) Line() string {
	if p.Requests == 0 {
		return "no requests"
	}
	s := fmt.Sprintf("%d requests over %s (%.3g/s, inter-arrival CV %s, peak/mean 1s %s), %d block accesses, %d distinct blocks, infinite-cache hit ceiling %.1f%%",
		p.Requests, fmtSpan(p.Span()), p.Rate(), fmtNum(p.GapCV()), fmtNum(p.PeakToMean()), p.BlockAccesses, p.Distinct(), 100*p.Ceiling())
	if p.NoIDs > 0 {
		s += fmt.Sprintf(", %d requests without block ids", p.NoIDs)
	}
	return s
}

func fmtNum(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

// fmtSpan prints a span in the unit that reads best.
func fmtSpan(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%.2f h", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.3g s", d.Seconds())
}
