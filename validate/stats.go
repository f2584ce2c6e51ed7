package validate

import (
	"math"
	"slices"
)

// Mean is the arithmetic mean; NaN for no values.
func Mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Percentile is the p-th percentile (0..100) by linear interpolation
// between the closest ranks (numpy's default, which vLLM's benchmark
// uses): rank p/100 x (n-1) in the sorted values. NaN for no values.
func Percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return percentileSorted(s, p)
}

func percentileSorted(s []float64, p float64) float64 {
	r := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(r))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (r-float64(lo))*(s[hi]-s[lo])
}

// MAPE is the mean absolute percentage error of pred against meas, in
// percent, over the pairs whose measured value is > 0 (a relative error
// of a zero measurement is undefined); n is how many pairs counted.
func MAPE(pred, meas []float64) (mape float64, n int) {
	var s float64
	for i := range min(len(pred), len(meas)) {
		if meas[i] > 0 {
			s += math.Abs(pred[i]-meas[i]) / meas[i]
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return 100 * s / float64(n), n
}

// Bias is the mean signed relative error of pred against meas, in
// percent, over the same pairs as MAPE: > 0 when kvsim predicts too slow.
func Bias(pred, meas []float64) float64 {
	var s float64
	n := 0
	for i := range min(len(pred), len(meas)) {
		if meas[i] > 0 {
			s += (pred[i] - meas[i]) / meas[i]
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return 100 * s / float64(n)
}

// KS is the two-sample Kolmogorov-Smirnov distance: the largest gap
// between the two empirical CDFs, sup over x of |F_a(x) - F_b(x)|, in
// 0..1. NaN if either sample is empty.
func KS(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	var d float64
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		// Step past every copy of the smaller value in both samples, so
		// that ties are compared after the jump, as F(x) is defined.
		t := min(x[i], y[j])
		for i < len(x) && x[i] == t {
			i++
		}
		for j < len(y) && y[j] == t {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(x))-float64(j)/float64(len(y))))
	}
	return d
}
