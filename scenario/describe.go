package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// Describe is a short multi-line summary for reports.
func (s *Scenario) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %q", s.Name)
	if s.Path != "" {
		fmt.Fprintf(&b, " (%s)", s.Path)
	}
	fmt.Fprintf(&b, ", seed %d\n", s.Seed)
	m := s.Model
	b.WriteString("model: ")
	if m.Preset != "" {
		b.WriteString(m.Preset + ", ")
	}
	kv := m.DType
	if m.KVType() != m.DType {
		kv = m.DType + " weights, " + m.KVType() + " KV"
	}
	if m.KVLoraRank > 0 {
		fmt.Fprintf(&b, "%d layers x MLA latent %d + rope %d, %s: %s/token, %s per %d-token block",
			m.Layers, m.KVLoraRank, m.QKRopeDim, kv, FormatBytes(m.BytesPerToken()), FormatBytes(m.BytesPerBlock()), m.BlockTokens)
	} else {
		fmt.Fprintf(&b, "%d layers x %d kv heads x head_dim %d, %s: %s/token, %s per %d-token block",
			m.Layers, m.KVHeads, m.HeadDim, kv, FormatBytes(m.BytesPerToken()), FormatBytes(m.BytesPerBlock()), m.BlockTokens)
	}
	if m.LocalLayers() > 0 {
		fmt.Fprintf(&b, " (the %d full-attention layers; %d %s layers of window %d keep up to %s per request)",
			m.FullLayers(), m.LocalLayers(), m.LocalKind(), m.Window, FormatBytes(m.LocalBytesPerToken()*int64(m.Window)))
	}
	if m.Heads > 0 {
		fmt.Fprintf(&b, ", %d query heads", m.Heads)
	}
	if m.Params > 0 {
		fmt.Fprintf(&b, ", %.3g parameters", m.Params)
	}
	if m.Experts > 0 {
		fmt.Fprintf(&b, " (%.3g active: %d of %d experts per token", m.ActiveParams(), m.ExpertsPerToken, m.Experts)
		if m.SharedExperts > 0 {
			fmt.Fprintf(&b, " and %d shared", m.SharedExperts)
		}
		fmt.Fprintf(&b, " in %d layers", m.MoELayers())
		if m.ExpertDType != "" && m.ExpertDType != m.DType {
			fmt.Fprintf(&b, ", experts in %s", m.ExpertDType)
		}
		b.WriteByte(')')
	}
	b.WriteByte('\n')
	g := s.GPU
	fmt.Fprintf(&b, "gpu: %s engine", g.Engine)
	if g.Engine == "batched" {
		fmt.Fprintf(&b, " (%d tokens per step)", g.MaxBatchedTokens)
	}
	fmt.Fprintf(&b, ", %d running requests at most", g.MaxSeqs)
	if g.HBMFree == "evict" {
		b.WriteString(", evicted HBM free at once")
	}
	if g.Preset != "" || g.HBMCapacity > 0 || g.PeakTFLOPs > 0 || g.HBMBandwidth > 0 {
		b.WriteString(", ")
		if g.DPs() > 1 {
			fmt.Fprintf(&b, "%d x ", g.DPs())
		}
		if g.TP > 1 {
			fmt.Fprintf(&b, "%d x ", g.TP)
		}
		if g.Preset != "" {
			b.WriteString(g.Preset + " ")
		}
		var figs []string
		if g.PeakTFLOPs > 0 {
			figs = append(figs, fmt.Sprintf("%g TFLOP/s", g.PeakTFLOPs))
		}
		if g.HBMBandwidth > 0 {
			figs = append(figs, FormatBandwidth(g.HBMBandwidth))
		}
		if g.HBMCapacity > 0 {
			figs = append(figs, FormatBytes(g.HBMCapacity))
		}
		fmt.Fprintf(&b, "(%s)", strings.Join(figs, ", "))
	}
	if r := g.KVReplicas(s.Model); r > 1 {
		fmt.Fprintf(&b, ", each token's KV kept by %d GPUs", r)
	}
	if g.EPs() > 1 {
		fmt.Fprintf(&b, ", experts over %d GPUs", g.EPs())
	}
	if g.InterconnectBandwidth > 0 {
		name := g.Interconnect
		if name == "" {
			name = "interconnect"
		}
		fmt.Fprintf(&b, ", %s %s each way, %s per collective step", name, FormatBandwidth(g.InterconnectBandwidth), FormatDuration(g.InterconnectLatency))
	}
	b.WriteByte('\n')
	switch {
	case g.Engine == "simple":
		fmt.Fprintf(&b, "steps: prefill %g tok/s, decode %g tok/s per request, attention %g ns/token^2, %s loading\n",
			g.PrefillTokensPerSec, g.DecodeTokensPerSec, g.AttentionNsPerToken2, g.Load)
	case g.StepModel == "roofline":
		fmt.Fprintf(&b, "steps: roofline, %g of peak FLOP/s, %g of HBM bandwidth, %s overhead\n",
			g.ComputeEff, g.MemoryEff, FormatDuration(g.StepOverhead))
	default:
		fmt.Fprintf(&b, "steps: linear, %s + %s/prefill token + %s/decoding sequence + %s/context token + %g ns/token^2",
			FormatFineDuration(g.C0), FormatFineDuration(g.CPrefill), FormatFineDuration(g.CDecode), FormatFineDuration(g.CCtx), g.AttentionNsPerToken2)
		if g.LegacyStep {
			fmt.Fprintf(&b, " (from prefill %g tok/s, decode %g tok/s)", g.PrefillTokensPerSec, g.DecodeTokensPerSec)
		}
		b.WriteByte('\n')
	}
	b.WriteString("tiers:\n")
	for _, t := range s.Tiers {
		fmt.Fprintf(&b, "  %-12s %-12s %10s  %10s  %7s  $%g/GB", t.Name, t.Kind, FormatBytes(t.Capacity), FormatBandwidth(t.Bandwidth), FormatDuration(t.Latency), t.CostPerGB)
		if t.Shared {
			b.WriteString("  (bandwidth shared by all its links)")
		}
		if t.Scope == ScopeCluster {
			b.WriteString("  (cluster-scoped: each node's share of one pool)")
		}
		b.WriteString("\n")
	}
	b.WriteString("links:")
	if s.Profile != "" {
		fmt.Fprintf(&b, " (defaults from hardware profile %s)", s.Profile)
	}
	b.WriteString("\n")
	for _, l := range s.Links {
		fmt.Fprintf(&b, "  %s <-> %s: %s", s.Tiers[l.From].Name, s.Tiers[l.To].Name, FormatBandwidth(l.Bandwidth))
		if l.ReverseBandwidth != l.Bandwidth {
			fmt.Fprintf(&b, " (back %s)", FormatBandwidth(l.ReverseBandwidth))
		}
		fmt.Fprintf(&b, ", %s", FormatDuration(l.Latency))
		if l.ReverseLatency != l.Latency {
			fmt.Fprintf(&b, " (back %s)", FormatDuration(l.ReverseLatency))
		}
		if l.Lanes != 1 {
			fmt.Fprintf(&b, ", %d lanes", l.Lanes)
		}
		b.WriteByte('\n')
	}
	w := s.Workload
	fmt.Fprintf(&b, "trace: %s (%s", w.Trace, w.Format)
	if w.Limit > 0 {
		fmt.Fprintf(&b, ", first %d requests", w.Limit)
	}
	if w.SkipBadLines {
		b.WriteString(", skipping bad lines")
	}
	if w.Speedup != 1 {
		fmt.Fprintf(&b, ", arrivals at %gx speed", w.Speedup)
	}
	if in := w.Inject; in != nil {
		which := "requests without ids"
		if in.Replace {
			which = "every request"
		}
		fmt.Fprintf(&b, ", block ids injected into %s: system_tokens=%d", which, in.SystemTokens)
		if in.Tenants > 0 {
			fmt.Fprintf(&b, " tenants=%d tenant_tokens=%d tenant_zipf=%g", in.Tenants, in.TenantTokens, in.TenantZipf)
		}
		fmt.Fprintf(&b, " session_continue=%g sessions=%d session_gap=%d seed=%d", in.SessionContinue, in.Sessions, in.SessionGap, s.Seed)
	}
	b.WriteString(")\npolicies:")
	for i, p := range s.Policies {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s", p.Name)
		var extra []string
		if p.Name != p.Eviction {
			extra = append(extra, p.Eviction)
		}
		keys := make([]string, 0, len(p.Params))
		for k := range p.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			extra = append(extra, fmt.Sprintf("%s=%g", k, p.Params[k]))
		}
		for _, kv := range [][2]string{{"admission", p.Admission}, {"promotion", p.Promotion}, {"write", p.Write}, {"prefetch", p.Prefetch}, {"recompute", p.Recompute}, {"stage", p.Stage}, {"idle_rank", p.IdleRank}} {
			if kv[1] != "" {
				extra = append(extra, kv[0]+"="+kv[1])
			}
		}
		if p.PrefetchTimeout != 0 {
			extra = append(extra, "prefetch_timeout="+FormatDuration(p.PrefetchTimeout))
		}
		if len(extra) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(extra, " "))
		}
	}
	b.WriteByte('\n')
	if s.SLO.Set() {
		var t []string
		if s.SLO.TTFTms > 0 {
			t = append(t, fmt.Sprintf("TTFT <= %g ms", s.SLO.TTFTms))
		}
		if s.SLO.TPOTms > 0 {
			t = append(t, fmt.Sprintf("TPOT <= %g ms", s.SLO.TPOTms))
		}
		fmt.Fprintf(&b, "slo: %s\n", strings.Join(t, ", "))
	}
	if c := s.Cluster; c.Instances > 0 {
		fmt.Fprintf(&b, "cluster: %d instances", c.Instances)
		if c.Prefill > 0 {
			fmt.Fprintf(&b, " (%d prefill, %d decode)", c.Prefill, c.Instances-c.Prefill)
		}
		if i := s.Pool(); i >= 0 {
			t := s.Tiers[i]
			fmt.Fprintf(&b, ", tier %q pooled (%d x %s)", t.Name, c.Instances, FormatBytes(t.Capacity))
		}
		if c.PeerFetch {
			fmt.Fprintf(&b, ", peer fetch")
			if c.PeerStage != "" {
				fmt.Fprintf(&b, " through the %s tier", c.PeerStage)
			}
		}
		if c.Prefill > 0 || s.Pool() >= 0 || c.PeerFetch {
			fmt.Fprintf(&b, ", NICs %s each way, %s, %d lanes", FormatBandwidth(c.NICBandwidth), FormatDuration(c.NICLatency), c.NICLanes)
		}
		fmt.Fprintf(&b, ", router %s%s\n", c.Router, routerKeys(c))
	}
	if len(s.Sets) > 0 {
		fmt.Fprintf(&b, "overrides: %s\n", strings.Join(s.Sets, ", "))
	}
	return b.String()
}
