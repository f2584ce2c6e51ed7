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

// Counts are what every consumer of a request stream counts (the run's
// summary, Stats); Add them request by request.
type Counts struct {
	Requests      int64
	BlockAccesses int64 // sum of len(hash_ids)
	InputTokens   int64
	OutputTokens  int64
	LastArrival   int64 // ns, the latest request's arrival
}

// Add counts q.
func (c *Counts) Add(q *Request) {
	c.Requests++
	c.BlockAccesses += int64(len(q.HashIDs))
	c.InputTokens += int64(q.InputTokens)
	c.OutputTokens += int64(q.OutputTokens)
	c.LastArrival = q.Arrival
}

// Stats streams the trace at path once and summarises it.
func Stats(path string, opt Options) (TraceStats, error) {
	r, err := Open(path, opt)
	if err != nil {
		return TraceStats{}, err
	}
	defer r.Close()
	return StatsOf(r)
}

// StatsOf reads r to the end and summarises what it yields: a file or a
// generated trace.
func StatsOf(r *Reader) (TraceStats, error) {
	var (
		c   Counts
		req Request
	)
	d := NewDict()
	for {
		err := r.Next(&req)
		if err != nil && err != io.EOF {
			return TraceStats{Requests: int(c.Requests), BlockAccesses: c.BlockAccesses, InputTokens: c.InputTokens,
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
	return TraceStats{Requests: int(c.Requests), BlockAccesses: c.BlockAccesses, DistinctBlocks: d.Len(),
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, Duration: time.Duration(c.LastArrival),
		Skipped: r.Skipped()}, nil
}
