package hwrun

import (
	"fmt"
	"math"
	"strconv"

	"kvsim/hw/doctor"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/tierkind"
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
	// Each pair of kinds gets the moves between the stores the replay
	// implements them with (tierkind's Calibrated; Calibration.Link gives an
	// emulated remote DRAM tier the pinned store's figures); a disk's
	// moves were measured from DRAM, and two disks never meet in one move.
	kinds := tierkind.Names()
	for i, a := range kinds {
		for _, b := range kinds[i+1:] {
			ka, _ := tierkind.Lookup(a)
			kb, _ := tierkind.Lookup(b)
			ca, cb := ka.Calibrated, kb.Calibrated
			switch {
			case ca == "" || cb == "" || ca == "ssd" && cb == "ssd":
			case cb == "ssd":
				link(a, b, c.Link("dram->ssd"), c.Link("ssd->dram"))
			case ca == "ssd":
				link(a, b, c.Link("ssd->dram"), c.Link("dram->ssd"))
			default:
				link(a, b, c.Link(ca+"->"+cb), c.Link(cb+"->"+ca))
			}
		}
	}
	return p
}

// bps writes a measured bandwidth as the profile reader reads it: MB/s to
// the KB/s, never in exponent form (a memory copy measured past 1 TB/s
// once came out as "1.36533e+06MB/s", which no reader accepts).
func bps(v float64) string {
	return strconv.FormatFloat(math.Round(v/1e3)/1e3, 'f', -1, 64) + "MB/s"
}
