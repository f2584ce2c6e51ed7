package cluster

import (
	"errors"
	"fmt"
	"io"
	"math/bits"

	"kvsim/core"
	"kvsim/internal/minheap"
	"kvsim/sim"
)

// Config is a cluster: one sim.Config per instance and the router.
type Config struct {
	Instances []sim.Config
	Router    Router
	// Setup, if set, is called with each instance's simulator before the
	// run (to sample its series, to watch its events).
	Setup func(inst int, s *sim.Sim)
	// PoolShare > 0 makes the instances' last tier one pool (core.Pool)
	// to which each node contributes PoolShare bytes (the tier's own
	// capacity is then unused), ordered by the policy the instances'
	// NewPolicy builds for it; its cross-node reads and writes pass
	// through every node's NIC.
	PoolShare int64
	NIC       sim.NICSpec
	// PeerTier >= 1 turns on peer fetch: an instance missing a block in
	// every tier of its own (and the pool) reads it from another
	// instance's private tier PeerTier, over both nodes' NICs, into its
	// HBM, rather than compute it (core.Peers); 0: off.
	PeerTier int
	// PeerStage lands each peer read in the reader's own PeerTier on its
	// way to HBM (core.Peers.Stage).
	PeerStage bool
	// Prefill > 0 disaggregates: Instances[:Prefill] prefill, the rest
	// decode; the router chooses among the prefill instances, and a
	// finished prefill's KV crosses the NICs to a decode instance.
	Prefill int
	// StaleNs > 0 shows the router the cluster as it was StaleNs ago
	// (lag.go): an index of cached blocks fed by the cores' events, and
	// load reports; 0: the current state, exactly.
	StaleNs int64
	// SlidingWindow > 0 is the model's sliding-window span in tokens: the
	// View then tells routers which blocks each instance's sliding-window
	// layers still hold (WindowView, WindowHeld), and Params.SlidingWindow
	// should be the same; 0: full attention only.
	SlidingWindow int
	// OnResidency, if set, hears instance i's residency changes at its
	// simulated time now (core.Config.OnResidency with the instance and
	// time): kvsim run --publish-events.
	OnResidency func(i int, now int64, b core.Block, where uint8)
}

// PoolStats describes the pooled tier after a run.
type PoolStats struct {
	Tier     int
	Capacity int64 // all nodes' shares
	Share    int64 // one node's
	Peak     int64 // most bytes resident at once
	Used     int64 // at the end
	NodeUsed []int64
}

// Result is what a cluster run produced.
type Result struct {
	Instances []*sim.Result
	Series    []*sim.Series // per instance; nil entries unless sampled (Setup)
	Router    string
	Chosen    []int64 // requests routed to each instance
	Rejected  int64   // requests the router refused
	// WithPrefix counts routed requests some instance held a cached
	// prefix of (in any tier); BestPrefix those of them sent to an
	// instance holding the longest.
	WithPrefix, BestPrefix int64
	// Regret holds each routed request's decision, in routing order.
	Regret  []Decision
	Prefill int            // Config.Prefill: instances before it prefill, after it decode
	Pool    *PoolStats     // nil without a pool
	NICs    []sim.NICStats // per node; nil without a fabric
}

// Decision is one routing decision scored against the truth: the cached
// prefix (in any tier) of the chosen instance and of the routed instance
// holding the longest (the lowest index on ties), in blocks, and the time
// loading each would take (every block from its fastest tier, over idle
// links; HBM blocks free).
type Decision struct {
	Arrival              int64
	Chosen, Best         int32
	ChosenLoad, BestLoad int64
}

// RegretBlocks is the blocks of cached prefix the choice gave up.
func (d *Decision) RegretBlocks() int32 { return d.Best - d.Chosen }

// BestPrefixShare is the share of routed requests with a cached prefix
// somewhere that went to an instance holding the longest one (0 when no
// request had one).
func (r *Result) BestPrefixShare() float64 {
	if r.WithPrefix == 0 {
		return 0
	}
	return float64(r.BestPrefix) / float64(r.WithPrefix)
}

// Total is the cluster as a whole: the instances' stats and bytes summed,
// their histograms merged, the latest end; router rejections count as
// rejected requests. Links and devices add up by position (every
// instance has the same hierarchy). A one-instance cluster's total is its
// instance's result.
func (r *Result) Total() *sim.Result {
	var t sim.Result
	for k, in := range r.Instances {
		if k == 0 {
			t = *in
			t.Stats = cloneStats(in.Stats)
			t.Links = append([]sim.LinkStats(nil), in.Links...)
			t.Devices = append([]sim.DeviceStats(nil), in.Devices...)
			t.TTFT, t.Queue, t.TPOT, t.E2E, t.LoadWait = core.Hist{}, core.Hist{}, core.Hist{}, core.Hist{}, core.Hist{}
		} else {
			t.Stats.Add(&in.Stats)
			for i := range min(len(t.Links), len(in.Links)) {
				l := &t.Links[i]
				l.Bytes += in.Links[i].Bytes
				l.Transfers += in.Links[i].Transfers
				l.BusyNs += in.Links[i].BusyNs
				for k := range l.ByKind {
					l.ByKind[k] += in.Links[i].ByKind[k]
				}
			}
			for i := range min(len(t.Devices), len(in.Devices)) {
				d := &t.Devices[i]
				d.Bytes += in.Devices[i].Bytes
				d.Transfers += in.Devices[i].Transfers
				d.BusyNs += in.Devices[i].BusyNs
			}
			t.End = max(t.End, in.End)
			for i := range t.MovedByKind {
				t.MovedByKind[i] += in.MovedByKind[i]
			}
			t.Steps += in.Steps
			t.GPUBusyNs += in.GPUBusyNs
			t.OutputTokens += in.OutputTokens
			t.PromptTokens += in.PromptTokens
		}
		if k < r.Prefill { // a prefill's latencies are not the user's
			continue
		}
		t.TTFT.Merge(&in.TTFT)
		t.Queue.Merge(&in.Queue)
		t.TPOT.Merge(&in.TPOT)
		t.E2E.Merge(&in.E2E)
		t.LoadWait.Merge(&in.LoadWait)
	}
	if r.Prefill > 0 {
		r.disaggTotal(&t)
	}
	t.Stats.Rejected += r.Rejected
	if p := r.Pool; p != nil { // one pool, not one per instance
		t.Stats.PeakUsed[p.Tier] = p.Peak
	}
	return &t
}

// disaggTotal corrects a disaggregated cluster's sums: a request finishes
// on its decode instance (requests, output tokens), and its prompt's cache
// hits are the prefill instance's (the decode instance's own hits only
// spare transfers: Stats.Transferred counts those it did not spare).
func (r *Result) disaggTotal(t *sim.Result) {
	s := &t.Stats
	s.Requests, s.BlockAccesses, s.Misses, s.BlockHits, s.RecomputedTokens, s.PoolRemoteHits, s.PeerFetched = 0, 0, 0, 0, 0, 0, 0
	clear(s.Hits)
	t.OutputTokens = 0
	for k, in := range r.Instances {
		o := &in.Stats
		if k >= r.Prefill {
			s.Requests += o.Requests
			t.OutputTokens += in.OutputTokens
			continue
		}
		s.BlockAccesses += o.BlockAccesses
		s.Misses += o.Misses
		s.BlockHits += o.BlockHits
		s.RecomputedTokens += o.RecomputedTokens
		s.PoolRemoteHits += o.PoolRemoteHits
		s.PeerFetched += o.PeerFetched
		for i := range min(len(s.Hits), len(o.Hits)) {
			s.Hits[i] += o.Hits[i]
		}
	}
}

// cloneStats copies s with slices of its own.
func cloneStats(s core.Stats) core.Stats {
	for _, p := range statSlices(&s) {
		*p = append([]int64(nil), *p...)
	}
	return s
}

func statSlices(s *core.Stats) []*[]int64 {
	return []*[]int64{&s.Hits, &s.Evictions, &s.Demotions, &s.Drops, &s.Promotions, &s.AdmissionDenied, &s.Lost, &s.PeakUsed}
}

// Run replays src over the cluster. obs (optional) sees every finished or
// rejected request with the instance that ran it (-1: the router refused
// it), in the order they finish; a record is valid during the call only.
func Run(src core.Source, cfg Config, obs func(inst int, r *core.Record)) (*Result, error) {
	n := len(cfg.Instances)
	if n == 0 {
		return nil, errors.New("cluster: no instances")
	}
	if cfg.Router == nil {
		return nil, errors.New("cluster: no router")
	}
	if cfg.Prefill < 0 || (cfg.Prefill > 0 && cfg.Prefill >= n) {
		return nil, fmt.Errorf("cluster: %d prefill instances of %d leave no decode instance", cfg.Prefill, n)
	}
	var pool *core.Pool
	var fab *sim.Fabric
	var peers *core.Peers
	if cfg.PeerTier != 0 {
		var err error
		if peers, err = core.NewPeers(n, cfg.PeerTier); err != nil {
			return nil, err
		}
		peers.Stage = cfg.PeerStage
	}
	if cfg.PoolShare > 0 || cfg.Prefill > 0 || peers != nil {
		nics := make([]sim.NICSpec, n)
		for i := range nics {
			nics[i] = cfg.NIC
		}
		var err error
		if fab, err = sim.NewFabric(nics); err != nil {
			return nil, err
		}
	}
	if cfg.PoolShare > 0 {
		cc := cfg.Instances[0].Core
		pt := len(cc.Tiers) - 1
		if pt < 1 {
			return nil, errors.New("cluster: a pool must be a tier below hbm")
		}
		total := int64(n) * cfg.PoolShare
		if total/int64(n) != cfg.PoolShare || total > core.MaxTime {
			return nil, fmt.Errorf("cluster: a pool of %d x %d bytes is too large", n, cfg.PoolShare)
		}
		p, err := cc.NewPolicy(pt, total)
		if err != nil {
			return nil, fmt.Errorf("tier %q: %w", cc.Tiers[pt].Name, err)
		}
		if pool, err = core.NewPool(n, cfg.PoolShare, p); err != nil {
			return nil, err
		}
	}
	res := &Result{Router: cfg.Router.Name(), Chosen: make([]int64, n), Prefill: cfg.Prefill}
	v := &view{sims: make([]*sim.Sim, n), blockTokens: make([]int, n), poolTier: -1, peerTier: -1,
		tokBytes: make([]int64, n), hbm: make([]int64, n)}
	if peers != nil {
		v.peerTier = cfg.PeerTier
	}
	if cfg.SlidingWindow < 0 {
		return nil, fmt.Errorf("cluster: a sliding window of %d tokens", cfg.SlidingWindow)
	}
	if cfg.SlidingWindow > 0 {
		v.window, v.tail = cfg.SlidingWindow, make([][]bool, n)
	}
	if cfg.PoolShare > 0 {
		v.poolTier = len(cfg.Instances[0].Core.Tiers) - 1
	}
	var lag *lagging
	if cfg.StaleNs < 0 {
		return nil, fmt.Errorf("cluster: a view %d ns stale", cfg.StaleNs)
	}
	if cfg.StaleNs > 0 {
		routed := n
		if cfg.Prefill > 0 {
			routed = cfg.Prefill
		}
		lag = newLagging(cfg.StaleNs, v.sims[:routed])
		v.lag = lag
	}
	rt := &routing{}
	d := &disagg{all: v.sims, prefill: cfg.Prefill, res: res, obs: rt.user, pending: map[int64]core.Request{}}
	for i := range n {
		var o core.Observer
		switch {
		case i < cfg.Prefill:
			o = func(r *core.Record) { d.handOver(i, r) }
		default:
			o = func(r *core.Record) { rt.user(i, r) }
		}
		ic := cfg.Instances[i]
		if lag != nil && (cfg.Prefill == 0 || i < cfg.Prefill) {
			ic.Core.OnResidency = func(b core.Block, w uint8) { lag.record(i, b, w) }
		}
		if hook := cfg.OnResidency; hook != nil {
			prev := ic.Core.OnResidency
			ic.Core.OnResidency = func(b core.Block, w uint8) {
				if prev != nil {
					prev(b, w)
				}
				var now int64
				if s := v.sims[i]; s != nil { // nil while sim.New preloads
					now = s.Now()
				}
				hook(i, now, b, w)
			}
		}
		if pool != nil {
			ic.Core.Pool, ic.Core.Node = pool, i
		}
		if peers != nil {
			ic.Core.Peers, ic.Core.Node = peers, i
		}
		if fab != nil {
			ic.Net, ic.Node = fab, i
		}
		s, err := sim.New(ic, o)
		if err != nil {
			if n == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("instance %d: %w", i, err)
		}
		if cfg.Setup != nil {
			cfg.Setup(i, s)
		}
		v.sims[i] = s
		v.blockTokens[i] = cfg.Instances[i].Core.BlockTokens
		v.tokBytes[i] = cfg.Instances[i].Core.BytesPerToken
		if ts := cfg.Instances[i].Core.Tiers; len(ts) > 0 {
			v.hbm[i] = ts[0].Capacity
		}
	}
	g := sim.NewGroup(v.sims, fab)
	if cfg.Prefill > 0 { // the router sees the prefill instances only
		v.sims = v.sims[:cfg.Prefill]
		v.blockTokens = v.blockTokens[:cfg.Prefill]
	}
	*rt = routing{cfg: &cfg, v: v, d: d, lag: lag, res: res, obs: obs,
		rejected: core.Record{Rejected: true, HitBlocks: make([]int64, len(cfg.Instances[0].Core.Tiers))}}
	if ss, ok := src.(core.Sessions); ok {
		rt.sessions = ss
		g.SetExternal(rt)
	}
	var next core.Request
	var last int64
	for {
		err := src.Next(&next)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := sim.CheckArrival(&next, last); err != nil {
			return nil, err
		}
		last = next.Arrival
		if err := g.AdvanceTo(next.Arrival); err != nil {
			return nil, err
		}
		if err := rt.route(&next, false); err != nil {
			return nil, err
		}
	}
	if err := g.Finish(); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, d.err
	}
	if rt.err != nil {
		return nil, rt.err
	}
	for _, s := range d.all {
		r, err := s.Finish()
		if err != nil {
			return nil, err
		}
		res.Instances = append(res.Instances, r)
		res.Series = append(res.Series, s.Series())
	}
	if pool != nil {
		res.Pool = &PoolStats{Tier: len(cfg.Instances[0].Core.Tiers) - 1, Capacity: pool.Capacity(), Share: pool.Share(),
			Peak: pool.Peak(), Used: pool.Used()}
		for i := range n {
			res.Pool.NodeUsed = append(res.Pool.NodeUsed, pool.NodeUsed(i))
		}
	}
	if fab != nil {
		res.NICs = fab.Stats()
	}
	return res, nil
}

// routing sends requests to instances: those of the source at their
// arrival, and in closed-loop replay (core.Sessions) the turns that follow
// a finished one, released as it finishes and routed at their own arrival
// (as the group's External).
type routing struct {
	cfg      *Config
	v        *view
	d        *disagg
	lag      *lagging
	res      *Result
	obs      func(inst int, r *core.Record)
	rejected core.Record
	sessions core.Sessions
	follow   []core.Request // released turns, a heap by arrival (followBefore)
	err      error
}

// route sends r (at r.Arrival) to the router's instance: by Arrive for a
// request of the source (every instance stands at its arrival), by
// Inject for a released turn.
func (rt *routing) route(r *core.Request, inject bool) error {
	if rt.d.err != nil {
		return rt.d.err
	}
	if rt.err != nil {
		return rt.err
	}
	if rt.lag != nil {
		rt.lag.advance(r.Arrival)
	}
	v, res := rt.v, rt.res
	inst, reject := rt.cfg.Router.Route(r.Arrival, r, v)
	if reject {
		res.Rejected++
		rec := &rt.rejected
		rec.Seq, rec.Arrival, rec.InputTokens, rec.OutputTokens = r.Seq, r.Arrival, r.InputTokens, r.OutputTokens
		rec.Admitted, rec.PrefillStart, rec.FirstToken, rec.Done = r.Arrival, r.Arrival, r.Arrival, r.Arrival
		rec.Blocks = len(r.Blocks)
		rt.user(-1, rec)
		return rt.err
	}
	if inst < 0 || inst >= len(v.sims) {
		return fmt.Errorf("cluster: router %s chose instance %d of %d", res.Router, inst, len(v.sims))
	}
	res.Chosen[inst]++
	v.scorePrefix(res, inst, r)
	v.noteWindow(inst, r)
	if rt.cfg.Prefill > 0 {
		r = rt.d.prefillOf(r)
	}
	if inject {
		return v.sims[inst].Inject(r.Arrival, r)
	}
	return v.sims[inst].Arrive(r)
}

// user takes a record the user sees (instance -1: the router refused
// it); in closed-loop replay the turns that follow it are released.
func (rt *routing) user(inst int, r *core.Record) {
	if rt.obs != nil {
		rt.obs(inst, r)
	}
	if rt.sessions == nil || rt.err != nil {
		return
	}
	next, err := rt.sessions.Follow(r.Seq, r.Done)
	if err != nil {
		rt.err = err
		return
	}
	for i := range next {
		q := next[i]
		q.Blocks = append([]core.Block(nil), q.Blocks...)
		minheap.Push(&rt.follow, q, followBefore)
	}
}

// NextTime implements sim.External.
func (rt *routing) NextTime() (int64, bool) {
	if len(rt.follow) == 0 {
		return 0, false
	}
	return rt.follow[0].Arrival, true
}

// Fire implements sim.External: the earliest released turn arrives.
func (rt *routing) Fire() error {
	q := minheap.Pop(&rt.follow, followBefore)
	if q.Arrival > core.MaxTime {
		return &sim.LimitError{Key: "timestamp", Line: q.Line, Msg: fmt.Sprintf(
			"request %d arrives after its session's previous turn, past the simulated-time limit", q.Seq)}
	}
	return rt.route(&q, true)
}

// followBefore orders released turns by (Arrival, Seq).
func followBefore(a, b *core.Request) bool {
	return a.Arrival < b.Arrival || (a.Arrival == b.Arrival && a.Seq < b.Seq)
}

// disagg hands each finished prefill over to a decode instance.
type disagg struct {
	all     []*sim.Sim
	prefill int // instances before it prefill
	res     *Result
	obs     func(inst int, r *core.Record)
	pending map[int64]core.Request // by Seq: requests prefilling, as the user sent them
	pre     core.Request
	spare   [][]core.Block // block arrays of handed-over requests, for reuse
	err     error
}

// prefillOf is what a prefill instance runs of r: its prompt and the first
// token (vLLM's disaggregated proxy sends max_tokens = 1). r is kept for
// the decode instance.
func (d *disagg) prefillOf(r *core.Request) *core.Request {
	keep := *r
	var blocks []core.Block
	if n := len(d.spare); n > 0 {
		blocks, d.spare = d.spare[n-1][:0], d.spare[:n-1]
	}
	keep.Blocks = append(blocks, r.Blocks...)
	d.pending[r.Seq] = keep
	d.pre = *r
	d.pre.OutputTokens = 1
	return &d.pre
}

// handOver takes prefill instance i's record: a rejection is the
// request's; a finished prefill goes to the decode instance with the least
// work (queued and running tokens; the lowest index on ties), which
// receives its KV from i's HBM over the NICs, then decodes.
func (d *disagg) handOver(i int, r *core.Record) {
	q, ok := d.pending[r.Seq]
	if !ok {
		if d.err == nil {
			d.err = fmt.Errorf("cluster: prefill of request %d finished twice", r.Seq)
		}
		return
	}
	delete(d.pending, r.Seq)
	defer func() { d.spare = append(d.spare, q.Blocks) }() // Inject copied them
	if r.Rejected {
		if d.obs != nil {
			d.obs(i, r)
		}
		return
	}
	best, load := -1, int64(0)
	for k := d.prefill; k < len(d.all); k++ {
		c := d.all[k].Core()
		if l := c.QueuedTokens() + c.RunningTokens(); best < 0 || l < load {
			best, load = k, l
		}
	}
	d.res.Chosen[best]++
	q.RemoteKV = i + 1
	if err := d.all[best].Inject(d.all[i].Now(), &q); err != nil && d.err == nil {
		d.err = err
	}
}

// scorePrefix counts whether inst holds the longest cached prefix of r's
// blocks, and records the decision (Decision).
func (v *view) scorePrefix(res *Result, inst int, r *core.Request) {
	blocks := r.Blocks
	best, at, mine := 0, 0, 0
	for i := range v.sims {
		a := v.livePrefix(i, blocks)
		if a > best {
			best, at = a, i
		}
		if i == inst {
			mine = a
		}
	}
	if best > 0 {
		res.WithPrefix++
		if mine == best {
			res.BestPrefix++
		}
	}
	if mine == best {
		at = inst
	}
	d := Decision{Arrival: r.Arrival, Chosen: int32(mine), Best: int32(best), ChosenLoad: v.loadNs(inst, blocks[:mine])}
	d.BestLoad = d.ChosenLoad
	if at != inst {
		d.BestLoad = v.loadNs(at, blocks[:best])
	}
	res.Regret = append(res.Regret, d)
}

// loadNs is the time instance i would take to load blocks into HBM, each
// from its fastest tier now, the links idle.
func (v *view) loadNs(i int, blocks []core.Block) int64 {
	s := v.sims[i]
	c := s.Core()
	var bytes [core.MaxTiers]int64
	for _, b := range blocks {
		if w := c.Where(b); w != 0 {
			bytes[bits.TrailingZeros8(w)] += c.BlockBytes(b)
		}
	}
	var t int64
	for tier := 1; tier < c.Tiers(); tier++ {
		if bytes[tier] > 0 {
			_, service := s.EstimateLoad(s.Now(), tier, bytes[tier])
			t = core.AddTime(t, service)
		}
	}
	return t
}

// view is the View over the instances' simulators: live, or through a
// lagging index (Config.StaleNs).
type view struct {
	sims        []*sim.Sim
	blockTokens []int
	lag         *lagging
	poolTier    int
	peerTier    int      // the tier peers read (Config.PeerTier), -1 without peer fetch
	tokBytes    []int64  // KV bytes per token, per instance
	hbm         []int64  // HBM capacity, per instance
	window      int      // Config.SlidingWindow, tokens
	tail        [][]bool // per instance, by block: in the window at the end of a prompt it ran
}

// noteWindow records, with a sliding window, the blocks of r's prompt that
// instance inst's sliding-window layers keep when r has run: the last
// ceil(window / block tokens) (vLLM's SlidingWindowManager frees a
// running request's blocks once they leave its window).
func (v *view) noteWindow(inst int, r *core.Request) {
	if v.window <= 0 || len(r.Blocks) == 0 {
		return
	}
	bt := v.blockTokens[inst]
	if bt <= 0 {
		bt = max(1, (r.InputTokens+len(r.Blocks)-1)/len(r.Blocks))
	}
	w := (v.window + bt - 1) / bt
	tail := v.tail[inst]
	for _, b := range r.Blocks[max(0, len(r.Blocks)-w):] {
		if int(b) >= len(tail) {
			tail = append(tail, make([]bool, int(b)+1-len(tail))...)
		}
		tail[b] = true
	}
	v.tail[inst] = tail
}

// WindowHeld implements WindowView: b is in instance i's cache (in any
// tier: kvsim moves a block's layers together) and was in the window at
// the end of a prompt i ran.
func (v *view) WindowHeld(i int, b core.Block) bool {
	if v.tail == nil {
		return false
	}
	t := v.tail[i]
	return int(b) < len(t) && t[b] && v.where(i, b) != 0
}

// load is what the View tells of an instance's work.
type load struct {
	queued, running             int
	queuedToks, runToks, toFill int64
}

func (v *view) load(i int) load {
	if v.lag != nil {
		return v.lag.cur[i]
	}
	return liveLoad(v.sims[i])
}

func liveLoad(s *sim.Sim) load {
	c := s.Core()
	return load{c.Queued(), c.Running(), c.QueuedTokens(), c.RunningTokens(), s.PendingPrefillTokens()}
}

// where is the set of instance i's tiers holding b, as the View knows it.
func (v *view) where(i int, b core.Block) uint8 {
	if v.lag != nil {
		if w := v.lag.where[i]; int(b) < len(w) {
			return w[b]
		}
		return 0
	}
	return v.sims[i].Core().Where(b)
}

func (v *view) Instances() int            { return len(v.sims) }
func (v *view) Queued(i int) int          { return v.load(i).queued }
func (v *view) Running(i int) int         { return v.load(i).running }
func (v *view) QueuedTokens(i int) int64  { return v.load(i).queuedToks }
func (v *view) RunningTokens(i int) int64 { return v.load(i).runToks }

func (v *view) Prefix(i int, blocks []core.Block) (hbm, any int) {
	for k, b := range blocks {
		w := v.where(i, b)
		if w == 0 {
			break
		}
		any++
		if hbm == k && w&1 != 0 {
			hbm++
		}
	}
	return hbm, any
}

func (v *view) Tiers(i int, blocks []core.Block, out []uint8) []uint8 {
	for _, b := range blocks {
		w := v.where(i, b)
		if w == 0 {
			break
		}
		out = append(out, uint8(bits.TrailingZeros8(w)))
	}
	return out
}

func (v *view) PoolTier() int { return v.poolTier }

func (v *view) PeerTier() int { return v.peerTier }

func (v *view) Peers(i int, blocks []core.Block) int {
	if v.peerTier < 0 {
		return 0
	}
	bit := uint8(1) << v.peerTier
	n := 0
	for _, b := range blocks {
		if v.where(i, b) != 0 {
			continue
		}
		j := 0
		for ; j < len(v.sims); j++ {
			if j != i && v.where(j, b)&bit != 0 {
				break
			}
		}
		if j == len(v.sims) {
			break
		}
		n++
	}
	return n
}

func (v *view) KVUsage(i int) float64 {
	if v.hbm[i] <= 0 {
		return 0
	}
	return min(float64(v.load(i).runToks)*float64(v.tokBytes[i])/float64(v.hbm[i]), 1)
}

// livePrefix is Prefix on the instances' current state (the best-prefix
// score measures the router against the truth).
func (v *view) livePrefix(i int, blocks []core.Block) int {
	c := v.sims[i].Core()
	n := 0
	for _, b := range blocks {
		if !c.Cached(b) {
			break
		}
		n++
	}
	return n
}

// EstimateTTFT sums, on instance i: the queue's prefill work (its requests
// taken as equal in size, each computed from scratch: an upper bound, the
// queue's own hits unknown), the admitted requests' prompt tokens not yet
// computed (as one prompt; a step under way counts whole), loading r's
// cached prefix from the fastest tier holding each block (the first hop's
// backlog and the route's idle time, per tier), and computing the rest of
// r's prompt, each in the steps the engine runs now: beside the
// sequences decoding (batched engine), which share every step.
func (v *view) EstimateTTFT(i int, r *core.Request) int64 {
	s := v.sims[i]
	c := s.Core()
	now := s.Now()
	ld := v.load(i)
	var t int64
	if q := ld.queued; q > 0 {
		avg := int(max(ld.queuedToks/int64(q), 1))
		per := s.EstimateBesideDecodes(0, avg)
		t = core.AddTime(t, satMul(per, int64(q)))
	}
	if p := ld.toFill; p > 0 {
		t = core.AddTime(t, s.EstimateBesideDecodes(0, int(min(p, int64(core.MaxTime)))))
	}
	var bytes [core.MaxTiers]int64
	nt := c.Tiers()
	prefix := 0
	for _, b := range r.Blocks {
		w := v.where(i, b)
		if w == 0 {
			break
		}
		prefix++
		// The index only holds blocks the instance has seen: it knows their size.
		bytes[bits.TrailingZeros8(w)] += c.BlockBytes(b)
	}
	for tier := 1; tier < nt; tier++ {
		if bytes[tier] > 0 {
			backlog, service := s.EstimateLoad(now, tier, bytes[tier])
			t = core.AddTime(t, core.AddTime(backlog, service))
		}
	}
	cached := min(prefix*v.blockTokens[i], r.InputTokens)
	compute := max(r.InputTokens-cached, 1) // the core computes at least one token
	return core.AddTime(t, s.EstimateBesideDecodes(r.InputTokens-compute, compute))
}

// satMul is a*b for non-negative a, b, saturating past core.MaxTime.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > core.MaxTime/b {
		return core.MaxTime + 1
	}
	return a * b
}
