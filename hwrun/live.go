package hwrun

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"kvsim/core"
	"kvsim/experiment"
	"kvsim/hw/live"
	"kvsim/report"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/validate"
)

// liveLanes is how many moves of each tier pair run at once: a link's
// lanes (a remote store's connections, an SSD's queue) where the scenario
// joins the pair, else the fewer of the two tiers' widest links.
func liveLanes(sc *scenario.Scenario) [][]int {
	n := len(sc.Tiers)
	at := make([]int, n)
	out := make([][]int, n)
	for i := range out {
		out[i] = make([]int, n)
	}
	for _, l := range sc.Links {
		ln := max(l.Lanes, 1)
		out[l.From][l.To], out[l.To][l.From] = ln, ln
		at[l.From], at[l.To] = max(at[l.From], ln), max(at[l.To], ln)
	}
	for f := range n {
		for t := range n {
			if f != t && out[f][t] == 0 {
				out[f][t] = max(min(at[f], at[t]), 1)
			}
		}
	}
	return out
}

// predictConfig is cfg for the simulator's prediction of a live replay:
// the same core, engine and step model, the links' bandwidths turned to
// model bytes (a real block of scale x the model's moves in the time a
// model block takes at bandwidth / scale). The simple engine is run as
// the batched one on both sides (its rates mapped to a step model).
func predictConfig(cfg sim.Config, scale float64) sim.Config {
	p := cfg
	p.Tee = nil
	p.Links = append([]sim.LinkSpec(nil), cfg.Links...)
	for i := range p.Links {
		p.Links[i].Bandwidth /= scale
		if p.Links[i].ReverseBandwidth > 0 {
			p.Links[i].ReverseBandwidth /= scale
		}
	}
	if len(cfg.SharedBandwidth) > 0 {
		p.SharedBandwidth = append([]float64(nil), cfg.SharedBandwidth...)
		for i := range p.SharedBandwidth {
			p.SharedBandwidth[i] /= scale
		}
	}
	p.GPU.Engine = sim.EngineBatched
	return p
}

// lagMs summarises h (ns) in ms.
func lagMs(h *core.Hist) results.LagMs {
	return results.LagMs{P50: float64(h.Quantile(0.5)) / 1e6, P99: float64(h.Quantile(0.99)) / 1e6, Max: float64(h.Max()) / 1e6}
}

// liveRequest is one request's [measured, predicted] figures in ms.
type liveRequest struct {
	Seq         int64           `json:"seq"`
	ArrivalMs   float64         `json:"arrival_ms"`
	TTFTMs      [2]validate.Num `json:"ttft_ms"`
	TPOTMs      [2]validate.Num `json:"tpot_ms"`
	E2EMs       [2]validate.Num `json:"e2e_ms"`
	LoadWaitMs  [2]validate.Num `json:"load_wait_ms"`
	Preemptions [2]int          `json:"preemptions"`
}

// liveCompare is replay.json's live.compare.
type liveCompare struct {
	TTFT     validate.Metric `json:"ttft"`
	TPOT     validate.Metric `json:"tpot"`
	E2E      validate.Metric `json:"e2e"`
	LoadWait validate.Metric `json:"load_wait"`
}

func msOf(ns int64) float64 { return float64(ns) / 1e6 }

// compareLive pairs the live run's records with the simulator's by trace
// position.
func compareLive(meas []core.Record, pred map[int64]core.Record) (liveCompare, []liveRequest, *validate.Result) {
	var v [4][2][]float64 // metric, measured/predicted
	nan := validate.Num(math.NaN())
	var per []liveRequest
	vr := &validate.Result{Kind: "kvsim-replay", Scenario: "", Records: validate.Source{Format: "live replay"}}
	for i := range meas {
		m := &meas[i]
		p, ok := pred[m.Seq]
		if m.Rejected || !ok || p.Rejected {
			continue
		}
		q := liveRequest{Seq: m.Seq, ArrivalMs: msOf(m.Arrival), TPOTMs: [2]validate.Num{nan, nan},
			Preemptions: [2]int{m.Preemptions, p.Preemptions}}
		pairs := [4][2]float64{
			{msOf(m.TTFT()), msOf(p.TTFT())},
			{math.NaN(), math.NaN()},
			{msOf(m.Done - m.Arrival), msOf(p.Done - p.Arrival)},
			{msOf(m.LoadWaitNs), msOf(p.LoadWaitNs)},
		}
		if m.OutputTokens >= 2 {
			pairs[1] = [2]float64{msOf(results.TPOT(m.FirstToken, m.Done, m.OutputTokens)), msOf(results.TPOT(p.FirstToken, p.Done, p.OutputTokens))}
		}
		for k, pr := range pairs {
			if math.IsNaN(pr[0]) {
				continue
			}
			v[k][0], v[k][1] = append(v[k][0], pr[0]), append(v[k][1], pr[1])
		}
		q.TTFTMs = [2]validate.Num{validate.Num(pairs[0][0]), validate.Num(pairs[0][1])}
		q.TPOTMs = [2]validate.Num{validate.Num(pairs[1][0]), validate.Num(pairs[1][1])}
		q.E2EMs = [2]validate.Num{validate.Num(pairs[2][0]), validate.Num(pairs[2][1])}
		q.LoadWaitMs = [2]validate.Num{validate.Num(pairs[3][0]), validate.Num(pairs[3][1])}
		per = append(per, q)
		vr.PerRequest = append(vr.PerRequest, validate.Request{ID: fmt.Sprint(m.Seq), ArrivalMs: q.ArrivalMs, InputTokens: m.InputTokens,
			OutputTokens: m.OutputTokens, TTFTMs: q.TTFTMs, TPOTMs: q.TPOTMs, E2EMs: q.E2EMs})
	}
	c := liveCompare{TTFT: validate.Compare(v[0][0], v[0][1]), TPOT: validate.Compare(v[1][0], v[1][1]),
		E2E: validate.Compare(v[2][0], v[2][1]), LoadWait: validate.Compare(v[3][0], v[3][1])}
	vr.TTFT, vr.TPOT, vr.E2E = c.TTFT, c.TPOT, c.E2E
	vr.Records.Requests = len(per)
	return c, per, vr
}

// withoutErrors blanks a metric's error figures (a replay that could not
// keep up with its clock measured its own lag, not the model's error).
func withoutErrors(m *validate.Metric) {
	nan := validate.Num(math.NaN())
	m.MeanErrorPct, m.MAPEPct, m.BiasPct, m.KS = nan, nan, nan, nan
}

// disturbed counts the requests whose arrival the loop took up late by
// more than 5% of their measured TTFT (or 1 ms, if more): a late arrival
// delays the moves its admission orders by as much, so for the others
// the clock's slack is within 5% of what is measured. A replay keeps up
// when at most 1% of its requests are disturbed.
func disturbed(recs []core.Record, lag map[int64]int64) (n int, keptUp bool) {
	total := 0
	for i := range recs {
		r := &recs[i]
		if r.Rejected {
			continue
		}
		total++
		if l := lag[r.Seq]; l > max(1_000_000, r.TTFT()/20) {
			n++
		}
	}
	return n, n*100 <= total
}

// writeLiveRequests writes the live run's requests.csv into dir (the
// columns of kvsim run's), refusing to replace a file kvsim did not write.
func writeLiveRequests(dir, policy string, tiers []string, recs []core.Record) error {
	path := filepath.Join(dir, "requests.csv")
	if ok, _ := results.Replaceable(path, results.IsRequests); !ok {
		return fmt.Errorf("replay: %s exists and is not a requests.csv kvsim wrote; it will not be replaced: move it or give another --dir", path)
	}
	f, err := os.CreateTemp(dir, ".requests-live-*.csv")
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	part := f.Name()
	defer os.Remove(part)
	var line []byte
	for i := range recs {
		r := &recs[i]
		q := results.Request{Policy: policy, Seq: r.Seq, ArrivalNs: r.Arrival, QueueNs: r.QueueNs(), DepWaitNs: r.DepWaitNs(),
			LoadNs: r.LoadNs, ComputeNs: r.ComputeNs, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Blocks: r.Blocks,
			HitBlocks: r.HitBlocks, BlockHits: r.BlockHits, RecomputedTokens: r.RecomputedTokens, Rejected: r.Rejected,
			TPOTNs: results.NoTPOT, LoadWaitNs: r.LoadWaitNs, Preemptions: r.Preemptions}
		if !r.Rejected {
			q.TTFTNs, q.DoneNs, q.E2ENs = r.TTFT(), r.Done, r.Done-r.Arrival
			q.TPOTNs = results.TPOT(r.FirstToken, r.Done, r.OutputTokens)
		}
		line = results.AppendRequest(line[:0], &q)
		if _, err := f.Write(line); err != nil {
			f.Close()
			return fmt.Errorf("replay: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return results.WriteRequests(path, tiers, []string{part})
}

// liveReport fills rep.Live from a live run and the simulator's
// prediction of it.
func liveReport(rep *results.Replay, lr *live.Result, pred map[int64]core.Record, speedup float64, notes []string) (*validate.Result, error) {
	c, per, vr := compareLive(lr.Records, pred)
	arr := lagMs(&lr.ArrivalLag)
	dist, ok := disturbed(lr.Records, lr.Lag)
	if !ok {
		for _, m := range []*validate.Metric{&c.TTFT, &c.TPOT, &c.E2E, &c.LoadWait} {
			withoutErrors(m)
		}
		withoutErrors(&vr.TTFT)
		withoutErrors(&vr.TPOT)
		withoutErrors(&vr.E2E)
		notes = append(notes, fmt.Sprintf("the replay could not keep up with its clock: %d of %d requests arrived late by more than 5%% of their TTFT (or 1 ms); no error figure is reported: lower --speedup or --limit, or free the machine", dist, len(lr.Records)))
	}
	cb, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	pb, err := json.Marshal(per)
	if err != nil {
		return nil, err
	}
	rep.Live = &results.ReplayLive{Speedup: speedup, Steps: lr.Steps, KeptUp: ok, Disturbed: dist, ArrivalLagMs: arr,
		StepLagMs: lagMs(&lr.StepLag), Compare: cb, PerRequest: pb, Notes: notes}
	return vr, nil
}

// prediction is the simulator's run of the scenario a live replay runs.
type prediction struct {
	bySeq map[int64]core.Record
	recs  []core.Record
	res   *sim.Result
}

// predictLive runs the simulator on the scenario and trace of a live
// replay, before the replay: a trace the simulator refuses (times past
// its range, out of order) is refused before any real work or wait.
func (o ReplayOptions) predictLive(ctx context.Context, sc *scenario.Scenario, cfg sim.Config, scale float64) (*prediction, error) {
	p := &prediction{bySeq: map[int64]core.Record{}}
	ps, err := sim.New(predictConfig(cfg, scale), func(r *core.Record) {
		c := *r
		c.HitBlocks = nil
		p.bySeq[r.Seq] = c
		p.recs = append(p.recs, c)
	})
	if err != nil {
		return nil, experiment.BadInputf("%s: %v", sc.Path, err)
	}
	topt := experiment.TraceOptions(sc, false, o.Limit)
	rd, err := experiment.OpenTrace(ctx, sc, topt)
	if err != nil {
		return nil, experiment.TraceError(sc, err)
	}
	defer rd.Close()
	src, err := experiment.RequestSource(sc, rd, topt)
	if err != nil {
		return nil, err
	}
	if p.res, err = ps.Run(experiment.Interruptible(ctx, src, nil)); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, experiment.TraceError(sc, err)
	}
	return p, nil
}

// finishLive fills rep.Live with the live run and its prediction side by
// side, and writes the measured requests.csv and replay.html (CDFs of
// both) into o.Dir.
func (o ReplayOptions) finishLive(sc *scenario.Scenario, pi int, cfg sim.Config, pr *prediction, rep *results.Replay, lr *live.Result) error {
	var notes []string
	if cfg.GPU.Engine != sim.EngineBatched {
		notes = append(notes, "the scenario's simple engine runs as the batched engine on both sides (its rates mapped to a step model)")
	}
	vr, err := liveReport(rep, lr, pr.bySeq, sc.Workload.Speedup, notes)
	if err != nil {
		return err
	}
	rep.Live.Measured = policySummary(sc, pi, lr.Stats, lr.Records, lr.WallNs)
	rep.Live.Predicted = policySummary(sc, pi, pr.res.Stats, pr.recs, pr.res.End)
	if err := writeLiveRequests(o.Dir, sc.Policies[pi].Name, experiment.TierNames(sc), lr.Records); err != nil {
		return err
	}
	vr.Scenario, vr.Policy = sc.Name, sc.Policies[pi].Name
	vr.Records.Path = "live replay on this machine"
	vr.Title = fmt.Sprintf("kvsim replay --real: %s, policy %s, measured on this machine against the simulator", sc.Name, sc.Policies[pi].Name)
	page, err := vr.Page(report.Options{})
	if err != nil {
		return fmt.Errorf("replay: replay.html: %w", err)
	}
	path := filepath.Join(o.Dir, "replay.html")
	if ok, _ := results.Replaceable(path, results.IsPage); !ok {
		return fmt.Errorf("replay: %s exists and is not a page kvsim wrote; it will not be replaced: move it or give another --dir", path)
	}
	if err := results.WriteFileAtomic(path, page); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

// policySummary is a run of sc's policy pi in summary.json's policy form,
// from the core's totals and its finished requests' records; end is the
// time of the run's last event.
func policySummary(sc *scenario.Scenario, pi int, st core.Stats, recs []core.Record, end int64) *results.Policy {
	p := sc.Policies[pi]
	perTier := func(v []int64) map[string]int64 {
		out := map[string]int64{}
		for i, x := range v {
			if i < len(sc.Tiers) {
				out[sc.Tiers[i].Name] = x
			}
		}
		return out
	}
	var ttft, queue, tpot, e2e, wait core.Hist
	var out int64
	for i := range recs {
		r := &recs[i]
		if r.Rejected {
			continue
		}
		ttft.Add(r.TTFT())
		queue.Add(r.QueueNs())
		e2e.Add(r.Done - r.Arrival)
		wait.Add(r.LoadWaitNs)
		if r.OutputTokens >= 2 {
			tpot.Add(results.TPOT(r.FirstToken, r.Done, r.OutputTokens))
		}
		out += int64(r.OutputTokens)
	}
	q := func(h *core.Hist) *results.Quantiles {
		if h.Count() == 0 {
			return nil
		}
		ms := func(ns int64) float64 { return float64(ns) / 1e6 }
		return &results.Quantiles{Mean: h.Mean() / 1e6, P50: ms(h.Quantile(0.5)), P90: ms(h.Quantile(0.9)), P99: ms(h.Quantile(0.99)), Max: ms(h.Max())}
	}
	pol := &results.Policy{Name: p.Name, Eviction: p.Eviction, Requests: st.Requests, Rejected: st.Rejected,
		BlockAccesses: st.BlockAccesses, Hits: perTier(st.Hits), Misses: st.Misses, RecomputedTokens: st.RecomputedTokens,
		TTFTms: q(&ttft), QueueMs: q(&queue), TPOTms: q(&tpot), E2Ems: q(&e2e), LoadWaitMs: q(&wait),
		Preemptions: st.Preemptions, DepWaits: st.DepWaits, RecomputeCuts: st.RecomputeCuts,
		Evictions: perTier(st.Evictions), Demotions: perTier(st.Demotions), Promotions: perTier(st.Promotions),
		Drops: perTier(st.Drops), PeakUsedBytes: perTier(st.PeakUsed), SimulatedSeconds: float64(end) / 1e9}
	if end > 0 {
		pol.OutputTokensPerS = float64(out) / (float64(end) / 1e9)
	}
	pol.HitRatio, pol.BlockHitRatio = experiment.HitRatios(&st)
	return pol
}
