package trace

import (
	"io"
	"time"
)

// traceStats summarises a trace, for tests of the readers (kvsim's own
// summaries are workload.Profile's).
type traceStats struct {
	Requests       int
	BlockAccesses  int64 // sum of len(hash_ids)
	DistinctBlocks int
	InputTokens    int64
	OutputTokens   int64
	Duration       time.Duration // arrival of the last request (traces start at 0)
	Skipped        int           // bad lines skipped (Options.SkipBadLines)
}

// Reuse is the block-level reuse ratio, 1 - distinct/accesses: the hit ratio
// an infinite cache would reach counting each block reference on its own.
func (s traceStats) Reuse() float64 {
	if s.BlockAccesses == 0 {
		return 0
	}
	return 1 - float64(s.DistinctBlocks)/float64(s.BlockAccesses)
}

// readStats streams the trace at path once and summarises it.
func readStats(path string, opt Options) (traceStats, error) {
	r, err := Open(path, opt)
	if err != nil {
		return traceStats{}, err
	}
	defer r.Close()
	return statsOf(r)
}

// statsOf reads r to the end and summarises what it yields: a file or a
// generated trace.
func statsOf(r *Reader) (traceStats, error) {
	var (
		c   Counts
		req Request
	)
	d := NewDict()
	for {
		err := r.Next(&req)
		if err != nil && err != io.EOF {
			return traceStats{Requests: int(c.Requests), BlockAccesses: c.BlockAccesses, InputTokens: c.InputTokens,
				OutputTokens: c.OutputTokens, Duration: time.Duration(c.LastArrival)}, err
		}
		if err == io.EOF {
			break
		}
		c.Add(&req)
		for _, h := range req.HashIDs {
			d.ID(h)
		}
	}
	return traceStats{Requests: int(c.Requests), BlockAccesses: c.BlockAccesses, DistinctBlocks: d.Len(),
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, Duration: time.Duration(c.LastArrival),
		Skipped: r.Skipped()}, nil
}
