package validate

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }

func TestValidateStatistics(t *testing.T) {
	meas := []float64{100, 200, 400, 0}
	pred := []float64{110, 150, 400, 5}
	// The zero measurement is left out: (10/100 + 50/200 + 0/400) / 3.
	mape, n := MAPE(pred, meas)
	if n != 3 || !near(mape, 100*(0.1+0.25+0)/3) {
		t.Errorf("MAPE = %v over %d, want %v over 3", mape, n, 100*0.35/3)
	}
	// Signed: (+0.1 - 0.25 + 0) / 3.
	if b := Bias(pred, meas); !near(b, 100*(-0.15)/3) {
		t.Errorf("Bias = %v, want %v", b, -5.0)
	}
	if m := Mean([]float64{1, 2, 3, 10}); m != 4 {
		t.Errorf("Mean = %v, want 4", m)
	}
	// numpy.percentile([1, 2, 3, 10], q): rank q/100 x 3.
	for _, c := range []struct{ p, want float64 }{{0, 1}, {50, 2.5}, {90, 7.9}, {99, 9.79}, {100, 10}} {
		if got := Percentile([]float64{10, 3, 1, 2}, c.p); !near(got, c.want) {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) || !math.IsNaN(Mean(nil)) || !math.IsNaN(KS(nil, []float64{1})) {
		t.Error("no values should give NaN")
	}
	if m, n := MAPE([]float64{1}, []float64{0}); n != 0 || !math.IsNaN(m) {
		t.Errorf("MAPE of only zero measurements = %v over %d, want NaN over 0", m, n)
	}
}

func TestValidateKS(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 2, 3}, []float64{1, 2, 3}, 0},
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 1},
		// F_a - F_b after 1: 1/2 - 0; after 2: 1 - 1/3; after 3, 4: 1 - 2/3, 1 - 1.
		{[]float64{1, 2}, []float64{3, 4, 2}, 2.0 / 3},
		// Ties jump together: after 1, F_a = 2/4 and F_b = 1/2; after 2, 3/4 and 1/2; after 5, 1 and 1.
		{[]float64{1, 1, 2, 5}, []float64{1, 5}, 0.25},
		// One sample inside the other: after 2: 0 - 1/4; after 3: 1 - 1/4.
		{[]float64{3}, []float64{2, 4, 5, 6}, 0.75},
	} {
		if got := KS(c.a, c.b); !near(got, c.want) {
			t.Errorf("KS(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := KS(c.b, c.a); !near(got, c.want) {
			t.Errorf("KS is not symmetric: KS(%v, %v) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestValidateParseSeconds(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int64
		ok   bool
	}{
		{"479748.340626232", 479748340626232, true},
		{"0.0000000005", 1, true}, // rounds half away from zero at the tenth digit
		{"0.0000000004", 0, true},
		{"-1.5", -1500000000, true},
		{"12", 12e9, true},
		{"1.5e-3", 1500000, true},
		{"", 0, false}, {".", 0, false}, {"1.2.3", 0, false}, {"abc", 0, false},
		{"1e300", 0, false}, {"99999999999999999999", 0, false},
	} {
		got, err := parseSeconds(c.s)
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("parseSeconds(%q) = %d, %v; want %d, ok %v", c.s, got, err, c.want, c.ok)
		}
	}
}
