package sim

import (
	"io"
	"runtime"
	"testing"

	"kvsim/core"
	"kvsim/trace"
	"kvsim/workload"
)

// offsetSource replays requests held in memory, shifted in time.
type offsetSource struct {
	reqs []core.Request
	i    int
	dt   int64
}

func (s *offsetSource) Next(r *core.Request) error {
	if s.i >= len(s.reqs) {
		return io.EOF
	}
	q := s.reqs[s.i]
	s.i++
	r.Seq, r.Arrival, r.InputTokens, r.OutputTokens = q.Seq, q.Arrival+s.dt, q.InputTokens, q.OutputTokens
	r.Blocks = append(r.Blocks[:0], q.Blocks...)
	return nil
}

// TestSteadyStateAllocs: once per-block state has grown to cover the
// trace's blocks, replaying it again through the same simulator (core,
// policies, links, GPU model) allocates nothing per access.
func TestSteadyStateAllocs(t *testing.T) {
	r, err := trace.Open(needTrace(t), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := workload.NewSource(r, trace.NewDict())
	var reqs []core.Request
	var accesses int64
	for {
		var q core.Request
		if err := src.Next(&q); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, q)
		accesses += int64(len(q.Blocks))
	}
	r.Close()
	for _, c := range []struct {
		evict string
		eng   Engine
	}{{"lru", EngineSimple}, {"s3fifo", EngineSimple}, {"arc", EngineSimple}, {"lru", EngineBatched}} {
		evict := c.evict
		cfg := conversationConfig(evict)
		cfg.GPU.Engine = c.eng
		if c.eng == EngineBatched {
			evict += " batched"
		}
		s, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Two passes to warm up: per-request slices grow to the largest
		// request each slot ever holds.
		for range 2 {
			if _, err := s.Run(&offsetSource{reqs: reqs, dt: s.Now() + 1}); err != nil {
				t.Fatal(err)
			}
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := s.Run(&offsetSource{reqs: reqs, dt: s.Now() + 1}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		per := float64(m1.Mallocs-m0.Mallocs) / float64(accesses)
		t.Logf("%s: %d allocations over %d accesses in the third pass (%.5f per access)", evict, m1.Mallocs-m0.Mallocs, accesses, per)
		if per > 0.0002 {
			t.Errorf("%s: %.5f allocations per access in steady state", evict, per)
		}
	}
}
