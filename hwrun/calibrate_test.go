package hwrun

import (
	"math"
	"testing"

	"kvsim/hw/doctor"
	"kvsim/scenario"
)

// TestProfilePairs: a calibration's profile gives every pair of tier kinds
// (but two disks) the figures of the moves between the stores that
// implement them, each measured (a missing one would be a zero bandwidth).
func TestProfilePairs(t *testing.T) {
	cal := &doctor.Calibration{BlockBytes: 65536, Links: map[string]doctor.LinkFit{}}
	measured := []string{"hbm->pinned", "pinned->hbm", "pinned->pinned", "hbm->dram", "pinned->dram", "dram->hbm",
		"dram->pinned", "dram->ssd", "ssd->dram"}
	for i, name := range measured {
		cal.Links[name] = doctor.LinkFit{Bandwidth: float64(i+1) * 1e9, Latency: int64(i+1) * 1000}
	}
	p := Profile(cal)
	got := map[[2]string]string{}
	for _, l := range p.Links {
		if l.Bandwidth == "0MB/s" || l.ReverseBandwidth == "0MB/s" {
			t.Errorf("%s<->%s: an unmeasured path", l.From, l.To)
		}
		got[[2]string{l.From, l.To}] = l.Bandwidth + " " + l.ReverseBandwidth
	}
	for _, c := range []struct{ a, b, want string }{
		{"hbm", "pinned", "1000MB/s 2000MB/s"},      // hbm->pinned, pinned->hbm
		{"hbm", "remote_dram", "1000MB/s 2000MB/s"}, // remote DRAM is emulated like pinned
		{"pinned", "remote_dram", "3000MB/s 3000MB/s"},
		{"dram", "remote_dram", "7000MB/s 5000MB/s"}, // dram->pinned, pinned->dram
		{"hbm", "ssd", "8000MB/s 9000MB/s"},          // disks: measured from DRAM
		{"ssd", "remote_dram", "9000MB/s 8000MB/s"},
		{"pinned", "nvmeof", "8000MB/s 9000MB/s"},
	} {
		if g := got[[2]string{c.a, c.b}]; g != c.want {
			t.Errorf("%s<->%s: %q, want %q", c.a, c.b, g, c.want)
		}
	}
	n := len(scenario.Kinds())
	if want := n*(n-1)/2 - 1; len(p.Links) != want { // less ssd<->nvmeof
		t.Errorf("%d pairs, want %d", len(p.Links), want)
	}
}

// TestProfileBandwidthReadsBack: every bandwidth calibrate can measure,
// from a slow disk to a memory copy past 1 TB/s, is written in a form the
// profile reader takes back, to the KB/s.
func TestProfileBandwidthReadsBack(t *testing.T) {
	for _, v := range []float64{1, 999.5, 2.5e6, 1.234567e9, 25e9, 1.36533e12, 9e15} {
		s := bps(v)
		got, err := scenario.ParseBandwidth(s)
		if err != nil {
			t.Fatalf("%g B/s written as %q: %v", v, s, err)
		}
		if math.Abs(got-v) > 500 {
			t.Fatalf("%g B/s written as %q reads back as %g", v, s, got)
		}
	}
}
