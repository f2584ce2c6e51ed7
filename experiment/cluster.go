package experiment

import (
	"errors"
	"math"
	"slices"

	"kvsim/cluster"
	"kvsim/core"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/workload"
)

// NewRouter builds the router of sc's [cluster], its parameters from the
// scenario (the routers' own defaults for what the scenario does not set).
func NewRouter(sc *scenario.Scenario) (cluster.Router, error) {
	c := sc.Cluster
	p := cluster.DefaultParams()
	p.Keys = c.Keys
	if sc.SLO.TTFTms > 0 {
		p.SLOTTFT = int64(sc.SLO.TTFTms * 1e6)
	}
	p.BlockTokens = sc.Model.BlockTokens
	p.SlidingWindow = slidingWindow(sc)
	return cluster.NewRouter(c.Router, p)
}

// slidingWindow is the span of the model's sliding-window layers in
// tokens, 0 without any (chunked local attention is not a sliding window:
// llm-d's hybrid rule does not cover it).
func slidingWindow(sc *scenario.Scenario) int {
	if m := sc.Model; m.LocalLayers() > 0 && m.LocalKind() == "sliding" {
		return m.Window
	}
	return 0
}

// ClusterConfig is sc's [cluster] around cfg, each instance's simulator:
// the router, the pooled tier (each node contributing the tier's capacity;
// the tier in cfg stands for it), the NICs and the prefill instances.
func ClusterConfig(sc *scenario.Scenario, cfg sim.Config) (cluster.Config, error) {
	c := sc.Cluster
	ccfg := cluster.Config{Prefill: c.Prefill, NIC: sim.NICSpec{Bandwidth: c.NICBandwidth, Latency: c.NICLatency, Lanes: c.NICLanes},
		StaleNs: c.ViewDelay, SlidingWindow: slidingWindow(sc)}
	if t := sc.Pool(); t >= 0 {
		ccfg.PoolShare = sc.Tiers[t].Capacity
	}
	if c.PeerFetch {
		if ccfg.PeerTier = sc.PeerTier(); ccfg.PeerTier < 0 {
			return ccfg, errors.New("cluster: peer_fetch needs a node-scoped pinned or dram tier")
		}
		ccfg.PeerStage = c.PeerStage == "host"
	}
	var err error
	if ccfg.Router, err = NewRouter(sc); err != nil {
		return ccfg, err
	}
	for range c.Instances {
		ccfg.Instances = append(ccfg.Instances, cfg)
	}
	return ccfg, nil
}

// mergeSeries is the cluster's time series: counts summed, shares (tier
// use, link and pipe utilisation) averaged over the instances, every
// instance alike. An instance whose series ended earlier (its last event
// came sooner) counts as idle, its tiers as they were at its last point.
// One instance's series is returned as it is.
func mergeSeries(ss []*sim.Series) *sim.Series {
	if len(ss) == 0 || ss[0] == nil {
		return nil
	}
	if len(ss) == 1 {
		return ss[0]
	}
	longest := ss[0]
	for _, s := range ss {
		if len(s.Times) > len(longest.Times) {
			longest = s
		}
	}
	n := len(longest.Times)
	out := &sim.Series{Interval: longest.Interval, Times: longest.Times, Pipes: longest.Pipes,
		Queued: make([]int, n), Running: make([]int, n), Preemptions: make([]int64, n)}
	if longest.PrefillTokens != nil {
		out.PrefillTokens, out.DecodeSeqs = make([]float64, n), make([]float64, n)
	}
	out.TierUsed = make([][]float64, len(longest.TierUsed))
	for t := range out.TierUsed {
		out.TierUsed[t] = make([]float64, n)
	}
	out.LinkUtil = make([][]float64, len(longest.LinkUtil))
	for l := range out.LinkUtil {
		out.LinkUtil[l] = make([]float64, n)
	}
	k := float64(len(ss))
	for _, s := range ss {
		m := len(s.Times)
		for i := range n {
			j := min(i, m-1) // past its end: its last point
			if m == 0 {
				break
			}
			for t := range out.TierUsed {
				out.TierUsed[t][i] += s.TierUsed[t][j] / k
			}
			out.Preemptions[i] += s.Preemptions[j]
			if i >= m {
				continue // idle: no queue, no work, no transfers
			}
			for l := range out.LinkUtil {
				out.LinkUtil[l][i] += s.LinkUtil[l][i] / k
			}
			out.Queued[i] += s.Queued[i]
			out.Running[i] += s.Running[i]
			if out.PrefillTokens != nil {
				out.PrefillTokens[i] += s.PrefillTokens[i] / k
				out.DecodeSeqs[i] += s.DecodeSeqs[i] / k
			}
		}
	}
	return out
}

// instances is summary.json's per-instance view of a cluster run.
func instances(sc *scenario.Scenario, cr *cluster.Result) ([]results.Instance, *results.Router) {
	var out []results.Instance
	end := int64(0)
	for _, r := range cr.Instances {
		end = max(end, r.End)
	}
	for i, r := range cr.Instances {
		st := r.Stats
		in := results.Instance{Requests: st.Requests, Rejected: st.Rejected, Hits: map[string]int64{},
			TTFTms: quantiles(&r.TTFT), QueueMs: quantiles(&r.Queue), Chosen: cr.Chosen[i]}
		var hits int64
		for t, h := range st.Hits {
			in.Hits[sc.Tiers[t].Name] = h
			hits += h
		}
		if st.BlockAccesses > 0 {
			in.HitRatio = float64(hits) / float64(st.BlockAccesses)
		}
		if sc.GPU.Engine == "batched" && end > 0 {
			b := float64(r.GPUBusyNs) / float64(end)
			in.GPUBusyShare = &b
		}
		if p := sc.Cluster.Prefill; p > 0 {
			in.Role = "decode"
			if i < p {
				in.Role = "prefill"
			}
		}
		in.Sources = sources(&st, cr.Pool)
		out = append(out, in)
	}
	return out, &results.Router{Name: cr.Router, Decisions: cr.Chosen, Rejected: cr.Rejected,
		BestPrefixShare: cr.BestPrefixShare(), WithPrefix: cr.WithPrefix}
}

// sources splits an instance's block accesses by where each block came
// from: its hbm, its own lower tiers, the pool on its node or on another,
// or nowhere (recomputed).
func sources(st *core.Stats, pool *cluster.PoolStats) *results.Sources {
	var s results.Sources
	var hits int64
	for t, h := range st.Hits {
		hits += h
		switch {
		case t == 0:
			s.LocalHBM += h
		case pool != nil && t == pool.Tier:
			s.PoolLocal += h - st.PoolRemoteHits
			s.PoolRemote += st.PoolRemoteHits
		default:
			s.LocalTier += h
		}
	}
	s.Transferred = st.Transferred
	s.Peer = st.PeerFetched
	s.Recomputed = st.BlockAccesses - hits - st.Transferred - st.PeerFetched
	return &s
}

// nics is summary.json's per-node NIC traffic; end is the run's simulated
// end, the busy shares' denominator.
func nics(cr *cluster.Result, end int64) []results.NIC {
	var out []results.NIC
	for _, n := range cr.NICs {
		nic := results.NIC{Node: n.Node, SendBytes: n.SendBytes, RecvBytes: n.RecvBytes}
		if end > 0 {
			nic.SendBusyShare = float64(n.SendBusyNs) / float64(end)
			nic.RecvBusyShare = float64(n.RecvBusyNs) / float64(end)
		}
		out = append(out, nic)
	}
	return out
}

// poolStats is summary.json's view of the pooled tier; nil without one.
func poolStats(sc *scenario.Scenario, cr *cluster.Result, tot *sim.Result) *results.Pool {
	p := cr.Pool
	if p == nil {
		return nil
	}
	return &results.Pool{Tier: sc.Tiers[p.Tier].Name, CapacityBytes: p.Capacity, ShareBytes: p.Share, PeakUsedBytes: p.Peak,
		UsedBytes: p.Used, NodeUsedBytes: append([]int64(nil), p.NodeUsed...), RemoteHits: tot.Stats.PoolRemoteHits}
}

// oneInstance routes every request to instance 0: a closed-loop run
// without [cluster] is a cluster of one (sessions need its coordinator).
type oneInstance struct{}

func (*oneInstance) Name() string { return "one_instance" }
func (*oneInstance) Route(int64, *core.Request, cluster.View) (int, bool) {
	return 0, false
}

// regretIntervals bounds the points of routing.over_time.
const regretIntervals = 100

// routing summarises the router's decisions against the truth (nil: none).
func routing(cr *cluster.Result) *results.Routing {
	ds := cr.Regret
	if len(ds) == 0 {
		return nil
	}
	n := float64(len(ds))
	out := &results.Routing{Decisions: int64(len(ds))}
	regrets := make([]int32, len(ds))
	var sum, with int64
	var chosen, best float64
	for k := range ds {
		r := ds[k].RegretBlocks()
		regrets[k] = r
		sum += int64(r)
		if r > 0 {
			with++
		}
		chosen += float64(ds[k].ChosenLoad)
		best += float64(ds[k].BestLoad)
	}
	slices.Sort(regrets)
	rank := max(int(math.Ceil(0.99*n))-1, 0)
	out.RegretBlocks = results.Spread{Mean: float64(sum) / n, P99: float64(regrets[rank]), Max: float64(regrets[len(regrets)-1])}
	out.RegretShare = float64(with) / n
	out.ChosenLoadMs, out.BestLoadMs = chosen/n/1e6, best/n/1e6
	t0, t1 := ds[0].Arrival, ds[0].Arrival
	for k := range ds { // closed-loop turns are routed out of arrival order
		t0, t1 = min(t0, ds[k].Arrival), max(t1, ds[k].Arrival)
	}
	width := max((t1-t0)/regretIntervals+1, 1)
	cnt := make([]int64, regretIntervals+1)
	reg := make([]int64, regretIntervals+1)
	wr := make([]int64, regretIntervals+1)
	for k := range ds {
		b := (ds[k].Arrival - t0) / width
		cnt[b]++
		reg[b] += int64(ds[k].RegretBlocks())
		if ds[k].RegretBlocks() > 0 {
			wr[b]++
		}
	}
	ot := &results.RegretSeries{}
	for b := range cnt {
		if cnt[b] == 0 {
			continue
		}
		ot.TimesS = append(ot.TimesS, float64(t0+int64(b)*width)/1e9)
		ot.MeanBlocks = append(ot.MeanBlocks, float64(reg[b])/float64(cnt[b]))
		ot.Share = append(ot.Share, float64(wr[b])/float64(cnt[b]))
	}
	out.OverTime = ot
	return out
}

// sessionStats gathers a closed-loop run's records for Sessions.
type sessionStats struct {
	cl            *workload.Closed
	arrival, done []int64
	ttft          []int64 // -1: rejected
	seen          []bool
}

func newSessionStats(cl *workload.Closed) *sessionStats {
	n := cl.Requests()
	return &sessionStats{cl: cl, arrival: make([]int64, n), done: make([]int64, n), ttft: make([]int64, n), seen: make([]bool, n)}
}

func (s *sessionStats) add(r *core.Record) {
	if r.Seq < 0 || int(r.Seq) >= len(s.seen) {
		return
	}
	s.arrival[r.Seq], s.done[r.Seq], s.seen[r.Seq] = r.Arrival, r.Done, true
	s.ttft[r.Seq] = -1
	if !r.Rejected {
		s.ttft[r.Seq] = r.TTFT()
	}
}

// summary is nil when no request follows another. A parent's seq is below
// its children's (the trace names earlier lines), so one pass gives roots
// and depths.
func (s *sessionStats) summary() *results.Sessions {
	n := len(s.seen)
	root, depth := make([]int64, n), make([]int, n)
	follows := false
	for k := range n {
		root[k] = int64(k)
		if p := s.cl.Parent(int64(k)); p >= 0 {
			root[k], depth[k], follows = root[p], depth[p]+1, true
		}
	}
	if !follows {
		return nil
	}
	start, end := map[int64]int64{}, map[int64]int64{}
	var order []int64
	var byDepth [][]float64
	for k := range n {
		if !s.seen[k] {
			continue
		}
		r := root[k]
		if _, ok := start[r]; !ok {
			order = append(order, r)
			start[r] = s.arrival[k]
		}
		start[r] = min(start[r], s.arrival[k])
		end[r] = max(end[r], s.done[k])
		if s.ttft[k] >= 0 {
			for len(byDepth) <= depth[k] {
				byDepth = append(byDepth, nil)
			}
			byDepth[depth[k]] = append(byDepth[depth[k]], float64(s.ttft[k])/1e6)
		}
	}
	mk := make([]float64, 0, len(order))
	for _, r := range order {
		mk = append(mk, float64(end[r]-start[r])/1e9)
	}
	out := &results.Sessions{Sessions: int64(len(order)), MakespanS: spread(mk)}
	for _, v := range byDepth {
		out.TTFTByDepthMs = append(out.TTFTByDepthMs, spread(v))
	}
	return out
}

// spread is v's mean, nearest-rank p99 and max (zeros for none).
func spread(v []float64) results.Spread {
	if len(v) == 0 {
		return results.Spread{}
	}
	v = slices.Clone(v)
	slices.Sort(v)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	rank := max(int(math.Ceil(0.99*float64(len(v))))-1, 0)
	return results.Spread{Mean: sum / float64(len(v)), P99: v[rank], Max: v[len(v)-1]}
}
