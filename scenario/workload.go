package scenario

import (
	"fmt"

	"kvsim/results"
	"kvsim/trace"
)

// Workload names the trace to replay.
type Workload struct {
	// Trace is absolute, joined to the scenario file's directory when
	// written in the file, or as given when set by --set (relative to the
	// working directory, as the shell completes it).
	Trace        string
	TraceLine    int     `json:"-"` // the key's line in the file; -1: --set; 0: none (CheckTrace's message)
	Format       string  // "mooncake" (default), "bailian", "azure", "burstgpt" or "synthetic"
	Limit        int     `key:"limit"`          // requests to read; 0 = all
	SkipBadLines bool    `key:"skip_bad_lines"` // count and skip malformed lines
	Speedup      float64 `key:"speedup"`        // arrival times are divided by it; default 1
	// Closed is key mode = "closed": closed-loop sessions (empty in JSON
	// when open, so open runs keep their run IDs).
	Closed bool `json:",omitempty"`
	// Gen is set for format = "synthetic": the trace is generated, in
	// memory, from the scenario's seed (Trace then only labels it).
	Gen *trace.GenConfig
	// Inject is [workload.inject], nil without one: block ids for the
	// requests without them, from the prefix model (kvsim/workload.Inject)
	// seeded by the scenario's seed.
	Inject *results.Inject `json:",omitempty"`
}

// Formats lists the accepted workload formats.
func Formats() []string { return append(trace.Formats(), "synthetic") }

func parseWorkload(t *table, seed int64, blockTokens int) (Workload, error) {
	var w Workload
	var err error
	if w.Format, err = t.str("format"); err != nil {
		return w, err
	}
	mode, err := t.str("mode")
	if err != nil {
		return w, err
	}
	w.Closed = mode == "closed"
	if w.Format == "synthetic" {
		if _, ok := t.m["trace"]; ok {
			return w, t.errf("trace", "a synthetic workload is generated from the scenario's seed, not read from a file")
		}
		g, err := parseGen(t, seed, blockTokens)
		if err != nil {
			return w, err
		}
		w.Gen = &g
		w.Trace = fmt.Sprintf("synthetic(seed=%d)", seed)
	} else {
		for _, f := range t.decl.fields {
			if _, ok := t.m[f.Name]; ok && f.Only == synthetic {
				return w, t.errf(f.Name, "only for %s", synthetic)
			}
		}
		if w.Trace, err = t.str("trace"); err != nil {
			return w, err
		}
		if w.Trace == "" {
			return w, t.errf("trace", "required (path of the trace file)")
		}
		if f, ok := trace.LookupFormat(w.Format); ok {
			if err := f.CheckBlockTokens(blockTokens, "model.block_tokens"); err != nil {
				return w, t.errf("format", "%v", err)
			}
		}
		w.Trace = t.p.filePath(t.name, "trace", w.Trace)
		w.TraceLine = t.line("trace")
	}
	return w, t.bind(&w)
}

// parseGen reads the generator settings of a synthetic workload; defaults
// are trace.DefaultGenConfig's, the seed is the scenario's.
func parseGen(t *table, seed int64, blockTokens int) (trace.GenConfig, error) {
	g := trace.DefaultGenConfig()
	g.Seed, g.BlockTokens = seed, blockTokens
	if err := t.bind(&g, func(string) (any, error) { return keep, nil }); err != nil {
		return g, err
	}
	think, err := t.intOr("think", int64(g.MeanThinkSec*1e9))
	if err != nil {
		return g, err
	}
	g.MeanThinkSec = float64(think) / 1e9
	if err := g.Validate(); err != nil {
		return g, t.errf("format", "synthetic: %v", err)
	}
	return g, nil
}
