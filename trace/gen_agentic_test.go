package trace

import (
	"bytes"
	"math"
	"testing"
)

// TestAgenticToolWaitSpread: with a spread, sessions differ in their mean
// tool wait (the slowest session's mean wait is several times the
// fastest's over 40 sessions of 50 waits); without one, they do not (the
// waits of all sessions come from one distribution: the same comparison
// stays within a factor of 3).
func TestAgenticToolWaitSpread(t *testing.T) {
	ratio := func(spread float64) float64 {
		c := AgenticConfig{Seed: 4, BlockTokens: 16, Sessions: 40, RatePerSec: 1, Depth: 50, Fanout: 1,
			TaskTokens: 16, ToolTokens: 16, OutputTokens: 1, ToolWaitSec: 10, ToolWaitSpread: spread}
		var b bytes.Buffer
		if err := GenerateAgentic(&b, c); err != nil {
			t.Fatal(err)
		}
		r := NewReader(&b, "agentic", Options{BlockTokens: 16})
		// A chain's calls are its session: each root starts one.
		session := map[int]int{} // line -> session
		sum, n := map[int]float64{}, map[int]float64{}
		var q Request
		for r.Next(&q) == nil {
			s := len(session)
			if q.Parent > 0 {
				s = session[q.Parent]
				sum[s] += float64(q.Think)
				n[s]++
			}
			session[q.Line] = s
		}
		lo, hi := math.Inf(1), 0.0
		for s := range sum {
			m := sum[s] / n[s]
			lo, hi = min(lo, m), max(hi, m)
		}
		return hi / lo
	}
	t.Logf("session means apart: %.1fx without spread, %.1fx with 1.5", ratio(0), ratio(1.5))
	if r := ratio(0); r > 3 {
		t.Errorf("no spread: session means %.1fx apart", r)
	}
	if r := ratio(1.5); r < 10 {
		t.Errorf("spread 1.5: session means only %.1fx apart", r)
	}
	if err := (AgenticConfig{BlockTokens: 16, RatePerSec: 1, Fanout: 1, TaskTokens: 1, ToolTokens: 1, OutputTokens: 1, ToolWaitSpread: math.NaN()}).Validate(); err == nil {
		t.Error("a NaN spread is accepted")
	}
}
