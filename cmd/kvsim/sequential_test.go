package main

import (
	"fmt"
	"testing"

	"kvsim/core"
	"kvsim/experiment"
	"kvsim/hw"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// spaced replays a trace with arrivals far apart, so each request finishes
// before the next arrives: the order a sequential real run has.
type spaced struct{ src core.Source }

func (s spaced) Next(r *core.Request) error {
	err := s.src.Next(r)
	r.Arrival = r.Seq * 1e12
	return err
}

func decisions(st core.Stats) string {
	return fmt.Sprint("hits ", st.Hits, " misses ", st.Misses, " evictions ", st.Evictions, " demotions ", st.Demotions,
		" promotions ", st.Promotions, " drops ", st.Drops, " denied ", st.AdmissionDenied, " write-throughs ", st.WriteThroughs,
		" transient ", st.TransientLoads, " rejected ", st.Rejected)
}

// TestSequentialConformance runs the same policies through the simulator
// and through the real body on its own clock (no simulator at all) and
// checks they make the same decisions: the core and policies are one
// piece of code whichever body carries out their moves.
func TestSequentialConformance(t *testing.T) {
	for _, path := range []string{"../../scenarios/hbm_dram.toml", "../../scenarios/hbm_dram_ssd.toml", "../../scenarios/quickstart.toml"} {
		sc, err := scenario.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, pol := range sc.Policies {
			t.Run(sc.Name+"/"+pol.Name, func(t *testing.T) {
				open := func() core.Source {
					r, err := trace.Open(sc.Workload.Trace, trace.Options{Limit: 500})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { r.Close() })
					return workload.NewSource(r, trace.NewDict())
				}
				s, err := sim.New(experiment.SimConfig(sc, pol, nil), nil)
				if err != nil {
					t.Fatal(err)
				}
				want, err := s.Run(spaced{open()})
				if err != nil {
					t.Fatal(err)
				}

				const blockBytes = 8192
				scale := float64(blockBytes) / float64(sc.Model.BytesPerBlock())
				var specs []hw.TierSpec
				for _, ti := range sc.Tiers {
					specs = append(specs, hw.TierSpec{Name: ti.Name, Kind: ti.Kind, Capacity: int64(float64(ti.Capacity) * scale)})
				}
				ss, err := hw.OpenStores(specs, hw.TierOptions{Dir: replayDir(t), SlotBytes: blockBytes, Hugepages: "off", Device: "emulated"})
				if err != nil {
					t.Fatal(err)
				}
				defer ss.Close()
				body, err := hw.NewBody(hw.BodyOptions{Stores: ss.List, MaxBytes: blockBytes, Verify: true,
					RealBytes: func(n int64) int { return max(16, (int(float64(n)*scale)+7)&^7) }})
				if err != nil {
					t.Fatal(err)
				}
				defer body.Close()
				c, err := body.RunSequential(experiment.CoreConfig(sc, pol, nil), open(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if got, exp := decisions(c.Stats), decisions(want.Stats); got != exp {
					t.Errorf("real body on its own clock:\n %s\nsimulator:\n %s", got, exp)
				}
				if c.Stats.Evictions[0] == 0 || c.Stats.Hits[1] == 0 {
					t.Errorf("the run should evict from HBM and hit below it: %s", decisions(c.Stats))
				}
				if body.Corrupt != 0 || body.Checked == 0 || c.Stats.Requests+c.Stats.Rejected != 500 {
					t.Errorf("checked %d, corrupt %d, %d requests", body.Checked, body.Corrupt, c.Stats.Requests)
				}
			})
		}
	}
}
