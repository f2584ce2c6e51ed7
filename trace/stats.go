package trace

import (
	"io"
	"time"
)

// TraceStats summarises a trace.
type TraceStats struct {
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
func (s TraceStats) Reuse() float64 {
	if s.BlockAccesses == 0 {
		return 0
	}
	return 1 - float64(s.DistinctBlocks)/float64(s.BlockAccesses)
}

// Stats streams the trace at path once and summarises it.
func Stats(path string, opt Options) (TraceStats, error) {
	r, err := Open(path, opt)
	if err != nil {
		return TraceStats{}, err
	}
	defer r.Close()
	return stats(r)
}

func stats(r *Reader) (TraceStats, error) {
	var (
		s   TraceStats
		req Request
	)
	d := NewDict()
	for {
		err := r.Next(&req)
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
		s.Requests++
		s.BlockAccesses += int64(len(req.HashIDs))
		s.InputTokens += int64(req.InputTokens)
		s.OutputTokens += int64(req.OutputTokens)
		s.Duration = time.Duration(req.Arrival)
		for _, h := range req.HashIDs {
			d.ID(h)
		}
	}
	s.DistinctBlocks = d.Len()
	s.Skipped = r.Skipped()
	return s, nil
}
