package doctor

import "testing"

// TestCalibrationLink: without --remote the remote tier's links are the
// pinned store's; with it, only what was measured.
func TestCalibrationLink(t *testing.T) {
	c := &Calibration{Links: map[string]LinkFit{"dram->pinned": {Bandwidth: 8e9}, "pinned->hbm": {Bandwidth: 9e9}}}
	if c.Link("dram->remote").Bandwidth != 8e9 || c.Link("remote->hbm").Bandwidth != 9e9 {
		t.Errorf("emulated: %+v, %+v", c.Link("dram->remote"), c.Link("remote->hbm"))
	}
	c.Remote = "redis://h:1"
	c.Links["dram->remote"] = LinkFit{Bandwidth: 1e9}
	if c.Link("dram->remote").Bandwidth != 1e9 || c.Link("remote->hbm").Bandwidth != 0 {
		t.Errorf("measured: %+v, %+v", c.Link("dram->remote"), c.Link("remote->hbm"))
	}
}

// TestFitLinkNeverZeroLatency: a noisy pair of medians falls back to pure
// bandwidth with a latency of 1 ns, never 0, which the simulator would
// read as "the same as the other direction".
func TestFitLinkNeverZeroLatency(t *testing.T) {
	for _, c := range []struct{ ts, tl int64 }{{100_000, 90_000}, {10_000, 100_000}, {100_000, 100_000}} {
		f := fitLink(16384, 65536, c.ts, c.tl)
		if f.Latency < 1 || f.Bandwidth <= 0 {
			t.Errorf("medians %d, %d: %+v", c.ts, c.tl, f)
		}
	}
	if f := fitLink(16384, 65536, 40_000, 100_000); f.Latency != 20_000 || f.Bandwidth != 49152/60e-6 {
		t.Errorf("a clean fit: %+v", f)
	}
}
