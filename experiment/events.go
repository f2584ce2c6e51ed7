package experiment

import (
	"fmt"
	"path/filepath"

	"kvsim/results"
	"kvsim/scenario"
)

// checkEventsOurs refuses, before any simulation, an events.bin in dir
// that kvsim did not write.
func checkEventsOurs(dir string) error {
	path := filepath.Join(dir, results.EventsFile)
	if ok, _ := results.Replaceable(path, results.IsEvents); !ok {
		return BadInputf("run: %s %v: it will not be replaced; move it or give another --out", path, results.ErrNotOurs)
	}
	return nil
}

// checkEventsAll is checkEventsOurs for every results folder of names
// under o.Out, before any is simulated, when o asks for event logs.
func checkEventsAll(o Options, names []string) error {
	if o.TraceEvents <= 0 || o.Out == "" {
		return nil
	}
	for _, n := range names {
		if err := checkEventsOurs(filepath.Join(o.Out, n)); err != nil {
			return err
		}
	}
	return nil
}

// writeEvents writes the policies' event logs into dir's events.bin, after
// the set: its run_id ties it to the summary.json beside it.
func writeEvents(dir string, sc *scenario.Scenario, id string, runs []policyRun) error {
	cfg := SimConfig(sc, sc.Policies[0], nil)
	l := &results.EventLog{Header: results.EventsHeader{RunID: id, Tiers: TierNames(sc),
		BytesPerToken: cfg.Core.BytesPerToken, BlockTokens: cfg.Core.BlockTokens, Prefill: sc.Cluster.Prefill}}
	for i, r := range runs {
		if i == 0 && r.res != nil {
			for _, ls := range r.res.Links {
				l.Header.Links = append(l.Header.Links, ls.Name)
			}
			l.Header.LinkLatency = r.events.LinkLatency
		}
		ev := r.events
		ep := results.EventsPolicy{Name: sc.Policies[i].Name, Dropped: ev.Dropped, Max: ev.Max}
		es := make([]results.Event, 0, ev.Len())
		// A cluster's instances share one log: the file keeps each
		// instance's records together, instance 0's first, each in the
		// order they were recorded, and counts them in the header.
		insts := 1
		if sc.Cluster.Instances > 0 {
			insts = sc.Cluster.Instances
			ep.Instances = make([]int64, insts)
		}
		for inst := range insts {
			n := len(es)
			for _, c := range ev.Chunks() {
				for _, e := range c {
					if int(e.Inst) == inst {
						es = append(es, results.Event{Time: e.Time, Seq: e.Seq, Block: e.Block, A: e.A, B: e.B,
							Kind: uint8(e.Kind), From: e.From, To: e.To, Aux: e.Aux})
					}
				}
			}
			if ep.Instances != nil {
				ep.Instances[inst] = int64(len(es) - n)
			}
		}
		l.Header.Policies = append(l.Header.Policies, ep)
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
