package experiment

import (
	"context"
	"io"
	"slices"

	"kvsim/core"
	"kvsim/scenario"
)

// The plan's footprint pre-pass: before any simulation, one pass over the
// trace finds the bytes of its distinct blocks, the capacity past which
// every capacity's miss-ratio curve is flat (a tier that large holds every
// block the trace names, so it never has to make room). A tier at that
// capacity or more never evicts, and a tier that never evicts decides
// nothing in the run (the same-run rule, plan.go's sameRun, read here
// before simulating rather than from a run): the grid points with more of
// it are repeats of the point at the first capacity reaching the
// footprint.

// TraceFootprint is the bytes of the distinct blocks sc's trace names, as
// a run reads it (limit, injection), each at the largest size a request
// gives it (a prompt's last block may be partial): no tier ever holds more.
func TraceFootprint(ctx context.Context, sc *scenario.Scenario, skipBad bool, limit int) (int64, error) {
	opt := TraceOptions(sc, skipBad, limit)
	rd, err := OpenTrace(ctx, sc, opt)
	if err != nil {
		return 0, TraceError(sc, err)
	}
	defer rd.Close()
	src, err := RequestSource(sc, rd, opt)
	if err != nil {
		return 0, err
	}
	cc := SimConfig(sc, sc.Policies[0], nil).Core
	bt, bpt := cc.BlockTokens, cc.BytesPerToken
	var size []int64 // by dense block id
	var r core.Request
	for n := 0; ; n++ {
		if n&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		err := src.Next(&r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, TraceError(sc, err)
		}
		for i, b := range r.Blocks {
			if int(b) >= len(size) {
				size = slices.Grow(size, int(b)+1-len(size))[:int(b)+1]
			}
			tok := bt
			if rest := r.InputTokens - i*bt; rest < bt {
				tok = max(rest, 1) // core.Core's size of a block, fixed when first seen
			}
			size[b] = max(size[b], int64(tok)*bpt)
		}
	}
	var f int64
	for _, s := range size {
		f += s
	}
	return f, nil
}

// footprintDims are the varied tiers whose capacity the footprint can
// bound: not HBM (the engine schedules by its free space), no watermark
// or offline policy there (policy.Batcher evicts by the used share before
// the tier is full), not held to a life while rated (its life depends on
// its capacity), and no [cluster] (a pool's share, instances' tiers). The
// same conditions as the same-run rule's, known before simulating.
func (p *Plan) footprintDims(slo SLOTarget) []int {
	if p.Base.Cluster.Instances > 0 {
		return nil
	}
	var ds []int
	for d, dim := range p.Dims {
		ti := slices.IndexFunc(p.Base.Tiers, func(t scenario.Tier) bool { return t.Name == dim.Tier })
		t := p.Base.Tiers[ti]
		if ti <= 0 || t.Kind == "hbm" || (slo.LifeYears > 0 && (t.DWPD > 0 || t.TBW > 0)) {
			continue
		}
		ok := true
		for j := range p.Base.Policies {
			ok = ok && !p.batcher(0, j, ti)
		}
		if ok {
			ds = append(ds, d)
		}
	}
	return ds
}

// footprintReps maps every point to the point whose run it repeats by the
// footprint fp (itself when none): in each dim of ds, a capacity past the
// first one at or above fp is brought down to that one.
func (p *Plan) footprintReps(ds []int, fp int64) []int {
	n := len(p.Points)
	rep := make([]int, n)
	for k := range rep {
		rep[k] = k
	}
	for _, d := range ds {
		ti := slices.IndexFunc(p.Base.Tiers, func(t scenario.Tier) bool { return t.Name == p.Dims[d].Tier })
		stride := 1
		for _, e := range p.Dims[d+1:] {
			stride *= len(e.Values)
		}
		first := -1 // the first value index whose capacity holds the footprint
		for k := range p.Points {
			if c := p.Index[k][d]; p.Points[k].Tiers[ti].Capacity >= fp && (first < 0 || c < first) {
				first = c
			}
		}
		if first < 0 {
			continue
		}
		for k := range rep {
			if c := p.Index[rep[k]][d]; c > first {
				rep[k] -= (c - first) * stride
			}
		}
	}
	return rep
}
