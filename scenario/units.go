package scenario

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Unit tables are exact-match: "Gb" would be ambiguous between bits and
// bytes, so only the spellings listed here are accepted.
var byteUnits = map[string]int64{
	"":    1,
	"B":   1,
	"KB":  1e3,
	"kB":  1e3,
	"MB":  1e6,
	"GB":  1e9,
	"TB":  1e12,
	"PB":  1e15,
	"KiB": 1 << 10,
	"MiB": 1 << 20,
	"GiB": 1 << 30,
	"TiB": 1 << 40,
	"PiB": 1 << 50,
}

var bitRates = map[string]float64{
	"bit/s":  1.0 / 8,
	"bps":    1.0 / 8,
	"Kbit/s": 1e3 / 8,
	"kbit/s": 1e3 / 8,
	"Kbps":   1e3 / 8,
	"kbps":   1e3 / 8,
	"Mbit/s": 1e6 / 8,
	"Mbps":   1e6 / 8,
	"Gbit/s": 1e9 / 8,
	"Gbps":   1e9 / 8,
	"Tbit/s": 1e12 / 8,
	"Tbps":   1e12 / 8,
}

var durationUnits = map[string]int64{
	"ns": 1,
	"us": 1e3,
	"µs": 1e3, // U+00B5 micro sign
	"μs": 1e3, // U+03BC Greek mu
	"ms": 1e6,
	"s":  1e9,
}

// splitNumber splits "  -3.84 TB" into sign+digits "-3.84" and unit "TB".
// Only plain decimals are accepted (no exponents, no "1/3" rationals that
// big.Rat would otherwise take).
func splitNumber(s string) (num, unit string, err error) {
	s = strings.TrimSpace(s)
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits, dot := 0, false
	for ; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			digits++
		} else if c == '.' && !dot {
			dot = true
		} else {
			break
		}
	}
	if digits == 0 {
		return "", "", fmt.Errorf("%q: missing number", s)
	}
	return s[:i], strings.TrimSpace(s[i:]), nil
}

// scaled returns num*mult rounded to the nearest integer, exactly.
func scaled(s, num string, mult int64) (int64, error) {
	r, ok := new(big.Rat).SetString(strings.TrimPrefix(num, "+"))
	if !ok {
		return 0, fmt.Errorf("%q: bad number", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	// Round half away from zero: (2*num + sign*den) / (2*den), truncated.
	n := new(big.Int).Mul(r.Num(), big.NewInt(2))
	d := new(big.Int).Mul(r.Denom(), big.NewInt(2))
	if r.Sign() < 0 {
		n.Sub(n, r.Denom())
	} else {
		n.Add(n, r.Denom())
	}
	q := n.Quo(n, d)
	if !q.IsInt64() {
		return 0, fmt.Errorf("%q: out of range", s)
	}
	return q.Int64(), nil
}

const byteUnitList = "B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB"

// ParseBytes parses a size such as "60GiB", "512MB", "3.84TB", "1.5 KiB" or
// "4096" (bytes). Decimal units (KB..PB) are powers of 1000, binary units
// (KiB..PiB) powers of 1024. Fractions round to the nearest byte. A sign is
// accepted so that callers can report "must be > 0" themselves.
func ParseBytes(s string) (int64, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("bad size %w", err)
	}
	mult, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("bad size %q: unknown unit %q (use %s)", s, unit, byteUnitList)
	}
	v, err := scaled(s, num, mult)
	if err != nil {
		return 0, fmt.Errorf("bad size %w", err)
	}
	return v, nil
}

// ParseBandwidth parses a rate such as "25GB/s", "800MiB/s", "100Gbit/s" or
// "100Gbps" into bytes per second. A bare number is bytes per second.
func ParseBandwidth(s string) (float64, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("bad bandwidth %w", err)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("bad bandwidth %q: bad number", s)
	}
	var mult float64
	if r, ok := bitRates[unit]; ok {
		mult = r
	} else if b, ok := strings.CutSuffix(unit, "/s"); ok && byteUnits[b] != 0 {
		mult = float64(byteUnits[b])
	} else if unit == "" {
		mult = 1
	} else {
		return 0, fmt.Errorf("bad bandwidth %q: unknown unit %q (use GB/s, GiB/s, MB/s, MiB/s, Gbit/s, Gbps, ...)", s, unit)
	}
	v *= mult
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad bandwidth %q: out of range", s)
	}
	return v, nil
}

// ParseDuration parses a latency such as "10us", "100ns", "1.5ms" or "2s"
// into nanoseconds (µs and μs are accepted for us). "0" needs no unit; any
// other bare number is rejected because its unit would be a guess.
func ParseDuration(s string) (int64, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %w", err)
	}
	mult, ok := durationUnits[unit]
	if !ok {
		if unit == "" {
			if v, err := scaled(s, num, 1); err == nil && v == 0 {
				return 0, nil
			}
			return 0, fmt.Errorf("bad duration %q: missing unit (ns, us, ms, s)", s)
		}
		return 0, fmt.Errorf("bad duration %q: unknown unit %q (use ns, us, µs, ms, s)", s, unit)
	}
	v, err := scaled(s, num, mult)
	if err != nil {
		return 0, fmt.Errorf("bad duration %w", err)
	}
	return v, nil
}

// ParseFineDuration is ParseDuration keeping fractions of a nanosecond
// ("0.25ns", "1.5us"): step-time coefficients per token are that small.
// A bare number is accepted only as 0.
func ParseFineDuration(s string) (float64, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %w", err)
	}
	mult, ok := durationUnits[unit]
	if !ok {
		if unit == "" {
			if v, err := strconv.ParseFloat(num, 64); err == nil && v == 0 {
				return 0, nil
			}
			return 0, fmt.Errorf("bad duration %q: missing unit (ns, us, ms, s)", s)
		}
		return 0, fmt.Errorf("bad duration %q: unknown unit %q (use ns, us, µs, ms, s)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: bad number", s)
	}
	return v * float64(mult), nil
}

// FormatFineDuration renders ns like FormatDuration, keeping fractions
// below 1us ("0.25ns", "48.5ns").
func FormatFineDuration(ns float64) string {
	if math.Abs(ns) < 1e3 {
		return strconv.FormatFloat(math.Round(ns*1000)/1000, 'f', -1, 64) + "ns"
	}
	return FormatDuration(int64(math.Round(ns)))
}

// FormatBytes renders n in binary units with at most two decimals:
// "512 B", "128 KiB", "1.5 GiB".
func FormatBytes(n int64) string {
	if n < 0 {
		if n == math.MinInt64 {
			return "-8 EiB"
		}
		return "-" + FormatBytes(-n)
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	v = math.Round(v*100) / 100
	if v >= 1024 && i < len(units)-1 { // 1023.999 KiB rounds up to 1 MiB
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + units[i]
}

// FormatBandwidth renders bytes/s in decimal units, as hardware is quoted:
// "25 GB/s", "2 TB/s", "1.5 MB/s".
func FormatBandwidth(bps float64) string {
	units := []string{"B/s", "KB/s", "MB/s", "GB/s", "TB/s", "PB/s"}
	v, i := bps, 0
	for math.Abs(v) >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	v = math.Round(v*100) / 100
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + units[i]
}

// FormatDuration renders nanoseconds as "100ns", "10us", "1.5ms", "2s".
func FormatDuration(ns int64) string {
	abs := ns
	if abs < 0 {
		abs = -abs
	}
	switch {
	case abs >= 1e9:
		return strconv.FormatFloat(math.Round(float64(ns)/1e7)/100, 'f', -1, 64) + "s"
	case abs >= 1e6:
		return strconv.FormatFloat(math.Round(float64(ns)/1e4)/100, 'f', -1, 64) + "ms"
	case abs >= 1e3:
		return strconv.FormatFloat(math.Round(float64(ns)/10)/100, 'f', -1, 64) + "us"
	}
	return strconv.FormatInt(ns, 10) + "ns"
}
