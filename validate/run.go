package validate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"kvsim/core"
	"kvsim/experiment"
	"kvsim/policy"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/workload"
)

// Options say how Run replays the records.
type Options struct {
	// Policy names the [[policy]] entry to run; "" is the first. Without
	// prefix reuse the policy hardly matters, but its hbm eviction does
	// when HBM fills.
	Policy string
}

// predicted is what kvsim said of one request.
type predicted struct {
	firstToken, done int64
	preemptions      int
	rejected, seen   bool
}

// Run replays rs through sc's engine and hardware (sc's [workload] is not
// read: the records are the workload) and compares, request by request.
// Errors are experiment.InputError for bad input and ctx's error when
// interrupted.
func Run(ctx context.Context, sc *scenario.Scenario, rs *Records, o Options) (*Result, error) {
	if sc.Cluster.Instances > 0 {
		return nil, experiment.BadInputf("%s: [cluster]: validate replays one engine; give a scenario without [cluster]", sc.Path)
	}
	pi := 0
	if o.Policy != "" {
		if pi = sc.PolicyIndex(o.Policy); pi < 0 {
			return nil, experiment.BadInputf("--policy %q: %s has no [[policy]] of that name", o.Policy, sc.Path)
		}
	}
	p := sc.Policies[pi]
	reqs, err := requests(sc, rs)
	if err != nil {
		return nil, err
	}
	var fut policy.Future
	if p.Offline() {
		f, err := workload.BuildFuture(&sliceSource{reqs: reqs})
		if err != nil {
			return nil, err
		}
		fut = f
	}
	pred := make([]predicted, len(reqs))
	obs := func(r *core.Record) {
		if r.Seq >= 0 && r.Seq < int64(len(pred)) {
			pred[r.Seq] = predicted{firstToken: r.FirstToken - r.Arrival, done: r.Done - r.Arrival,
				preemptions: r.Preemptions, rejected: r.Rejected, seen: true}
		}
	}
	s, err := sim.New(experiment.SimConfig(sc, p, fut), obs)
	if err != nil {
		return nil, experiment.BadInputf("%s: policy %q: %v", sc.Path, p.Name, err)
	}
	res, err := s.Run(&sliceSource{ctx: ctx, reqs: reqs})
	if err != nil {
		var le *sim.LimitError
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return nil, err
		case errors.As(err, &le) && le.Line > 0:
			return nil, experiment.BadInputf("%s:%d: %s: %s (with %s)", rs.File, le.Line, le.Key, le.Msg, sc.Path)
		}
		return nil, experiment.BadInputf("%s: %v", sc.Path, err)
	}
	r := compare(rs, pred)
	r.Scenario, r.Policy = sc.Name, p.Name
	r.Preemptions = res.Stats.Preemptions
	r.Engine = Engines{Recorded: rs.Engine, Scenario: Engine{TP: sc.GPU.TP, MaxNumSeqs: sc.GPU.MaxSeqs, MaxNumBatchedTokens: sc.GPU.MaxBatchedTokens}}
	r.Warnings = append(append([]string{}, rs.Notes...), mismatches(rs, sc)...)
	if r.Rejected > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("kvsim rejected %d of %d requests (prompt and output larger than the hbm tier): left out of the comparison", r.Rejected, len(reqs)))
	}
	return r, nil
}

// mismatches names the engine settings the run recorded that the
// scenario does not share: reported, never fixed behind the user's back.
func mismatches(rs *Records, sc *scenario.Scenario) []string {
	e := rs.Engine
	if e == nil {
		return nil
	}
	var out []string
	for _, m := range []struct {
		key       string
		rec, scen int
	}{{"max_num_seqs", e.MaxNumSeqs, sc.GPU.MaxSeqs}, {"max_num_batched_tokens", e.MaxNumBatchedTokens, sc.GPU.MaxBatchedTokens}, {"tp", e.TP, sc.GPU.TP}, {"dp", e.DP, max(sc.GPU.DP, 1)}} {
		if m.rec != 0 && m.rec != m.scen {
			out = append(out, fmt.Sprintf("the run recorded %s = %d, the scenario %s has %d: the comparison is of different engines (set [gpu] %s = %d to match)",
				m.key, m.rec, sc.Path, m.scen, m.key, m.rec))
		}
	}
	return out
}

// requests turns the records into the simulator's requests: each gets
// blocks of its own (ceil(input / block_tokens) fresh ids), since the
// records carry no prompt content to share.
func requests(sc *scenario.Scenario, rs *Records) ([]core.Request, error) {
	bt := sc.Model.BlockTokens
	reqs := make([]core.Request, len(rs.Recs))
	var next int64
	for i, rec := range rs.Recs {
		nb := (rec.InputTokens + bt - 1) / bt
		if next+int64(nb) > math.MaxInt32 {
			return nil, experiment.BadInputf("%s:%d: more than %d blocks in all: too many for one run (raise [model] block_tokens)", rs.File, rec.Line, math.MaxInt32)
		}
		blocks := make([]core.Block, nb)
		for j := range blocks {
			blocks[j] = core.Block(next)
			next++
		}
		reqs[i] = core.Request{Seq: int64(i), Line: rec.Line, Arrival: rec.ArrivalNs,
			InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens, Blocks: blocks}
	}
	return reqs, nil
}

// sliceSource hands out prepared requests; with ctx set it stops once ctx
// is cancelled, checked every 4096 requests as a run does.
type sliceSource struct {
	ctx  context.Context
	reqs []core.Request
	i    int
}

func (s *sliceSource) Next(r *core.Request) error {
	if s.i >= len(s.reqs) {
		return io.EOF
	}
	if s.ctx != nil && s.i&4095 == 0 {
		if err := s.ctx.Err(); err != nil {
			return err
		}
	}
	*r = s.reqs[s.i]
	s.i++
	return nil
}
