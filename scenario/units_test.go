package scenario

import (
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	good := []struct {
		in   string
		want int64
	}{
		{"60GiB", 64424509440},
		{"512MB", 512e6},
		{"3.84TB", 3_840_000_000_000},
		{"15.36TB", 15_360_000_000_000},
		{"1TiB", 1 << 40},
		{"4096", 4096},
		{"0", 0},
		{"1.5 KiB", 1536},
		{" 2 GiB ", 2 << 30},
		{"1kB", 1000},
		{"10B", 10},
		{"-1GiB", -1 << 30},
		{"0.3B", 0},
		{"0.5B", 1},
		{"8191PiB", 8191 << 50},
	}
	for _, c := range good {
		got, err := ParseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	bad := map[string]string{
		"":        `bad size "": missing number`,
		"GiB":     `bad size "GiB": missing number`,
		"60Gib":   `bad size "60Gib": unknown unit "Gib" (use B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)`,
		"1e3":     `bad size "1e3": unknown unit "e3" (use B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)`,
		"1/3":     `bad size "1/3": unknown unit "/3" (use B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)`,
		"8192PiB": `bad size "8192PiB": out of range`,
		"1.2.3MB": `bad size "1.2.3MB": unknown unit ".3MB" (use B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)`,
	}
	for in, want := range bad {
		if _, err := ParseBytes(in); err == nil || err.Error() != want {
			t.Errorf("ParseBytes(%q) error = %v; want %s", in, err, want)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	good := []struct {
		in   string
		want float64
	}{
		{"25GB/s", 25e9},
		{"2TB/s", 2e12},
		{"800MiB/s", 800 << 20},
		{"1GiB/s", 1 << 30},
		{"100Gbit/s", 12.5e9},
		{"400Gbps", 50e9},
		{"100Mbps", 12.5e6},
		{"1.5 GB/s", 1.5e9},
		{"1000", 1000},
		{"7GB/s", 7e9},
	}
	for _, c := range good {
		got, err := ParseBandwidth(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBandwidth(%q) = %g, %v; want %g", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "fast", "25GB", "25Gb/s", "25 GB/h", "/s"} {
		if _, err := ParseBandwidth(in); err == nil || !strings.HasPrefix(err.Error(), "bad bandwidth") {
			t.Errorf("ParseBandwidth(%q) error = %v", in, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	good := []struct {
		in   string
		want int64
	}{
		{"10us", 10000},
		{"10µs", 10000},
		{"10μs", 10000},
		{"100ns", 100},
		{"1.5ms", 1_500_000},
		{"2s", 2e9},
		{"3 us", 3000},
		{"0", 0},
		{"0.5ns", 1},
	}
	for _, c := range good {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	bad := map[string]string{
		"10":   `bad duration "10": missing unit (ns, us, ms, s)`,
		"10m":  `bad duration "10m": unknown unit "m" (use ns, us, µs, ms, s)`,
		"fast": `bad duration "fast": missing number`,
	}
	for in, want := range bad {
		if _, err := ParseDuration(in); err == nil || err.Error() != want {
			t.Errorf("ParseDuration(%q) error = %v; want %s", in, err, want)
		}
	}
}

func TestFormat(t *testing.T) {
	bytes := map[int64]string{
		0:                 "0 B",
		512:               "512 B",
		1024:              "1 KiB",
		128 << 10:         "128 KiB",
		2 << 30:           "2 GiB",
		3 << 29:           "1.5 GiB",
		60 << 30:          "60 GiB",
		1<<20 - 1:         "1 MiB",
		3_840_000_000_000: "3.49 TiB",
		-2048:             "-2 KiB",
	}
	for in, want := range bytes {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q; want %q", in, got, want)
		}
	}
	bw := map[float64]string{25e9: "25 GB/s", 2e12: "2 TB/s", 1e9: "1 GB/s", 12.5e6: "12.5 MB/s", 10: "10 B/s"}
	for in, want := range bw {
		if got := FormatBandwidth(in); got != want {
			t.Errorf("FormatBandwidth(%g) = %q; want %q", in, got, want)
		}
	}
	dur := map[int64]string{100: "100ns", 10000: "10us", 1_500_000: "1.5ms", 2e9: "2s", 0: "0ns"}
	for in, want := range dur {
		if got := FormatDuration(in); got != want {
			t.Errorf("FormatDuration(%d) = %q; want %q", in, got, want)
		}
	}
}

// Round trip: what FormatBytes prints for whole units parses back.
func TestFormatParseRoundTrip(t *testing.T) {
	for _, n := range []int64{1, 1 << 10, 5 << 20, 60 << 30, 1 << 40, 3 << 29} {
		got, err := ParseBytes(strings.ReplaceAll(FormatBytes(n), " ", ""))
		if err != nil || got != n {
			t.Errorf("round trip %d: %d, %v", n, got, err)
		}
	}
}
