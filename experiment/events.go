package experiment

import (
	"fmt"
	"path/filepath"

	"kvsim/results"
	"kvsim/scenario"
)

// eventsSupported refuses --trace-events where one log cannot say what
// happened: a cluster's instances share seqs but not tiers.
func eventsSupported(sc *scenario.Scenario) error {
	if sc.Cluster.Instances > 0 {
		return BadInputf("%s: --trace-events: a [cluster] run is not logged (its instances' tiers differ); log one instance's scenario", sc.Path)
	}
	return nil
}

// checkEventsOurs refuses, before any simulation, an events.bin in dir
// that kvsim did not write.
func checkEventsOurs(dir string) error {
	path := filepath.Join(dir, results.EventsFile)
	if ok, _ := results.Replaceable(path, results.IsEvents); !ok {
		return BadInputf("run: %s %v: it will not be replaced; move it or give another --out", path, results.ErrNotOurs)
	}
	return nil
}

// writeEvents writes the policies' event logs into dir's events.bin, after
// the set: its run_id ties it to the summary.json beside it.
func writeEvents(dir string, sc *scenario.Scenario, id string, runs []policyRun) error {
	cfg := SimConfig(sc, sc.Policies[0], nil)
	l := &results.EventLog{Header: results.EventsHeader{RunID: id, Tiers: TierNames(sc),
		BytesPerToken: cfg.Core.BytesPerToken, BlockTokens: cfg.Core.BlockTokens}}
	for i, r := range runs {
		if i == 0 && r.res != nil {
			for _, ls := range r.res.Links {
				l.Header.Links = append(l.Header.Links, ls.Name)
			}
			l.Header.LinkLatency = r.events.LinkLatency
		}
		ev := r.events
		l.Header.Policies = append(l.Header.Policies, results.EventsPolicy{Name: sc.Policies[i].Name, Dropped: ev.Dropped, Max: ev.Max})
		es := make([]results.Event, 0, ev.Len())
		for _, c := range ev.Chunks() {
			for _, e := range c {
				es = append(es, results.Event{Time: e.Time, Seq: e.Seq, Block: e.Block, A: e.A, B: e.B,
					Kind: uint8(e.Kind), From: e.From, To: e.To, Aux: e.Aux})
			}
		}
		l.Events = append(l.Events, es)
	}
	path := filepath.Join(dir, results.EventsFile)
	if err := checkEventsOurs(dir); err != nil {
		return err
	}
	if err := results.WriteEvents(path, l); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}
