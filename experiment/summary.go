package experiment

import (
	"kvsim/core"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
)

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// quantiles summarises h in ms; nil (null in summary.json) when it is
// empty, since no request completing is not a latency of 0.
func quantiles(h *core.Hist) *results.Quantiles {
	if h.Count() == 0 {
		return nil
	}
	return &results.Quantiles{Mean: h.Mean() / 1e6, P50: ms(h.Quantile(0.50)), P90: ms(h.Quantile(0.90)),
		P99: ms(h.Quantile(0.99)), Max: ms(h.Max())}
}

// sloCheck decides whether a request met the scenario's [slo]: TTFT <=
// ttft_ms and TPOT <= tpot_ms, each only where set; a request without a
// TPOT (fewer than 2 output tokens) passes that half, a rejected one
// misses. Limits are compared in ns.
type sloCheck struct {
	on         bool
	ttft, tpot float64 // ns; 0: not set
}

// sloCount is one policy's tally.
type sloCount struct{ met, total int64 }

func newSLOCheck(s scenario.SLO) sloCheck {
	return sloCheck{on: s.Set(), ttft: s.TTFTms * 1e6, tpot: s.TPOTms * 1e6}
}

// add counts r (tpot as results.TPOT gives it) into c.
func (k sloCheck) add(c *sloCount, r *core.Record, tpot int64) {
	if !k.on {
		return
	}
	c.total++
	if r.Rejected {
		return
	}
	if k.ttft > 0 && float64(r.TTFT()) > k.ttft {
		return
	}
	if k.tpot > 0 && tpot >= 0 && float64(tpot) > k.tpot {
		return
	}
	c.met++
}

// summarize turns the policies' runs into summary.json's content (less
// run_id, run and sweep, which Run adds).
func summarize(sc *scenario.Scenario, runs []policyRun) *results.Summary {
	m := sc.Model
	sum := &results.Summary{Scenario: sc.Name, Description: sc.Describe(), Overrides: sc.Sets, Seed: sc.Seed,
		Model: results.Model{Layers: m.Layers, KVHeads: m.KVHeads, HeadDim: m.HeadDim, DType: m.DType,
			BlockTokens: m.BlockTokens, BytesPerToken: m.BytesPerToken(), BytesPerBlock: m.BytesPerBlock()}}
	for _, t := range sc.Tiers {
		cost := float64(t.Capacity) / 1e9 * t.CostPerGB
		tier := results.Tier{Name: t.Name, Kind: t.Kind, CapacityBytes: t.Capacity,
			Bandwidth: t.Bandwidth, LatencyNs: t.Latency, CostPerGB: t.CostPerGB, CostUSD: cost}
		if t.Scope == scenario.ScopeCluster {
			tier.Scope = t.Scope
		}
		sum.Tiers = append(sum.Tiers, tier)
		sum.CostUSD += cost
	}
	sum.Trace = runs[0].trace
	if sc.SLO.Set() {
		sum.SLO = &results.SLO{TTFTms: sc.SLO.TTFTms, TPOTms: sc.SLO.TPOTms}
	}
	perTier := func(xs []int64) map[string]int64 {
		out := map[string]int64{}
		for i, x := range xs {
			out[sc.Tiers[i].Name] = x
		}
		return out
	}
	for i, r := range runs {
		p, st := sc.Policies[i], r.res.Stats
		pol := results.Policy{Name: p.Name, Eviction: p.Eviction, Requests: st.Requests, Rejected: st.Rejected,
			BlockAccesses: st.BlockAccesses, Hits: perTier(st.Hits), Misses: st.Misses,
			RecomputedTokens: st.RecomputedTokens, TTFTms: quantiles(&r.res.TTFT), QueueMs: quantiles(&r.res.Queue),
			DepWaits: st.DepWaits, RecomputeCuts: st.RecomputeCuts, BytesMoved: map[string]int64{}, Links: map[string]results.Link{},
			BytesByPurpose: map[string]int64{"load": r.res.MovedByKind[core.Load], "demote": r.res.MovedByKind[core.Demote],
				"write_through": r.res.MovedByKind[core.WriteThrough], "prefetch": r.res.MovedByKind[core.PrefetchMove]},
			Evictions: perTier(st.Evictions), Demotions: perTier(st.Demotions), Promotions: perTier(st.Promotions),
			Drops: perTier(st.Drops), PeakUsedBytes: perTier(st.PeakUsed), SimulatedSeconds: float64(r.res.End) / 1e9}
		pol.TPOTms, pol.E2Ems, pol.LoadWaitMs = quantiles(&r.res.TPOT), quantiles(&r.res.E2E), quantiles(&r.res.LoadWait)
		pol.Preemptions = st.Preemptions
		if r.res.End > 0 {
			pol.OutputTokensPerS = float64(r.res.OutputTokens) / (float64(r.res.End) / 1e9)
		}
		if sum.SLO != nil && r.slo.total > 0 {
			a := float64(r.slo.met) / float64(r.slo.total)
			pol.SLOAttainment = &a
		}
		pol.HitRatio, pol.BlockHitRatio = HitRatios(&st)
		pipe := func(bytes, transfers, busy int64) results.Link {
			u := 0.0
			if r.res.End > 0 {
				u = float64(busy) / float64(r.res.End)
			}
			return results.Link{Bytes: bytes, Transfers: transfers, Utilization: u}
		}
		for _, l := range r.res.Links {
			pol.BytesMoved[l.Name] = l.Bytes
			pol.Links[l.Name] = pipe(l.Bytes, l.Transfers, l.BusyNs)
		}
		for _, d := range r.res.Devices {
			if pol.SharedTiers == nil {
				pol.SharedTiers = map[string]results.Link{}
			}
			pol.SharedTiers[d.Name] = pipe(d.Bytes, d.Transfers, d.BusyNs)
		}
		pol.Sessions = r.sessions
		if r.cluster != nil {
			pol.Instances, pol.Router = instances(sc, r.cluster)
			pol.Routing = routing(r.cluster)
			pol.NICs, pol.Pool = nics(r.cluster, r.res.End), poolStats(sc, r.cluster, r.res)
		}
		pol.Ledger = ledger(sc, r.res)
		sum.Policies = append(sum.Policies, pol)
		if r.series != nil {
			sum.Series = append(sum.Series, timeSeries(p.Name, sc, r.series))
		}
	}
	return sum
}

func timeSeries(name string, sc *scenario.Scenario, s *sim.Series) results.TimeSeries {
	ts := results.TimeSeries{Policy: name, IntervalS: float64(s.Interval) / 1e9,
		TierUsed: map[string][]float64{}, LinkUtil: map[string][]float64{}, Queued: s.Queued, Running: s.Running}
	for _, t := range s.Times {
		ts.TimesS = append(ts.TimesS, float64(t)/1e9)
	}
	for i, u := range s.TierUsed {
		ts.TierUsed[sc.Tiers[i].Name] = u
	}
	for i, u := range s.LinkUtil {
		ts.LinkUtil[s.Pipes[i]] = u
	}
	ts.PrefillTokens, ts.DecodeSeqs, ts.Preemptions = s.PrefillTokens, s.DecodeSeqs, s.Preemptions
	return ts
}

// HitRatios are a run's prefix hits (in any tier) and blocks resident
// anywhere, each over its block accesses; 0 without accesses.
func HitRatios(st *core.Stats) (hit, block float64) {
	if st.BlockAccesses == 0 {
		return 0, 0
	}
	var hits int64
	for _, h := range st.Hits {
		hits += h
	}
	return float64(hits) / float64(st.BlockAccesses), float64(st.BlockHits) / float64(st.BlockAccesses)
}
