package sim

import (
	"errors"
	"fmt"

	"kvsim/core"
)

// The batched engine runs the GPU in steps, as vLLM v1's scheduler does:
// each step serves the running sequences in the order they started (a
// decode takes one token of the budget, a partly prefilled prompt its next
// chunk), then prompts whose KV is all in HBM, first come first served,
// until max_num_batched_tokens is spent. A step's duration comes from the
// step model; at its end every decode has one more token and every prompt
// whose last chunk ran has its first token. A request whose loads are still
// landing waits beside the batch; the GPU idles only when nothing is ready.

// DefaultMaxBatchedTokens is the token budget of a step when the
// configuration leaves it 0 (vLLM's default for online serving).
const DefaultMaxBatchedTokens = 8192

// seq states
const (
	seqIdle      uint8 = iota // not issued (or finished)
	seqLoading                // Prefill issued, loads still landing
	seqReady                  // in the ready queue
	seqPrefill                // running, prompt chunks left
	seqDecode                 // running, generating
	seqPreempted              // lost its HBM; waits for the core to issue Prefill again
	seqDone                   // produced its last token with its prefill
)

// seq is the engine's state of one request slot.
type seq struct {
	state  uint8
	left   int   // prefill tokens still to compute
	chunk  int   // tokens this step computes for it (0: not in the step, or a decode)
	ctx    int64 // tokens whose KV it holds: attention context of its next token
	gen    int   // output tokens produced so far; survives a preemption
	target int   // output tokens to produce
	room   int   // generated tokens the KV blocks the core holds cover (kept: given back on resume)
	resume int   // generated tokens this prefill recomputes (resumed after a preemption)
	issued int64 // Prefill issued
	ready  int64 // loads landed
	first  int64 // its first prefill chunk started (-1: not yet)
	loadNs int64
}

type engine struct {
	s      *Sim
	model  StepModel
	budget int
	bt     int // tokens per KV block
	seqs   []seq
	run    []core.ReqID // running sequences, in the order they started
	ready  []core.ReqID // prompts whose KV is in HBM, from rh on, in order
	rh     int
	batch  []core.ReqID // the step under way
	busy   bool
	b      StepBatch // the step under way
	tmp    StepBatch // scratch for estimates
	start  int64     // when it started

	steps, prefillSum, decodeSum int64                           // totals over the run (samples, Result)
	busyNs                       int64                           // steps' time in all (Result)
	onStep                       func(start int64, b *StepBatch) // tests: each step as it starts
	preempted                    bool                            // the step being built preempted someone
}

func newEngine(s *Sim) (*engine, error) {
	g := &s.cfg.GPU
	if g.MaxBatchedTokens < 0 {
		return nil, fmt.Errorf("sim: max batched tokens %d < 0", g.MaxBatchedTokens)
	}
	if g.Step == nil && (!(g.PrefillTokensPerSec > 0) || !(g.DecodeTokensPerSec > 0)) {
		return nil, errors.New("sim: batched engine needs a step model or gpu rates > 0")
	}
	m := g.stepModel()
	if err := checkStep(m); err != nil {
		return nil, err
	}
	b := g.MaxBatchedTokens
	if b == 0 {
		b = DefaultMaxBatchedTokens
	}
	pt := s.cfg.Core.PageTokens
	if pt <= 0 {
		pt = s.cfg.Core.BlockTokens // as core.Core.PageTokens
	}
	return &engine{s: s, model: m, budget: b, bt: pt}, nil
}

func (e *engine) seq(id core.ReqID) *seq {
	for int(id) >= len(e.seqs) {
		e.seqs = append(e.seqs, seq{})
	}
	return &e.seqs[id]
}

// prefill takes the core's Prefill: a resumed request also recomputes the
// tokens it had generated. It joins the ready queue once its loads landed.
func (e *engine) prefill(now int64, id core.ReqID, cached, compute int) {
	q := e.seq(id)
	if q.state != seqPreempted {
		*q = seq{}
	}
	q.resume = q.gen
	q.left = compute + q.gen
	e.s.toFill += int64(q.left)
	q.ctx = int64(cached)
	q.chunk = 0
	q.issued, q.first, q.loadNs = now, -1, 0
	if e.loading(now, id) {
		q.state = seqLoading
		return
	}
	e.toReady(now, id, q)
}

// loading says whether request id's loads are still on the links; if so,
// loaded is called when the last one lands.
func (e *engine) loading(_ int64, id core.ReqID) bool {
	return e.s.timing(id).pending > 0
}

// loaded is told that request id's loads landed. Loads may also land
// before the core issues the request's Prefill (it waits for blocks other
// requests produce): then Prefill finds nothing pending.
func (e *engine) loaded(now int64, id core.ReqID) {
	if int(id) < len(e.seqs) && e.seqs[id].state == seqLoading {
		e.toReady(now, id, &e.seqs[id])
	}
}

// toReady moves request id, whose loads landed, to the ready queue.
func (e *engine) toReady(now int64, id core.ReqID, q *seq) {
	if rt := &e.s.req[id]; rt.loads {
		q.loadNs = rt.loadDone - rt.loadStart
		rt.loads = false // the next admission's loads start afresh
	}
	q.state, q.ready = seqReady, now
	e.ready = append(e.ready, id)
}

// decode takes the core's Decode, issued from PrefillDone: the prefill
// produced a token already, so a request wanting no more is done at once.
func (e *engine) decode(now int64, id core.ReqID, tokens int) {
	q := &e.seqs[id]
	q.target = tokens
	if q.gen >= tokens {
		q.state = seqDone // stepDone reports it: the core is not re-entered from a command
		return
	}
	q.state = seqDecode
}

// preemptedBy marks a victim of Grow: it leaves the running set at the next
// compaction and keeps its generated tokens for the recompute, whose KV
// pages the core reserves when it admits the request again.
func (e *engine) preemptedBy(id core.ReqID) {
	q := e.seq(id)
	q.state, q.chunk = seqPreempted, 0
	q.room = (q.gen + e.bt - 1) / e.bt * e.bt
	e.s.core.HoldForResume(id, q.gen)
	e.preempted = true
}

// kick starts a step if the GPU is idle and anything can run.
func (e *engine) kick(now int64) {
	if e.busy || (len(e.run) == 0 && e.rh == len(e.ready)) {
		return
	}
	c := e.s.core
	e.start = now
	// Decodes whose token needs a new block get it first; a Grow may preempt
	// any running request, this one included. One whose Grow waits for HBM
	// still draining sits this step out (schedule skips it) and asks again
	// at the next step, or the next event if the GPU idles.
	e.preempted = false
	for _, id := range e.run {
		q := &e.seqs[id]
		if q.state == seqDecode && q.gen > q.room {
			if g := q.gen; c.Grow(now, id, g) {
				e.seqs[id].room = (g + e.bt - 1) / e.bt * e.bt // the core may have grown e.seqs meanwhile
			}
		}
	}
	if e.preempted {
		e.compact()
	}
	// The batch lives in the engine: a pointer to a local, passed to the
	// step model's interface method, would escape to the heap every step.
	b := &e.b
	*b = StepBatch{}
	budget := e.budget
	e.batch = e.batch[:0]
	for _, id := range e.run {
		if budget == 0 {
			break
		}
		q := &e.seqs[id]
		e.schedule(id, q, b, &budget)
	}
	// As in vLLM v1, a step that preempted starts no new prompt.
	for budget > 0 && e.rh < len(e.ready) && !e.preempted {
		id := e.ready[e.rh]
		e.rh++
		q := &e.seqs[id]
		if q.state != seqReady {
			continue // cannot happen: only decoding requests are preempted
		}
		q.state = seqPrefill
		e.run = append(e.run, id)
		c.Started(id)
		e.schedule(id, q, b, &budget)
	}
	if e.rh == len(e.ready) {
		e.ready, e.rh = e.ready[:0], 0
	}
	if len(e.batch) == 0 {
		if e.preempted { // as vLLM, schedule again at once: the ready prompts go then
			e.kick(now)
		}
		return
	}
	ns := toNs(e.model.StepNs(b))
	end := now + ns
	if ns > core.MaxTime || end > core.MaxTime {
		e.s.fail(e.batch[0], e.limitKey(b), "a step starting at %s (%d prefill tokens, %d decodes) ends past the simulated-time limit of %s",
			span(float64(now)), b.PrefillTokens, b.DecodeSeqs, limit)
		return
	}
	e.busy = true
	if e.onStep != nil {
		e.onStep(now, b)
	}
	if e.s.ev != nil {
		e.s.logStep(now, end, b, e.batch, e.seqs)
	}
	e.steps++
	e.busyNs += ns
	e.prefillSum += int64(b.PrefillTokens)
	e.decodeSum += int64(b.DecodeSeqs)
	e.s.heap.push(end, evStep, -1)
}

// schedule adds sequence id to the step under way, within budget.
func (e *engine) schedule(id core.ReqID, q *seq, b *StepBatch, budget *int) {
	switch q.state {
	case seqDecode:
		if q.gen > q.room {
			return // its Grow waits for draining HBM
		}
		b.DecodeSeqs++
		b.ContextTokens += q.ctx
		b.AttnPairs += float64(q.ctx + 1)
		q.chunk = 0
		*budget--
	case seqPrefill:
		n := min(q.left, *budget)
		if n == 0 {
			return
		}
		if q.first < 0 {
			q.first = e.start
		}
		q.chunk = n
		b.PrefillTokens += n
		b.PrefillSeqs++
		b.ContextTokens += q.ctx
		fn := float64(n)
		b.AttnPairs += fn*float64(q.ctx) + fn*(fn+1)/2
		*budget -= n
	default:
		return
	}
	e.batch = append(e.batch, id)
}

// compact drops from the running set what is no longer running.
func (e *engine) compact() {
	k := 0
	for _, id := range e.run {
		if st := e.seqs[id].state; st == seqPrefill || st == seqDecode {
			e.run[k] = id
			k++
		}
	}
	e.run = e.run[:k]
}

// stepDone ends the step under way: decodes gain a token, prompts whose
// last chunk ran produce their first token.
func (e *engine) stepDone(now int64) {
	e.busy = false
	c := e.s.core
	done := false
	for _, id := range e.batch {
		q := &e.seqs[id]
		switch q.state {
		case seqDecode:
			q.ctx++
			if q.gen++; q.gen >= q.target {
				*q = seq{}
				done = true
				c.DecodeDone(now, id)
			}
		case seqPrefill:
			e.s.toFill -= int64(q.chunk)
			q.left -= q.chunk
			q.ctx += int64(q.chunk)
			q.chunk = 0
			if q.left > 0 {
				continue
			}
			q.gen++
			q.state = seqDecode
			t := core.Timing{LoadNs: q.loadNs, ComputeNs: now - q.first, LoadWaitNs: q.ready - q.issued, ResumeTokens: q.resume}
			c.PrefillDone(now, id, t) // issues Decode, which may find it done
			if q = &e.seqs[id]; q.state == seqDone {
				*q = seq{}
				done = true
				c.DecodeDone(now, id)
			}
		}
	}
	if done {
		e.compact()
	}
}

// computeNs is the time a lone prompt of n tokens after c cached ones
// takes: its chunks, one step each (the core's cost model).
func (e *engine) computeNs(c, n int) int64 { return e.computeBeside(c, n, 0, 0) }

// computeBeside is computeNs in steps that also carry dseqs decoding
// sequences holding dctx tokens of context (each takes one token of the
// budget and reads its context every step).
func (e *engine) computeBeside(c, n, dseqs int, dctx int64) int64 {
	var t int64 // each step rounds to ns, as a run's steps do
	ctx := int64(c)
	room := max(e.budget-dseqs, 1)
	for n > 0 {
		k := min(n, room)
		fk := float64(k)
		e.tmp = StepBatch{PrefillTokens: k, PrefillSeqs: 1, DecodeSeqs: dseqs, ContextTokens: ctx + dctx,
			AttnPairs: fk*float64(ctx) + fk*(fk+1)/2 + float64(dctx) + float64(dseqs)}
		t = core.AddTime(t, toNs(e.model.StepNs(&e.tmp)))
		ctx += int64(k)
		dctx += int64(dseqs)
		n -= k
	}
	return t
}

// decoding counts the sequences generating now and the context they hold.
func (e *engine) decoding() (n int, ctx int64) {
	for _, id := range e.run {
		if q := &e.seqs[id]; q.state == seqDecode {
			n++
			ctx += q.ctx
		}
	}
	return n, ctx
}

// admissible checks that a request's steps alone stay representable: its
// first prefill chunk and the decode step of its last token.
func (e *engine) admissible(r *core.Request) error {
	n := min(max(r.InputTokens, 1), e.budget)
	fn := float64(n)
	e.tmp = StepBatch{PrefillTokens: n, PrefillSeqs: 1, AttnPairs: fn * (fn + 1) / 2}
	a := e.model.StepNs(&e.tmp)
	ctx := int64(r.InputTokens) + int64(r.OutputTokens)
	e.tmp = StepBatch{DecodeSeqs: 1, ContextTokens: ctx, AttnPairs: float64(ctx + 1)}
	if b := e.model.StepNs(&e.tmp); !(a < float64(core.MaxTime)) || !(b < float64(core.MaxTime)) {
		key := e.limitKey(&e.tmp)
		if !(a < float64(core.MaxTime)) {
			fn := float64(n)
			e.tmp = StepBatch{PrefillTokens: n, PrefillSeqs: 1, AttnPairs: fn * (fn + 1) / 2}
			key = e.limitKey(&e.tmp)
		}
		return &LimitError{Key: key, Line: r.Line, Msg: fmt.Sprintf(
			"request %d (%d input, %d output tokens): one step takes %s, past the simulated-time limit of %s",
			r.Seq, r.InputTokens, r.OutputTokens, span(max(a, b)), limit)}
	}
	return nil
}

// limitKey names the scenario key behind a step too long to simulate:
// under the old rates' mapping, the rate whose term dominates the step
// (users of such a scenario set those, not a step model).
func (e *engine) limitKey(b *StepBatch) string {
	if e.s.cfg.GPU.Step != nil {
		return "gpu.step_model"
	}
	m, ok := e.model.(LinearStep)
	if !ok {
		return "gpu.step_model"
	}
	key, big := "gpu.decode_tokens_per_s", m.C0 // one step of the old decode rate
	if t := m.CPrefill * float64(b.PrefillTokens); !(t <= big) {
		key, big = "gpu.prefill_tokens_per_s", t
	}
	if t := m.CAttn * b.AttnPairs; !(t <= big) {
		key = "gpu.attention_ns_per_token2"
	}
	return key
}
