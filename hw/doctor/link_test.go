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
