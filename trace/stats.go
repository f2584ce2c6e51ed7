package trace

// Counts are what every consumer of a request stream counts (the run's
// summary, a trace's profile); Add them request by request.
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
