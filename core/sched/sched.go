// Package sched is the batched engine's step scheduler, shared by the
// simulator (sim, which times each step in virtual time) and the live
// real-hardware body (hw/live, which waits each step out on the wall
// clock): which requests run in a step, which prefill chunk each computes,
// when a decode needs a new KV page and whom that preempts. Only the
// timing of a step differs between the two bodies; every decision is made
// here, so the same completions in the same order give the same decisions.
//
// It follows vLLM v1's scheduler (vllm/v1/core/sched/scheduler.py): each
// step serves the running sequences in the order they started (a decode
// takes one token of the budget, a partly prefilled prompt its next chunk),
// then prompts whose KV is all in HBM, first come first served, until
// max_num_batched_tokens is spent. At a step's end every decode has one
// more token and every prompt whose last chunk ran has its first token. A
// request whose loads are still landing waits beside the batch.
//
// sched imports core only. It never reads a clock: its body passes now.
package sched

import "kvsim/core"

// DefaultMaxBatchedTokens is the token budget of a step when the
// configuration leaves it 0 (vLLM's default for online serving).
const DefaultMaxBatchedTokens = 8192

// StepBatch is what one step of the batched engine does.
type StepBatch struct {
	PrefillTokens int     // prompt (or recomputed) tokens computed this step, all chunks
	PrefillSeqs   int     // sequences with a prefill chunk
	DecodeSeqs    int     // sequences generating one token
	ContextTokens int64   // KV tokens attention reads (each sequence's context before its new tokens)
	AttnPairs     float64 // sum over new tokens of the tokens each attends to (itself included)
}

// StepModel is the time of one step.
type StepModel interface {
	StepNs(b *StepBatch) float64 // ns
}

// State is where a request slot stands in the engine.
type State uint8

const (
	Idle      State = iota // not issued (or finished)
	Loading                // Prefill issued, loads still landing
	Ready                  // in the ready queue
	Prefill                // running, prompt chunks left
	Decode                 // running, generating
	Preempted              // lost its HBM; waits for the core to issue Prefill again
	Done                   // produced its last token with its prefill
)

// Seq is the engine's state of one request slot.
type Seq struct {
	State  State
	Left   int   // prefill tokens still to compute
	Chunk  int   // tokens this step computes for it (0: not in the step, or a decode)
	Ctx    int64 // tokens whose KV it holds: attention context of its next token
	Gen    int   // output tokens produced so far; survives a preemption
	Target int   // output tokens to produce
	Room   int   // generated tokens the KV pages the core holds cover
	Resume int   // generated tokens this prefill recomputes (resumed after a preemption)
	Issued int64 // Prefill issued
	Ready  int64 // loads landed
	First  int64 // its first prefill chunk started (-1: not yet)
	LoadNs int64 // time its loads took (Host.TakeLoadNs)
}

// Host is what the scheduler asks its body about a request's loads.
type Host interface {
	// Loading reports whether request id's loads are still on their way;
	// the body then calls Loaded once the last one has landed.
	Loading(id core.ReqID) bool
	// TakeLoadNs is the time id's loads of this admission took (0 when it
	// had none), forgotten once taken: the next admission starts afresh.
	TakeLoadNs(id core.ReqID) int64
}

// Scheduler is the step scheduler of one engine. Not safe for concurrent
// use: the goroutine that owns the core owns it too.
type Scheduler struct {
	c      *core.Core
	h      Host
	model  StepModel
	budget int
	bt     int // tokens per KV page
	seqs   []Seq
	run    []core.ReqID // running sequences, in the order they started
	ready  []core.ReqID // prompts whose KV is in HBM, from rh on, in order
	rh     int
	batch  []core.ReqID // the step under way
	busy   bool
	b      StepBatch // the step under way
	tmp    StepBatch // scratch for estimates
	start  int64     // when the step under way started
	toFill int64     // prefill tokens issued, not computed yet
	// preempted: building the current step preempted someone.
	preempted bool
}

// New builds a scheduler with a step budget (0: DefaultMaxBatchedTokens)
// and the engine's KV page in tokens. Attach gives it its core.
func New(h Host, m StepModel, budget, pageTokens int) *Scheduler {
	if budget <= 0 {
		budget = DefaultMaxBatchedTokens
	}
	return &Scheduler{h: h, model: m, budget: budget, bt: max(pageTokens, 1)}
}

// Attach gives the scheduler the core it calls (Grow, Started,
// PrefillDone, DecodeDone, HoldForResume).
func (s *Scheduler) Attach(c *core.Core) { s.c = c }

// Budget is the tokens one step computes at most.
func (s *Scheduler) Budget() int { return s.budget }

// Model is the step model estimates use.
func (s *Scheduler) Model() StepModel { return s.model }

func (s *Scheduler) seq(id core.ReqID) *Seq {
	for int(id) >= len(s.seqs) {
		s.seqs = append(s.seqs, Seq{})
	}
	return &s.seqs[id]
}

// Seq is request slot id's state (a copy; zero for a slot never seen).
func (s *Scheduler) Seq(id core.ReqID) Seq {
	if int(id) < len(s.seqs) {
		return s.seqs[id]
	}
	return Seq{}
}

// Busy says a step is under way (between Next and Done).
func (s *Scheduler) Busy() bool { return s.busy }

// Running is the running set in the order its requests started (read only,
// valid until the next call).
func (s *Scheduler) Running() []core.ReqID { return s.run }

// ReadyLen is the prompts waiting to start, their KV in HBM.
func (s *Scheduler) ReadyLen() int { return len(s.ready) - s.rh }

// Batch is the requests of the step under way (read only).
func (s *Scheduler) Batch() []core.ReqID { return s.batch }

// StepPreempted says that building the step under way preempted a request.
func (s *Scheduler) StepPreempted() bool { return s.preempted }

// PendingPrefillTokens is the prefill tokens (with a resumed request's
// generated ones) issued and not yet computed; a step's chunks count once
// the step ends.
func (s *Scheduler) PendingPrefillTokens() int64 { return s.toFill }

// Prefill takes the core's Prefill: a resumed request also recomputes the
// tokens it had generated. It joins the ready queue once its loads landed.
func (s *Scheduler) Prefill(now int64, id core.ReqID, cached, compute int) {
	q := s.seq(id)
	if q.State != Preempted {
		*q = Seq{}
	}
	q.Resume = q.Gen
	q.Left = compute + q.Gen
	s.toFill += int64(q.Left)
	q.Ctx = int64(cached)
	q.Chunk = 0
	q.Issued, q.First, q.LoadNs = now, -1, 0
	if s.h.Loading(id) {
		q.State = Loading
		return
	}
	s.toReady(now, id, q)
}

// Loaded is told that request id's loads landed. Loads may also land
// before the core issues the request's Prefill (it waits for blocks other
// requests produce): then Prefill finds nothing pending.
func (s *Scheduler) Loaded(now int64, id core.ReqID) {
	if int(id) < len(s.seqs) && s.seqs[id].State == Loading {
		s.toReady(now, id, &s.seqs[id])
	}
}

func (s *Scheduler) toReady(now int64, id core.ReqID, q *Seq) {
	q.LoadNs = s.h.TakeLoadNs(id)
	q.State, q.Ready = Ready, now
	s.ready = append(s.ready, id)
}

// Decode takes the core's Decode, issued from PrefillDone: the prefill
// produced a token already, so a request wanting no more is done at once.
func (s *Scheduler) Decode(id core.ReqID, tokens int) {
	q := &s.seqs[id]
	q.Target = tokens
	if q.Gen >= tokens {
		q.State = Done // Done reports it: the core is not re-entered from a command
		return
	}
	q.State = Decode
}

// Preempt marks a victim of Grow (the core's Preempted): it leaves the
// running set at the next compaction and keeps its generated tokens for
// the recompute, whose KV pages the core reserves when it admits the
// request again.
func (s *Scheduler) Preempt(id core.ReqID) {
	q := s.seq(id)
	q.State, q.Chunk = Preempted, 0
	q.Room = (q.Gen + s.bt - 1) / s.bt * s.bt
	s.c.HoldForResume(id, q.Gen)
	s.preempted = true
}

// Next builds the next step at now if the GPU is idle and anything can
// run, and returns it (valid until the next call); the body times it and
// calls Done when it ends. ok is false when no step starts.
func (s *Scheduler) Next(now int64) (b *StepBatch, ok bool) {
	for {
		if s.busy || (len(s.run) == 0 && s.rh == len(s.ready)) {
			return nil, false
		}
		if s.build(now) {
			s.busy = true
			return &s.b, true
		}
		if !s.preempted { // as vLLM, schedule again at once after a preemption: the ready prompts go then
			return nil, false
		}
	}
}

// build fills the step's batch; false if it is empty.
func (s *Scheduler) build(now int64) bool {
	c := s.c
	s.start = now
	// Decodes whose token needs a new page get it first; a Grow may preempt
	// any running request, this one included. One whose Grow waits for HBM
	// still draining sits this step out (schedule skips it) and asks again
	// at the next step, or the next event if the GPU idles.
	s.preempted = false
	for _, id := range s.run {
		q := &s.seqs[id]
		if q.State == Decode && q.Gen > q.Room {
			if g := q.Gen; c.Grow(now, id, g) {
				s.seqs[id].Room = (g + s.bt - 1) / s.bt * s.bt // the core may have grown s.seqs meanwhile
			}
		}
	}
	if s.preempted {
		s.compact()
	}
	b := &s.b
	*b = StepBatch{}
	budget := s.budget
	s.batch = s.batch[:0]
	for _, id := range s.run {
		if budget == 0 {
			break
		}
		s.schedule(id, &s.seqs[id], b, &budget)
	}
	// As in vLLM v1, a step that preempted starts no new prompt.
	for budget > 0 && s.rh < len(s.ready) && !s.preempted {
		id := s.ready[s.rh]
		s.rh++
		q := &s.seqs[id]
		if q.State != Ready {
			continue // cannot happen: only decoding requests are preempted
		}
		q.State = Prefill
		s.run = append(s.run, id)
		c.Started(id)
		s.schedule(id, q, b, &budget)
	}
	if s.rh == len(s.ready) {
		s.ready, s.rh = s.ready[:0], 0
	}
	return len(s.batch) > 0
}

// schedule adds sequence id to the step under way, within budget.
func (s *Scheduler) schedule(id core.ReqID, q *Seq, b *StepBatch, budget *int) {
	switch q.State {
	case Decode:
		if q.Gen > q.Room {
			return // its Grow waits for draining HBM
		}
		b.DecodeSeqs++
		b.ContextTokens += q.Ctx
		b.AttnPairs += float64(q.Ctx + 1)
		q.Chunk = 0
		*budget--
	case Prefill:
		n := min(q.Left, *budget)
		if n == 0 {
			return
		}
		if q.First < 0 {
			q.First = s.start
		}
		q.Chunk = n
		b.PrefillTokens += n
		b.PrefillSeqs++
		b.ContextTokens += q.Ctx
		fn := float64(n)
		b.AttnPairs += fn*float64(q.Ctx) + fn*(fn+1)/2
		*budget -= n
	default:
		return
	}
	s.batch = append(s.batch, id)
}

// compact drops from the running set what is no longer running.
func (s *Scheduler) compact() {
	k := 0
	for _, id := range s.run {
		if st := s.seqs[id].State; st == Prefill || st == Decode {
			s.run[k] = id
			k++
		}
	}
	s.run = s.run[:k]
}

// Done ends the step under way at now: decodes gain a token, prompts
// whose last chunk ran produce their first token (Core.PrefillDone), and
// requests with all their tokens finish (Core.DecodeDone).
func (s *Scheduler) Done(now int64) {
	s.busy = false
	c := s.c
	done := false
	for _, id := range s.batch {
		q := &s.seqs[id]
		switch q.State {
		case Decode:
			q.Ctx++
			if q.Gen++; q.Gen >= q.Target {
				*q = Seq{}
				done = true
				c.DecodeDone(now, id)
			}
		case Prefill:
			s.toFill -= int64(q.Chunk)
			q.Left -= q.Chunk
			q.Ctx += int64(q.Chunk)
			q.Chunk = 0
			if q.Left > 0 {
				continue
			}
			q.Gen++
			q.State = Decode
			t := core.Timing{LoadNs: q.LoadNs, ComputeNs: now - q.First, LoadWaitNs: q.Ready - q.Issued, ResumeTokens: q.Resume}
			c.PrefillDone(now, id, t) // issues Decode, which may find it done
			if q = &s.seqs[id]; q.State == Done {
				*q = Seq{}
				done = true
				c.DecodeDone(now, id)
			}
		}
	}
	if done {
		s.compact()
	}
}

// ComputeNs is the time a lone prompt of n tokens after c cached ones
// takes: its chunks, one step each (the core's cost model). toNs rounds a
// step's time to integer ns as the body does.
func (s *Scheduler) ComputeNs(c, n int, toNs func(float64) int64) int64 {
	return s.ComputeBeside(c, n, 0, 0, toNs)
}

// ComputeBeside is ComputeNs in steps that also carry dseqs decoding
// sequences holding dctx tokens of context (each takes one token of the
// budget and reads its context every step).
func (s *Scheduler) ComputeBeside(c, n, dseqs int, dctx int64, toNs func(float64) int64) int64 {
	var t int64 // each step rounds to ns, as a run's steps do
	ctx := int64(c)
	room := max(s.budget-dseqs, 1)
	for n > 0 {
		k := min(n, room)
		fk := float64(k)
		s.tmp = StepBatch{PrefillTokens: k, PrefillSeqs: 1, DecodeSeqs: dseqs, ContextTokens: ctx + dctx,
			AttnPairs: fk*float64(ctx) + fk*(fk+1)/2 + float64(dctx) + float64(dseqs)}
		t = core.AddTime(t, toNs(s.model.StepNs(&s.tmp)))
		ctx += int64(k)
		dctx += int64(dseqs)
		n -= k
	}
	return t
}

// Decoding counts the sequences generating now and the context they hold.
func (s *Scheduler) Decoding() (n int, ctx int64) {
	for _, id := range s.run {
		if q := &s.seqs[id]; q.State == Decode {
			n++
			ctx += q.Ctx
		}
	}
	return n, ctx
}
