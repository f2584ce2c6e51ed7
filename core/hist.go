package core

import (
	"math"
	"math/bits"
)

// Hist is a log-linear histogram of non-negative int64 values (ns) with
// 1/128 relative resolution: memory stays fixed however long the trace, and
// quantiles are exact to within 0.8%. Mean, min and max are exact.
type Hist struct {
	counts   []int64
	n        int64
	sum      float64
	min, max int64
}

const histSub = 7 // 2^7 sub-buckets per power of two

func histIndex(v int64) int {
	if v < 1<<histSub {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 1 // v in [2^e, 2^(e+1))
	m := int(v>>(e-histSub)) & (1<<histSub - 1)
	return (e-histSub+1)<<histSub | m
}

// histLow is the smallest value of bucket i.
func histLow(i int) int64 {
	if i < 1<<histSub {
		return int64(i)
	}
	e := i>>histSub + histSub - 1
	m := int64(i & (1<<histSub - 1))
	return (1<<histSub | m) << (e - histSub)
}

// Add records v (negative values count as 0).
func (h *Hist) Add(v int64) {
	v = max(v, 0)
	i := histIndex(v)
	if i >= len(h.counts) {
		n := max(i+1, 2*len(h.counts))
		h.counts = append(h.counts, make([]int64, n-len(h.counts))...)
	}
	h.counts[i]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Count is the number of values.
func (h *Hist) Count() int64 { return h.n }

// Mean is the exact mean (0 when empty).
func (h *Hist) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Max is the largest value.
func (h *Hist) Max() int64 { return h.max }

// Quantile returns the q-quantile (nearest rank), clamped to [min, max].
// Values below 128 are exact; above, the bucket midpoint.
func (h *Hist) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := histLow(i)
			if i >= 1<<histSub {
				v += (histLow(i+1) - v) / 2
			}
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// Merge adds o's values to h, as if each had been added to h.
func (h *Hist) Merge(o *Hist) {
	if o.n == 0 {
		return
	}
	if len(o.counts) > len(h.counts) {
		h.counts = append(h.counts, make([]int64, len(o.counts)-len(h.counts))...)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}
