package main

import "flag"

// DefaultTraceEventsMax is the events kept per policy by default: 44 bytes
// each, about 22 MB of events.bin per policy at the cap.
const DefaultTraceEventsMax = 500_000

// traceEventsFlags are run's and sweep's --trace-events and --trace-events-max.
type traceEventsFlags struct {
	on  bool
	max int
}

func addTraceEventsFlags(fs *flag.FlagSet, t *traceEventsFlags) {
	fs.BoolVar(&t.on, "trace-events", false, "also write each results folder's events.bin (each sweep point's; a [cluster] run's instances in one),\na per-event log for kvsim explain (docs/explain.md)")
	fs.IntVar(&t.max, "trace-events-max", DefaultTraceEventsMax, "keep at most `N` events per policy in events.bin (the rest are counted, not kept)")
}

// n is the events to keep per policy, 0 when off.
func (t traceEventsFlags) n() int {
	if !t.on {
		return 0
	}
	return t.max
}
