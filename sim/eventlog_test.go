package sim

import (
	"bytes"
	"io"
	"runtime"
	"testing"

	"kvsim/core"
	"kvsim/trace"
	"kvsim/workload"
)

// eventsTrace is a generated trace served comfortably by
// eventsConfig: loads, demotions and steps, no endless queue.
func eventsTrace(tb testing.TB, n int) []byte {
	tb.Helper()
	g := trace.DefaultGenConfig()
	g.Requests, g.RatePerSec = n, 2
	var buf bytes.Buffer
	if err := trace.Generate(&buf, g); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// eventsConfig is conversationConfig on the batched engine with a small
// HBM, so that blocks move both ways.
func eventsConfig() Config {
	cfg := conversationConfig("lru")
	cfg.Core.Tiers[0].Capacity = 4 << 30
	cfg.GPU = GPUSpec{Engine: EngineBatched, PrefillTokensPerSec: 200_000, DecodeTokensPerSec: 50}
	return cfg
}

func readAll(tb testing.TB, data []byte) (reqs []core.Request, accesses int64) {
	tb.Helper()
	src := workload.NewSource(trace.NewReader(bytes.NewReader(data), "gen", trace.Options{}), trace.NewDict())
	for {
		var q core.Request
		if err := src.Next(&q); err == io.EOF {
			return reqs, accesses
		} else if err != nil {
			tb.Fatal(err)
		}
		reqs = append(reqs, q)
		accesses += int64(len(q.Blocks))
	}
}

// passAllocs warms a simulator up over reqs (two passes) and returns the
// allocations of a third pass; log, if set, records every event.
func passAllocs(t *testing.T, reqs []core.Request, log *EventLog) uint64 {
	t.Helper()
	s, err := New(eventsConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.SetEventLog(log)
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
	return m1.Mallocs - m0.Mallocs
}

// TestEventLogAllocs: recording allocates once per chunk of events, never
// per event, beside what the same warmed-up run without a log allocates
// (whatever the engine itself does); with the log off the hooks are nil
// checks. It also
// checks that a run of loads and demotions records every kind of event.
func TestEventLogAllocs(t *testing.T) {
	reqs, accesses := readAll(t, eventsTrace(t, 300))
	s, err := New(eventsConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l := NewEventLog(0)
	s.SetEventLog(l)
	if _, err := s.Run(&offsetSource{reqs: reqs}); err != nil {
		t.Fatal(err)
	}
	var seen [evKinds]int
	for _, e := range l.Events() {
		seen[e.Kind]++
	}
	for _, k := range []EvKind{EvArrive, EvAdmit, EvMove, EvHop, EvLand, EvDrop, EvPrefill, EvBreakEven, EvStep, EvInStep, EvFirstToken, EvDone, EvHit, EvRef} {
		if seen[k] == 0 {
			t.Errorf("no event of kind %d in %d events", k, l.Len())
		}
	}
	if seen[EvArrive] != len(reqs) || seen[EvDone] != len(reqs) {
		t.Errorf("%d arrivals, %d done for %d requests", seen[EvArrive], seen[EvDone], len(reqs))
	}

	off := passAllocs(t, reqs, nil)
	on := passAllocs(t, reqs, NewEventLog(1<<24))
	// A pass fills a few chunks; the slice of chunks grows too now and then.
	chunks := 2 * uint64(l.Len()/EventChunk+2)
	t.Logf("third pass: %d allocations without a log, %d with one recording %d events in %d chunks (%d accesses)", off, on, l.Len(), chunks, accesses)
	if on > off+chunks {
		t.Errorf("recording %d events allocated %d times more than no log (chunks: %d)", l.Len(), on-off, chunks)
	}
}

// TestEventLogCap: past its cap a log counts events and keeps none, and
// the run's results do not change.
func TestEventLogCap(t *testing.T) {
	reqs, _ := readAll(t, eventsTrace(t, 100))
	run := func(l *EventLog) *Result {
		s, err := New(eventsConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.SetEventLog(l)
		res, err := s.Run(&offsetSource{reqs: reqs})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	full, capped := NewEventLog(0), NewEventLog(50)
	a, b, c := run(nil), run(full), run(capped)
	if capped.Len() != 50 || capped.Dropped != int64(full.Len())-50 {
		t.Errorf("capped: %d kept, %d dropped; the whole log has %d", capped.Len(), capped.Dropped, full.Len())
	}
	fe, ce := full.Events(), capped.Events()
	for i := range ce {
		if ce[i] != fe[i] {
			t.Fatalf("event %d differs under the cap", i)
		}
	}
	if a.End != b.End || a.End != c.End || a.TTFT.Count() != b.TTFT.Count() || a.Stats.Hits[1] != b.Stats.Hits[1] {
		t.Errorf("the log changed the run: end %d %d %d", a.End, b.End, c.End)
	}
}

// BenchmarkTraceEvents replays a generated trace on the batched engine,
// without an event log (off) and with one (on). off is the hot path every
// run takes: compare it with the same benchmark before the log existed.
func BenchmarkTraceEvents(b *testing.B) {
	reqs, accesses := readAll(b, eventsTrace(b, 2000))
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				s, err := New(eventsConfig(), nil)
				if err != nil {
					b.Fatal(err)
				}
				if on {
					s.SetEventLog(NewEventLog(1 << 24))
				}
				if _, err := s.Run(&offsetSource{reqs: reqs}); err != nil {
					b.Fatal(err)
				}
				n += accesses
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "accesses/s")
		})
	}
}
