package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"kvsim/results"
	"kvsim/scenario"
	"kvsim/trace"
)

// resultsFormat is the version of the files a run writes; it enters every
// run_id, so results of an older layout never pass for a newer run's.
const resultsFormat = "kvsim-results/2"

// runID identifies a run by its inputs, not by when it ran: the scenario
// as simulated (after --set), the trace's content, the reader's options and
// the results format. Equal inputs give equal IDs and so, the simulation
// being deterministic, equal results; the files of one run all carry it
// (summary.json run_id, requests.csv's run_id column, a <meta> in
// report.html), so that a folder mixing two runs can be told.
func runID(sc *scenario.Scenario, opt trace.Options, sweep *results.SweepPoint) (string, error) {
	h := sha256.New()
	c := *sc
	// Paths say where the inputs are, not what they are: the trace is
	// hashed by content instead, a profile already shaped the links.
	c.Path, c.Profile, c.Sets = "", "", nil
	c.Workload.Trace = ""
	// Keys that shape nothing in this run stay out, so that IDs from
	// before they existed still hold: a node tier's scope (the default),
	// the NICs of a cluster with no pool, disaggregation nor peer fetch, a
	// dense model's hidden size without an interconnect.
	c.Tiers = append([]scenario.Tier(nil), sc.Tiers...)
	for i := range c.Tiers {
		if c.Tiers[i].Scope != scenario.ScopeCluster {
			c.Tiers[i].Scope = ""
		}
	}
	// A preset's hidden size shapes only collectives and experts.
	if sc.Model.Experts == 0 && !(sc.GPU.InterconnectBandwidth > 0 && sc.GPU.GPUs() > 1) {
		c.Model.Hidden = 0
	}
	if sc.Pool() < 0 && sc.Cluster.Prefill == 0 && !sc.Cluster.PeerFetch {
		c.Cluster.NICBandwidth, c.Cluster.NICLatency, c.Cluster.NICLanes = 0, 0, 0
	}
	b, err := json.Marshal(struct {
		Format   string
		Scenario *scenario.Scenario
		Options  trace.Options
		Sweep    *results.SweepPoint
	}{resultsFormat, &c, opt, sweep})
	if err != nil {
		return "", fmt.Errorf("run: run_id: %w", err)
	}
	h.Write(b)
	if sc.Workload.Gen == nil { // a generated trace is its config, hashed above
		f, err := trace.OpenFile(sc.Workload.Trace)
		if err != nil {
			return "", BadInputf("%s: workload: trace: %v", sc.Path, err)
		}
		defer f.Close()
		if _, err := io.Copy(h, f); err != nil {
			return "", BadInputf("%s: workload: trace %s: %v", sc.Path, sc.Workload.Trace, PathErr(err))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}
