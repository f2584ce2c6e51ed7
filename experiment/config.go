package experiment

import (
	"context"
	"errors"
	"fmt"

	"kvsim/core"
	"kvsim/policy"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// TraceOptions are the reader options a scenario asks for: skipBad and
// limit (when > 0) override the scenario's.
func TraceOptions(sc *scenario.Scenario, skipBad bool, limit int) trace.Options {
	o := trace.Options{BlockTokens: sc.Model.BlockTokens, SkipBadLines: sc.Workload.SkipBadLines || skipBad, Limit: sc.Workload.Limit,
		Speedup: sc.Workload.Speedup}
	if limit > 0 {
		o.Limit = limit
	}
	return o
}

// CoreConfig builds the hierarchy the core manages for one policy entry.
// future may be nil unless the policy is offline.
func CoreConfig(sc *scenario.Scenario, p scenario.Policy, future policy.Future) core.Config {
	cc := core.Config{BytesPerToken: sc.Model.BytesPerToken(), BlockTokens: sc.Model.BlockTokens, MaxRunning: sc.GPU.MaxSeqs,
		PageTokens: sc.GPU.PageTokens, HoldEvicted: sc.GPU.HBMFree != "evict"}
	cc.Strategy = p.Strategy // parsed and checked by scenario.Load
	for _, t := range sc.Tiers {
		cc.Tiers = append(cc.Tiers, core.Tier{Name: t.Name, Capacity: t.Capacity})
	}
	cc.NewPolicy = func(i int, capacity int64) (policy.Policy, error) {
		pol, err := policy.New(p.TierEviction(i), policy.Config{Capacity: capacity, Params: p.TierParams(i), Future: future})
		if err == nil && p.IdleRank != "" {
			return policy.IdleRank(pol)
		}
		return pol, err
	}
	return cc
}

// StepModel is the batched engine's step time for the scenario's GPU and
// model: a roofline from the presets and overrides, the linear model of
// the given coefficients, or nil for a scenario that gives only the rate
// engine's figures (the simulator then maps the rates: sim.LegacyStep).
func StepModel(sc *scenario.Scenario) sim.StepModel {
	g, m := sc.GPU, sc.Model
	switch {
	case g.StepModel == "roofline":
		return rooflineStep(g, m)
	case g.LegacyStep:
		return nil
	}
	return sim.LinearStep{C0: g.C0, CPrefill: g.CPrefill, CDecode: g.CDecode, CCtx: g.CCtx, CAttn: g.AttentionNsPerToken2}
}

// rooflineStep is the roofline of the instance's tp x dp GPUs together:
// FLOPs and bytes spread evenly over them. Each dp group reads its copy
// of the dense weights; the experts a step touches are read once.
func rooflineStep(g scenario.GPU, m scenario.Model) sim.RooflineStep {
	gpus := float64(g.TP)
	if g.DPs() > 1 {
		gpus *= float64(g.DPs())
	}
	perPair := 4 * float64(m.Heads) * float64(m.HeadDim) // QK^T and PV of one layer
	r := sim.RooflineStep{PeakFLOPs: g.PeakTFLOPs * 1e12 * gpus, HBMBandwidth: g.HBMBandwidth * gpus,
		ComputeEff: g.ComputeEff, MemoryEff: g.MemoryEff, OverheadNs: float64(g.StepOverhead),
		Params: m.ActiveParams(), WeightBytes: m.WeightBytes(),
		AttnFLOPsPerPair: 4 * float64(m.FullLayers()) * float64(m.Heads) * float64(m.HeadDim),
		KVBytesPerToken:  float64(m.BytesPerToken())}
	if m.LocalLayers() > 0 {
		r.Window = float64(m.Window)
		r.LocalAttnFLOPsPerPair = perPair * float64(m.LocalLayers())
		r.LocalKVBytesPerToken = float64(m.LocalBytesPerToken())
	}
	if rep := g.KVReplicas(m); rep > 1 { // each GPU of a tp group reads its copy
		r.KVBytesPerToken *= float64(rep)
		r.LocalKVBytesPerToken *= float64(rep)
	}
	if m.Experts > 0 {
		r.WeightBytes = m.DenseParams() * float64(m.DTypeBytes()) * float64(g.DPs())
		r.Experts, r.ExpertsPerToken = float64(m.Experts), float64(m.ExpertsPerToken)
		r.MoELayers = float64(m.MoELayers())
		r.ExpertBytes = m.ExpertParams() * m.ExpertDTypeBytes()
	}
	if g.InterconnectBandwidth > 0 && g.GPUs() > 1 {
		r.Comm = sim.Collectives{TP: g.TP, DP: g.DPs(), EP: g.EPs(), Bandwidth: g.InterconnectBandwidth,
			LatencyNs: float64(g.InterconnectLatency), Layers: m.Layers, MoELayers: m.MoELayers(),
			TokenBytes: float64(m.Hidden) * float64(m.ActBytes()), ExpertsPerToken: float64(m.ExpertsPerToken)}
	}
	return r
}

// SimConfig is CoreConfig with the simulator's timing models.
func SimConfig(sc *scenario.Scenario, p scenario.Policy, future policy.Future) sim.Config {
	cfg := sim.Config{Core: CoreConfig(sc, p, future)}
	for _, l := range sc.Links {
		cfg.Links = append(cfg.Links, sim.LinkSpec{From: l.From, To: l.To, Bandwidth: l.Bandwidth,
			ReverseBandwidth: l.ReverseBandwidth, Latency: l.Latency, ReverseLatency: l.ReverseLatency, ReverseSet: true, Lanes: l.Lanes})
	}
	for i, t := range sc.Tiers {
		if t.Shared {
			if cfg.SharedBandwidth == nil {
				cfg.SharedBandwidth = make([]float64, len(sc.Tiers))
			}
			cfg.SharedBandwidth[i] = t.Bandwidth
		}
	}
	g := sc.GPU
	cfg.GPU = sim.GPUSpec{PrefillTokensPerSec: g.PrefillTokensPerSec, AttentionNsPerToken2: g.AttentionNsPerToken2,
		DecodeTokensPerSec: g.DecodeTokensPerSec, Layers: sc.Model.Layers, Serial: g.Load == "serial",
		Engine: sim.EngineSimple, MaxBatchedTokens: g.MaxBatchedTokens}
	if g.Engine == "batched" {
		cfg.GPU.Engine = sim.EngineBatched
		cfg.GPU.Step = StepModel(sc)
	}
	return cfg
}

// BuildFuture reads the whole trace once, for offline policies
// (policy.Offline).
func BuildFuture(ctx context.Context, sc *scenario.Scenario, opt trace.Options) (policy.Future, error) {
	r, err := OpenTrace(ctx, sc, opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	src, err := RequestSource(sc, r, opt)
	if err != nil {
		return nil, err
	}
	f, err := workload.BuildFuture(src)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// isTraceError tells bad trace input from other failures.
func isTraceError(err error) bool {
	var le *trace.LineError
	return errors.As(err, &le)
}

// TraceError says which scenario's trace a reading error comes from, and
// marks bad trace input as such (exit 2).
func TraceError(sc *scenario.Scenario, err error) error {
	if errors.Is(err, context.Canceled) { // interrupted, not bad input
		return err
	}
	if isTraceError(err) {
		return BadInput(err)
	}
	var le *sim.LimitError
	if errors.As(err, &le) { // a scenario value and the trace that cannot go together
		at := ""
		if le.Line > 0 {
			at = fmt.Sprintf(" (request at %s:%d)", sc.Workload.Trace, le.Line)
		}
		if le.Key == "timestamp" && le.Line > 0 {
			return BadInputf("%s:%d: timestamp: %s", sc.Workload.Trace, le.Line, le.Msg)
		}
		return BadInputf("%s: %s: %s%s", sc.Path, le.Key, le.Msg, at)
	}
	return BadInput(fmt.Errorf("%s: workload: %w", sc.Path, err))
}

// OpenTrace opens the scenario's trace in its format, through the binary
// trace cache (trace.OpenCached), or its synthetic one: generated as it is
// read, from the scenario's seed (ctx stops a long generation).
func OpenTrace(ctx context.Context, sc *scenario.Scenario, opt trace.Options) (*trace.Reader, error) {
	if g := sc.Workload.Gen; g != nil {
		return trace.Generated(ctx, *g, sc.Workload.Trace, opt), nil
	}
	opt.Format = sc.Workload.Format
	return trace.OpenCachedContext(ctx, sc.Workload.Trace, opt)
}
