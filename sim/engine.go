package sim

import (
	"errors"
	"fmt"

	"kvsim/core"
	"kvsim/core/sched"
)

// The batched engine runs the GPU in steps chosen by the step scheduler
// the live real-hardware body shares (core/sched: vLLM v1's order); the
// simulator only times each step with the step model, in virtual time.

// DefaultMaxBatchedTokens is the token budget of a step when the
// configuration leaves it 0 (vLLM's default for online serving).
const DefaultMaxBatchedTokens = sched.DefaultMaxBatchedTokens

type engine struct {
	s     *Sim
	model StepModel
	sch   *sched.Scheduler
	tmp   StepBatch // scratch for limits

	steps, prefillSum, decodeSum int64                           // totals over the run (samples, Result)
	busyNs                       int64                           // steps' time in all (Result)
	onStep                       func(start int64, b *StepBatch) // tests: each step as it starts
}

func newEngine(s *Sim) (*engine, error) {
	g := &s.cfg.GPU
	if g.MaxBatchedTokens < 0 {
		return nil, fmt.Errorf("sim: max batched tokens %d < 0", g.MaxBatchedTokens)
	}
	if g.Step == nil && (!(g.PrefillTokensPerSec > 0) || !(g.DecodeTokensPerSec > 0)) {
		return nil, errors.New("sim: batched engine needs a step model or gpu rates > 0")
	}
	m := g.StepModel()
	if err := checkStep(m); err != nil {
		return nil, err
	}
	pt := s.cfg.Core.PageTokens
	if pt <= 0 {
		pt = s.cfg.Core.BlockTokens // as core.Core.PageTokens
	}
	e := &engine{s: s, model: m}
	e.sch = sched.New(e, m, g.MaxBatchedTokens, pt)
	return e, nil
}

// Loading implements sched.Host: whether request id's loads are still on
// the links; if so, loadsLanded calls Loaded when the last one lands.
func (e *engine) Loading(id core.ReqID) bool { return e.s.timing(id).pending > 0 }

// TakeLoadNs implements sched.Host.
func (e *engine) TakeLoadNs(id core.ReqID) int64 {
	if rt := &e.s.req[id]; rt.loads {
		rt.loads = false // the next admission's loads start afresh
		return rt.loadDone - rt.loadStart
	}
	return 0
}

// kick starts a step if the GPU is idle and anything can run.
func (e *engine) kick(now int64) {
	b, ok := e.sch.Next(now)
	if !ok {
		return
	}
	ns := toNs(e.model.StepNs(b))
	end := now + ns
	if ns > core.MaxTime || end > core.MaxTime {
		e.s.fail(e.sch.Batch()[0], e.limitKey(b), "a step starting at %s (%d prefill tokens, %d decodes) ends past the simulated-time limit of %s",
			span(float64(now)), b.PrefillTokens, b.DecodeSeqs, limit)
		return
	}
	if e.onStep != nil {
		e.onStep(now, b)
	}
	if e.s.ev != nil {
		e.s.logStep(now, end, b, e.sch)
	}
	e.steps++
	e.busyNs += ns
	e.prefillSum += int64(b.PrefillTokens)
	e.decodeSum += int64(b.DecodeSeqs)
	e.s.heap.push(end, evStep, -1)
}

// computeNs is the time a lone prompt of n tokens after c cached ones
// takes: its chunks, one step each (the core's cost model).
func (e *engine) computeNs(c, n int) int64 { return e.sch.ComputeNs(c, n, toNs) }

// admissible checks that a request's steps alone stay representable: its
// first prefill chunk and the decode step of its last token.
func (e *engine) admissible(r *core.Request) error {
	n := min(max(r.InputTokens, 1), e.sch.Budget())
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
