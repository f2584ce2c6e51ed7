package experiment

import (
	"fmt"

	"kvsim/hw/doctor"
	"kvsim/results"
	"kvsim/scenario"
)

// Profile is the hardware profile of a calibration, in the form scenario.LoadProfile
// reads: every pair of tier kinds the replay's stores implement the same
// way gets the figures measured for that path.
func Profile(c *doctor.Calibration) *results.Profile {
	p := &results.Profile{BlockBytes: c.BlockBytes, Machine: c.Machine, Date: c.Date,
		Notes: "backends: " + fmt.Sprint(c.Backends), Measurements: c.Extra}
	link := func(from, to string, fwd, rev doctor.LinkFit) {
		p.Links = append(p.Links, results.ProfileLink{From: from, To: to, Bandwidth: bps(fwd.Bandwidth), ReverseBandwidth: bps(rev.Bandwidth),
			Latency: scenario.FormatDuration(fwd.Latency), ReverseLatency: scenario.FormatDuration(rev.Latency)})
	}
	// Each pair of kinds gets the path the replay's stores use for it;
	// remote DRAM is emulated in host memory like the pinned tier.
	L := c.Links
	link("hbm", "pinned", L["hbm->pinned"], L["pinned->hbm"])
	link("hbm", "remote_dram", L["hbm->pinned"], L["pinned->hbm"])
	link("pinned", "remote_dram", L["pinned->pinned"], L["pinned->pinned"])
	link("hbm", "dram", L["hbm->dram"], L["dram->hbm"])
	link("pinned", "dram", L["pinned->dram"], L["dram->pinned"])
	link("remote_dram", "dram", L["pinned->dram"], L["dram->pinned"])
	for _, a := range []string{"hbm", "pinned", "dram", "remote_dram"} {
		for _, d := range []string{"ssd", "nvmeof"} {
			link(a, d, L["dram->ssd"], L["ssd->dram"])
		}
	}
	return p
}

func bps(v float64) string { return fmt.Sprintf("%.6gMB/s", v/1e6) }
