package validate

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"kvsim/core"
)

// maxSeconds bounds any time a record gives, so that differences and sums
// of two stay inside the simulator's clock (core.MaxTime, about 146 years).
const maxSeconds = float64(core.MaxTime/2) / 1e9

var errTime = errors.New("not a time in seconds")

// parseSeconds reads a decimal number of seconds as whole nanoseconds.
// Plain decimals are read exactly (rounded half away from zero at the
// tenth digit), so a record written with nine decimals reads back to the
// nanosecond whatever its magnitude; an exponent goes through float64.
func parseSeconds(s string) (int64, error) {
	if s == "" || len(s) > 64 {
		return 0, errTime
	}
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > maxSeconds {
			return 0, errTime
		}
		return int64(math.Round(f * 1e9)), nil
	}
	neg := s[0] == '-'
	if neg || s[0] == '+' {
		s = s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" && frac == "" || dot && frac == "" && whole == "" {
		return 0, errTime
	}
	var ns int64
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, errTime
		}
		ns = ns*10 + int64(c-'0')
		if float64(ns) > maxSeconds {
			return 0, errTime
		}
	}
	ns *= 1e9
	scale := int64(1e8)
	for i, c := range frac {
		if c < '0' || c > '9' {
			return 0, errTime
		}
		switch {
		case i < 9:
			ns += int64(c-'0') * scale
			scale /= 10
		case i == 9 && c >= '5':
			ns++
		}
	}
	if neg {
		ns = -ns
	}
	return ns, nil
}
