package sim

import (
	"errors"
	"math"

	"kvsim/core/sched"
)

// Engine selects the GPU model.
type Engine uint8

const (
	// EngineSimple runs one prefill at a time at a token rate and decodes
	// each request beside it at a fixed per-request rate.
	EngineSimple Engine = iota
	// EngineBatched runs steps: each step decodes one token of every
	// running request and computes prefill chunks under a token budget.
	EngineBatched
)

func (e Engine) String() string {
	switch e {
	case EngineSimple:
		return "simple"
	case EngineBatched:
		return "batched"
	}
	return "engine?"
}

// StepBatch is what one step of the batched engine does (the scheduler's).
type StepBatch = sched.StepBatch

// StepModel is the time of one step.
type StepModel = sched.StepModel

// LinearStep is a fitted step-time profile: C0 + CPrefill x prefill tokens
// + CDecode x decode sequences + CCtx x context tokens read + CAttn x
// attention pairs. All in ns (per unit).
type LinearStep struct {
	C0       float64 // ns per step
	CPrefill float64 // ns per prefill token
	CDecode  float64 // ns per decode sequence
	CCtx     float64 // ns per context token read
	CAttn    float64 // ns per (new token, attended token) pair
}

// StepNs implements StepModel.
func (l LinearStep) StepNs(b *StepBatch) float64 {
	return l.C0 + l.CPrefill*float64(b.PrefillTokens) + l.CDecode*float64(b.DecodeSeqs) +
		l.CCtx*float64(b.ContextTokens) + l.CAttn*b.AttnPairs
}

// RooflineStep times a step as the slower of its compute and its memory
// traffic, plus a fixed overhead (kernel launches, scheduling, sampling).
type RooflineStep struct {
	PeakFLOPs        float64 // FLOP/s of the tp GPUs together (dense bf16)
	HBMBandwidth     float64 // bytes/s of the tp GPUs together
	ComputeEff       float64 // 0..1 share of PeakFLOPs reached
	MemoryEff        float64 // 0..1 share of HBMBandwidth reached
	OverheadNs       float64 // fixed per step
	Params           float64 // model parameters
	WeightBytes      float64 // bytes of weights read per step (Params x dtype bytes)
	AttnFLOPsPerPair float64 // 4 x layers x query heads x head dim
	KVBytesPerToken  float64

	// Local-attention layers (sliding window or chunked): a new token
	// attends to at most Window tokens, a sequence reads at most Window
	// tokens of their KV. Zero Window: none.
	Window                float64
	LocalAttnFLOPsPerPair float64
	LocalKVBytesPerToken  float64

	// Routed experts: the step reads the experts its tokens touch
	// (DistinctExperts) in each MoE layer, on top of WeightBytes (then the
	// dense part only). Zero Experts: a dense model.
	Experts         float64
	ExpertsPerToken float64
	MoELayers       float64
	ExpertBytes     float64 // one expert of one layer

	Comm Collectives // tensor and expert parallelism; zero: free
}

// StepNs implements StepModel: every new token costs 2 FLOPs per parameter
// plus attention over its context; the weights are read once per step and
// each sequence's KV once.
func (r RooflineStep) StepNs(b *StepBatch) float64 {
	tok := float64(b.PrefillTokens + b.DecodeSeqs)
	flops := 2*r.Params*tok + r.AttnFLOPsPerPair*b.AttnPairs
	bytes := r.WeightBytes + r.KVBytesPerToken*(float64(b.ContextTokens)+tok)
	if r.Window > 0 {
		flops += r.LocalAttnFLOPsPerPair * min(b.AttnPairs, r.Window*tok)
		seqs := float64(b.PrefillSeqs + b.DecodeSeqs)
		bytes += r.LocalKVBytesPerToken * (min(float64(b.ContextTokens), r.Window*seqs) + tok)
	}
	if r.Experts > 0 {
		bytes += r.MoELayers * DistinctExperts(r.Experts, r.ExpertsPerToken, tok) * r.ExpertBytes
	}
	ns := max(flops/(r.PeakFLOPs*r.ComputeEff), bytes/(r.HBMBandwidth*r.MemoryEff))*1e9 + r.OverheadNs
	if r.Comm.Bandwidth > 0 {
		ns += r.Comm.Ns(tok)
	}
	return ns
}

// LegacyStep maps the simple engine's rates onto a LinearStep, for
// scenarios that give only prefill_tokens_per_s / decode_tokens_per_s: a
// step costs one token of the old per-request decode rate (every running
// request gains a token per step, as it did at that rate when alone),
// each prefill token 1/prefill rate, and each attention pair what the old
// quadratic term charged.
func LegacyStep(prefillTokensPerSec, decodeTokensPerSec, attentionNsPerToken2 float64) LinearStep {
	return LinearStep{
		C0:       1e9 / decodeTokensPerSec,
		CPrefill: 1e9 / prefillTokensPerSec,
		CAttn:    attentionNsPerToken2,
	}
}

// StepModel is the batched engine's step model: g.Step, or the legacy
// mapping of the rates.
func (g *GPUSpec) StepModel() StepModel {
	if g.Step != nil {
		return g.Step
	}
	return LegacyStep(g.PrefillTokensPerSec, g.DecodeTokensPerSec, g.AttentionNsPerToken2)
}

// checkStep rejects step models whose times could be negative, NaN or
// infinite.
func checkStep(m StepModel) error {
	fin := func(v ...float64) bool {
		for _, x := range v {
			if !(x >= 0) || math.IsInf(x, 0) {
				return false
			}
		}
		return true
	}
	switch m := m.(type) {
	case LinearStep:
		if !fin(m.C0, m.CPrefill, m.CDecode, m.CCtx, m.CAttn) {
			return errors.New("sim: linear step coefficients must be finite and >= 0")
		}
	case *LinearStep:
		return checkStep(*m)
	case RooflineStep:
		if !(m.PeakFLOPs > 0) || !(m.HBMBandwidth > 0) || !(m.ComputeEff > 0) || !(m.MemoryEff > 0) ||
			!fin(m.PeakFLOPs, m.HBMBandwidth, m.ComputeEff, m.MemoryEff) {
			return errors.New("sim: roofline peak FLOP/s, HBM bandwidth and efficiencies must be finite and > 0")
		}
		if !fin(m.OverheadNs, m.Params, m.WeightBytes, m.AttnFLOPsPerPair, m.KVBytesPerToken) {
			return errors.New("sim: roofline overhead and model sizes must be finite and >= 0")
		}
		if !fin(m.Window, m.LocalAttnFLOPsPerPair, m.LocalKVBytesPerToken, m.Experts, m.ExpertsPerToken, m.MoELayers, m.ExpertBytes) ||
			m.ExpertsPerToken > m.Experts {
			return errors.New("sim: roofline window and expert figures must be finite and >= 0, experts per token at most experts")
		}
		if c := m.Comm; !fin(c.Bandwidth, c.LatencyNs, c.TokenBytes, c.ExpertsPerToken) || c.TP < 0 || c.DP < 0 || c.EP < 0 ||
			c.MoELayers > c.Layers {
			return errors.New("sim: collectives' figures must be finite and >= 0")
		}
	case *RooflineStep:
		return checkStep(*m)
	}
	return nil
}
