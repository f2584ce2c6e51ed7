package sim

import (
	"kvsim/core"
	"kvsim/core/sched"
)

// The event log (kvsim run --trace-events) records what a run did, event by
// event, for kvsim explain. It is off unless SetEventLog installs one: every
// hook point is a nil check, so a run without it pays nothing measurable
// and allocates nothing more.

// EvKind is what an Event records.
type EvKind uint8

// Event kinds. The fields an event uses are listed beside it; unused ones
// are 0 (Seq and Block -1 where there is none).
const (
	EvArrive     EvKind = iota + 1 // Seq; A: input tokens, B: output tokens
	EvAdmit                        // Seq; A: arrival (so Time-A is the queue wait)
	EvMove                         // Seq (-1: background), Block, From, To, Aux: core.MoveKind; A: bytes
	EvHop                          // a hop's bytes start moving: Seq, Block, Aux: link; A: joined the link, B: had a lane and its latency passed
	EvLand                         // a move's last hop ended: Seq, Block, From, To, Aux: core.MoveKind
	EvDrop                         // a copy discarded: Block, From: its tier
	EvPrefill                      // Prefill issued: Seq; A: cached tokens, B: computed tokens
	EvBreakEven                    // at Prefill: Seq; A: tokens its loads bring into HBM, B: ns recomputing them would add
	EvStep                         // a step: A: its end, B: prefill tokens, Block: decoding sequences, Aux: prefill chunks (EvInStep follow)
	EvInStep                       // a prefill chunk in the step before: Seq; A: its tokens
	EvFirstToken                   // Seq
	EvDone                         // Seq; A: recomputed prompt tokens, B: preemptions
	EvHit                          // usable-prefix hits of a request's first admission: Seq, From: tier; A: blocks
	EvPreempt                      // Seq
	EvRef                          // at arrival, one per prompt block: Seq, Block, Aux: the tiers holding it then (bit t: tier t)
	evKinds
)

// Event is one record of the log.
type Event struct {
	Time     int64
	Seq      int64
	Block    int64
	A, B     int64
	Kind     EvKind
	From, To int8
	Aux      uint8
	// Inst is the instance that recorded it: a [cluster]'s instances
	// share one log (SetEventLogInstance); 0 in a single run. It fits in
	// the struct's padding.
	Inst uint16
}

// EventLog holds a run's events up to a cap: past it, events are counted
// in Dropped, not kept (the log then covers the run's start only). Events
// are kept in chunks, so that a long log is never copied to grow.
type EventLog struct {
	chunks  [][]Event
	n       int
	Max     int
	Dropped int64
	// LinkLatency is each link's latency (ns) by link index (an EvHop's
	// Aux), set by SetEventLog: what part of a hop's wait was latency.
	LinkLatency []int64
}

// EventChunk is the events of one chunk: recording allocates once per
// chunk, never per event.
const EventChunk = 1 << 14

// NewEventLog makes a log keeping at most max events (<= 0: 1<<20).
func NewEventLog(max int) *EventLog {
	if max <= 0 {
		max = 1 << 20
	}
	return &EventLog{Max: max}
}

// Len is the events kept.
func (l *EventLog) Len() int { return l.n }

// Chunks are the events kept, in order, chunk by chunk.
func (l *EventLog) Chunks() [][]Event { return l.chunks }

// Events copies the events kept into one slice.
func (l *EventLog) Events() []Event {
	all := make([]Event, 0, l.n)
	for _, c := range l.chunks {
		all = append(all, c...)
	}
	return all
}

func (l *EventLog) add(e Event) {
	if l.n >= l.Max {
		l.Dropped++
		return
	}
	k := len(l.chunks) - 1
	if k < 0 || len(l.chunks[k]) == cap(l.chunks[k]) {
		l.chunks = append(l.chunks, make([]Event, 0, min(EventChunk, l.Max-l.n)))
		k++
	}
	l.chunks[k] = append(l.chunks[k], e)
	l.n++
}

// SetEventLog installs l (nil: none) to record every event from now on.
func (s *Sim) SetEventLog(l *EventLog) { s.SetEventLogInstance(l, 0) }

// SetEventLogInstance installs l, shared with the other instances of a
// cluster, this Sim's events marked as instance inst's: one log and one
// cap, in the order the cluster ran them.
func (s *Sim) SetEventLogInstance(l *EventLog, inst int) {
	s.ev, s.evInst = l, uint16(inst)
	if l != nil {
		l.LinkLatency = l.LinkLatency[:0]
		for _, k := range s.links {
			l.LinkLatency = append(l.LinkLatency, k.latency)
		}
	}
}

// logEv records e as this Sim's.
func (s *Sim) logEv(e Event) {
	e.Inst = s.evInst
	s.ev.add(e)
}

// seqOf is the trace seq of live request id, or -1 for Background.
func (s *Sim) seqOf(id core.ReqID) int64 {
	if id < 0 {
		return -1
	}
	return s.core.Request(id).Seq
}

func (s *Sim) logArrive(r *core.Request) {
	s.logEv(Event{Time: s.now, Kind: EvArrive, Seq: r.Seq, Block: -1, A: int64(r.InputTokens), B: int64(r.OutputTokens)})
	for _, b := range r.Blocks {
		s.logEv(Event{Time: s.now, Kind: EvRef, Seq: r.Seq, Block: int64(b), Aux: s.core.Where(b)})
	}
}

func (s *Sim) logMove(now int64, req core.ReqID, b core.Block, bytes int64, from, to int, kind core.MoveKind) {
	s.logEv(Event{Time: now, Kind: EvMove, Seq: s.seqOf(req), Block: int64(b), From: int8(from), To: int8(to), Aux: uint8(kind), A: bytes})
}

func (s *Sim) logHop(now int64, l *link, x *xfer) {
	li := 0
	for i, k := range s.links {
		if k == l {
			li = i
			break
		}
	}
	s.logEv(Event{Time: now, Kind: EvHop, Seq: s.seqOf(x.req), Block: int64(x.block), From: int8(l.from), To: int8(l.to),
		Aux: uint8(li), A: x.enq, B: x.ready})
}

func (s *Sim) logLand(now int64, x *xfer) {
	s.logEv(Event{Time: now, Kind: EvLand, Seq: s.seqOf(x.req), Block: int64(x.block), From: int8(x.from), To: int8(x.to), Aux: uint8(x.kind)})
}

// logPrefill records a Prefill and its break-even: the tokens req's loads
// bring into HBM, and what computing them instead would add to its
// prefill in the same step model.
func (s *Sim) logPrefill(now int64, req core.ReqID, cached, compute int) {
	seq := s.seqOf(req)
	s.logEv(Event{Time: now, Kind: EvPrefill, Seq: seq, Block: -1, A: int64(cached), B: int64(compute)})
	rt := s.timing(req)
	if !rt.loads || rt.loadBytes == 0 {
		return
	}
	n := int(min(rt.loadBytes/s.cfg.Core.BytesPerToken, int64(cached)))
	extra := s.EstimateCompute(cached-n, compute+n) - s.EstimateCompute(cached, compute)
	s.logEv(Event{Time: now, Kind: EvBreakEven, Seq: seq, Block: -1, A: int64(n), B: extra})
}

// logStep records a step and its prefill chunks. Decode tokens are not
// listed, one per running request per step: a request decodes in every
// step from its first token to its done, unless preempted.
func (s *Sim) logStep(now, end int64, b *StepBatch, sch *sched.Scheduler) {
	s.logEv(Event{Time: now, Kind: EvStep, Seq: -1, Block: int64(b.DecodeSeqs), A: end, B: int64(b.PrefillTokens), Aux: uint8(min(b.PrefillSeqs, 255))})
	for _, id := range sch.Batch() {
		if n := sch.Seq(id).Chunk; n > 0 {
			s.logEv(Event{Time: now, Kind: EvInStep, Seq: s.seqOf(id), Block: -1, A: int64(n)})
		}
	}
}

// logRecord records a finished request's admission, first token, done and
// hits (from its record: their times are earlier than the event's).
func (s *Sim) logRecord(r *core.Record) {
	if r.Rejected {
		s.logEv(Event{Time: r.Done, Kind: EvDone, Seq: r.Seq, Block: -1, A: int64(r.RecomputedTokens), B: -1})
		return
	}
	s.logEv(Event{Time: r.Admitted, Kind: EvAdmit, Seq: r.Seq, Block: -1, A: r.Arrival})
	for t, n := range r.HitBlocks {
		if n > 0 {
			s.logEv(Event{Time: r.Admitted, Kind: EvHit, Seq: r.Seq, Block: -1, From: int8(t), A: n})
		}
	}
	s.logEv(Event{Time: r.FirstToken, Kind: EvFirstToken, Seq: r.Seq, Block: -1})
	s.logEv(Event{Time: r.Done, Kind: EvDone, Seq: r.Seq, Block: -1, A: int64(r.RecomputedTokens), B: int64(r.Preemptions)})
}
