package sim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"

	"kvsim/core"
)

// LinkSpec joins tiers From and To; each direction gets its own queue.
type LinkSpec struct {
	From, To         int
	Bandwidth        float64 // bytes/s, From->To
	ReverseBandwidth float64 // bytes/s, To->From (0: same as Bandwidth)
	Latency          int64   // ns, From->To
	ReverseLatency   int64   // ns, To->From (0: same as Latency, unless ReverseSet)
	ReverseSet       bool    // ReverseLatency is meant as given, 0 included (a scenario resolves it)
	Lanes            int     // transfers in flight per direction, hiding latency (0: 1)
}

// GPUSpec is the compute model.
type GPUSpec struct {
	PrefillTokensPerSec  float64
	AttentionNsPerToken2 float64 // extra ns per (new token x context token) pair
	DecodeTokensPerSec   float64 // per running request
	Layers               int     // pipeline depth of layer-wise loading
	Serial               bool    // load all cached KV before computing

	Engine           Engine    // EngineSimple (zero value) or EngineBatched
	MaxBatchedTokens int       // batched: tokens computed per step at most, > 0
	Step             StepModel // batched: time of one step; nil: LegacyStep of the rates
}

// Config is a whole simulated system.
type Config struct {
	Core  core.Config
	Links []LinkSpec
	GPU   GPUSpec
	// SharedBandwidth, per tier (optional), is the bandwidth of one pipe
	// that every transfer into or out of the tier shares, whatever its link
	// and direction; 0 leaves the tier's links independent.
	SharedBandwidth []float64
	// Tee, if set, receives every command too, after the simulator has
	// scheduled it: the real driver layer moves real bytes in the
	// simulator's order, so both see the same decisions.
	Tee core.Mover
	// Net, if set, carries the hops of moves into and out of a pooled tier
	// (Core.Pool) whose copy lives on another node; Node is this Sim's
	// node on it.
	Net  *Fabric
	Node int
}

// LinkStats describes one direction of one link after a run.
type LinkStats struct {
	Name      string // "from->to"
	From, To  int
	Lanes     int
	Bytes     int64
	Transfers int64
	BusyNs    int64 // the pipe moving bytes
	// ByKind splits Bytes by core.MoveKind (the move each hop carried):
	// what the link wrote into tier To, by purpose.
	ByKind [4]int64
}

// DeviceStats describes one tier's shared pipe after a run.
type DeviceStats struct {
	Tier      int
	Name      string // the tier's
	Bandwidth float64
	Bytes     int64
	Transfers int64
	BusyNs    int64
}

// Result is what a run produced. Everything in it is a function of the
// inputs: no wall-clock figure lives here.
type Result struct {
	Stats   core.Stats
	Links   []LinkStats
	Devices []DeviceStats // tiers with a shared pipe
	End     int64         // virtual time of the last event
	TTFT    core.Hist
	Queue   core.Hist
	// MovedByKind is bytes moved (counted once per move, not per hop) by
	// core.MoveKind: load, demote, write-through, prefetch.
	MovedByKind [4]int64

	Steps        int64     // batched engine: steps run
	GPUBusyNs    int64     // batched engine: the steps' time in all
	TPOT         core.Hist // per request with >= 2 output tokens: (Done-FirstToken)/(OutputTokens-1)
	E2E          core.Hist // Done - Arrival
	LoadWait     core.Hist // Prefill issued until its loads landed
	OutputTokens int64     // of finished requests
	PromptTokens int64     // of finished requests
}

type reqTiming struct {
	loadStart, loadDone int64
	loads               bool
	timing              core.Timing
	pending             int32 // load moves not yet landed (move.go)
	loadBytes           int64 // bytes the loads bring into HBM
	landedBytes         int64 // of which landed

	// simple engine (simple.go)
	issued, ready, landed int64 // prefill issued; earliest start; its loads landed (unknown: not yet)
	start                 int64 // prefill started on the GPU
	phase                 uint8 // phaseIdle, phaseQueued, phaseRunning
	hadLoads              bool
	cached, compute       int
	gen                   int   // output tokens generated, kept across a preemption
	resume                int   // generated tokens the next prefill recomputes
	out                   int   // output tokens in all
	epoch                 int32 // bumped by a preemption: older decode events are stale
	run0                  int64 // this decode run's start
	base0, segEnd         int   // gen at run0; gen when the pending decode event fires
	stalled               bool  // its Grow waited for draining HBM: the decode restarts its clock
}

// Sim is the virtual-time body.
type Sim struct {
	cfg     Config
	core    *core.Core
	heap    evHeap
	now     int64
	links   []*link
	devs    []*device // per tier, nil where not shared
	route   [][][]int // route[from][to]: link indices, hop by hop
	viaNet  [][][]int // the same to or from the pool through the fabric (netHop marks that hop)
	pool    *core.Pool
	pt      int // the pooled tier, or -1
	nt      int
	gpu     int64           // when the GPU finishes its current prefill
	stalled []stalledDecode // simple engine: decodes waiting for draining HBM (simple.go)
	req     []reqTiming
	landed  []int64 // [block*nt+tier]: when that copy finished arriving; < 0: the move bringing it (-index-1)
	obs     core.Observer
	moved   [4]int64 // bytes by core.MoveKind
	res     Result
	hook    func(s *Sim)
	sampler *sampler
	err     *LimitError    // the first value that left the representable range
	pq      []core.ReqID   // simple engine: issued prefills not started, in issue order
	gpuWake int64          // simple engine: time of the latest GPU wake queued
	eng     *engine        // the batched engine; nil: the simple one
	toFill  int64          // prompt tokens issued for prefill, not computed yet (routers read it)
	injects []core.Request // requests Inject queued, in order, from ih on
	ih      int
	open    bool // stopped at an arrival no request has taken yet
	pending bool // the arrival event's tail (after) has yet to run

	// links at work (move.go)
	xfers []xfer                                        // moves in flight or waiting for their source
	freeX int32                                         // free xfers slots (index + 1, linked through next)
	xseq  uint64                                        // hops queued so far
	onHop func(p hopPhase, l *link, x *xfer, now int64) // tests watch the links

	ev     *EventLog // --trace-events (eventlog.go); nil: off
	evInst uint16    // the instance ev marks this Sim's events with
}

// LimitError is a run that would leave the representable range of
// simulated time (0..core.MaxTime ns, about 146 years) or of bytes: a
// scenario value too small, or a trace value too large, for the other.
// The run stops at once rather than wrap.
type LimitError struct {
	Key  string // what is responsible: a scenario key ("gpu.decode_tokens_per_s") or a link
	Line int    // trace line of the request involved; 0 when none
	Msg  string
}

func (e *LimitError) Error() string {
	s := e.Key + ": " + e.Msg
	if e.Line > 0 {
		s += " (trace line " + strconv.Itoa(e.Line) + ")"
	}
	return s
}

// limit is core.MaxTime in words, for messages.
var limit = span(float64(core.MaxTime))

// span renders nanoseconds for limit messages.
func span(ns float64) string {
	const year = 365.25 * 24 * 3600 * 1e9
	switch {
	case math.IsInf(ns, 0) || ns > 1e300:
		return "forever"
	case ns >= year:
		return strconv.FormatFloat(ns/year, 'g', 4, 64) + " years"
	case ns >= 86400e9:
		return strconv.FormatFloat(ns/86400e9, 'g', 4, 64) + " days"
	}
	return strconv.FormatFloat(ns/1e9, 'g', 4, 64) + " s"
}

// fail records the first limit error about request req (or Background);
// Run returns it after the event, and commands until then do nothing.
func (s *Sim) fail(req core.ReqID, key, format string, args ...any) {
	if s.err == nil {
		s.err = &LimitError{Key: key, Msg: fmt.Sprintf(format, args...)}
		if req >= 0 {
			s.err.Line = s.core.Request(req).Line
		}
	}
}

func fmtRate(bps float64) string { return strconv.FormatFloat(bps, 'g', 4, 64) + " B/s" }

// New builds a simulator. obs (optional) sees every finished request.
func New(cfg Config, obs core.Observer) (*Sim, error) {
	s := &Sim{cfg: cfg, nt: len(cfg.Core.Tiers), obs: obs}
	g := cfg.GPU
	if g.Engine == EngineBatched {
		e, err := newEngine(s)
		if err != nil {
			return nil, err
		}
		s.eng = e
	} else if !(g.PrefillTokensPerSec > 0) || !(g.DecodeTokensPerSec > 0) || math.IsInf(g.PrefillTokensPerSec+g.DecodeTokensPerSec, 0) {
		return nil, errors.New("sim: gpu rates must be finite and > 0")
	}
	if !(g.AttentionNsPerToken2 >= 0) || math.IsInf(g.AttentionNsPerToken2, 0) {
		return nil, errors.New("sim: gpu attention cost must be finite and >= 0")
	}
	if s.cfg.GPU.Layers <= 0 {
		s.cfg.GPU.Layers = 1
	}
	if len(cfg.SharedBandwidth) > s.nt {
		return nil, fmt.Errorf("sim: %d shared bandwidths for %d tiers", len(cfg.SharedBandwidth), s.nt)
	}
	s.devs = make([]*device, s.nt)
	for i, bw := range cfg.SharedBandwidth {
		switch {
		case bw < 0 || math.IsNaN(bw) || math.IsInf(bw, 0):
			return nil, fmt.Errorf("sim: tier %d: shared bandwidth %g", i, bw)
		case bw > 0:
			s.devs[i] = &device{name: cfg.Core.Tiers[i].Name, bw: bw}
		}
	}
	for _, ls := range cfg.Links {
		if ls.From < 0 || ls.From >= s.nt || ls.To < 0 || ls.To >= s.nt || ls.From == ls.To {
			return nil, fmt.Errorf("sim: bad link %d->%d", ls.From, ls.To)
		}
		rev := ls.ReverseBandwidth
		if rev == 0 {
			rev = ls.Bandwidth
		}
		lanes := max(ls.Lanes, 1)
		rlat := ls.ReverseLatency
		if rlat <= 0 && !ls.ReverseSet {
			rlat = ls.Latency
		}
		for _, d := range [2]struct {
			a, b int
			bw   float64
			lat  int64
		}{{ls.From, ls.To, ls.Bandwidth, ls.Latency}, {ls.To, ls.From, rev, rlat}} {
			if !(d.bw > 0) || math.IsInf(d.bw, 0) {
				return nil, fmt.Errorf("sim: link %d->%d: bandwidth must be finite and > 0", d.a, d.b)
			}
			if d.lat < 0 || d.lat > core.MaxTime {
				return nil, fmt.Errorf("sim: link %d->%d: latency %d ns outside 0..%d", d.a, d.b, d.lat, core.MaxTime)
			}
			s.links = append(s.links, &link{
				name: cfg.Core.Tiers[d.a].Name + "->" + cfg.Core.Tiers[d.b].Name,
				from: d.a, to: d.b, bw: d.bw, latency: d.lat,
				lanes: make([]int64, lanes),
				dev:   [2]*device{s.devs[d.a], s.devs[d.b]},
			})
		}
	}
	if err := s.buildRoutes(); err != nil {
		return nil, err
	}
	s.pt = -1
	if p := cfg.Core.Pool; p != nil {
		s.pool, s.pt = p, s.nt-1
		s.viaNet = make([][][]int, s.nt)
		for a := range s.nt {
			s.viaNet[a] = make([][]int, s.nt)
			for b := range s.nt {
				switch {
				case a == s.pt && b != a: // read from a remote node, then on as from the local copy
					s.viaNet[a][b] = append([]int{netHop}, s.route[a][b]...)
				case b == s.pt && a != b: // write as to the local copy, then on to the remote node
					s.viaNet[a][b] = append(append([]int(nil), s.route[a][b]...), netHop)
				}
			}
		}
	}
	if cfg.Net != nil {
		if err := cfg.Net.attach(s, cfg.Node); err != nil {
			return nil, err
		}
	}
	if cfg.Core.Strategy.RecomputeWhenCheaper && cfg.Core.Cost == nil {
		cfg.Core.Cost = s
	}
	c, err := core.New(cfg.Core, s, s.observe)
	if err != nil {
		return nil, err
	}
	s.core = c
	if s.eng != nil {
		s.eng.sch.Attach(c)
	}
	return s, nil
}

// buildRoutes finds fewest-hop paths between every pair of tiers (BFS in
// link order, so ties resolve the same way every run).
func (s *Sim) buildRoutes() error {
	s.route = make([][][]int, s.nt)
	for a := 0; a < s.nt; a++ {
		s.route[a] = make([][]int, s.nt)
		via := make([]int, s.nt) // link used to reach tier
		for i := range via {
			via[i] = -1
		}
		seen := make([]bool, s.nt)
		seen[a] = true
		q := []int{a}
		for len(q) > 0 {
			t := q[0]
			q = q[1:]
			for i, l := range s.links {
				if l.from == t && !seen[l.to] {
					seen[l.to] = true
					via[l.to] = i
					q = append(q, l.to)
				}
			}
		}
		for b := 0; b < s.nt; b++ {
			if b == a {
				continue
			}
			if !seen[b] {
				return fmt.Errorf("sim: no link path from tier %q to %q", s.cfg.Core.Tiers[a].Name, s.cfg.Core.Tiers[b].Name)
			}
			var path []int
			for t := b; t != a; t = s.links[via[t]].from {
				path = append([]int{via[t]}, path...)
			}
			s.route[a][b] = path
		}
	}
	return nil
}

// Core exposes the hierarchy state (tests inspect it).
func (s *Sim) Core() *core.Core { return s.core }

// Now is the current virtual time.
func (s *Sim) Now() int64 { return s.now }

// PendingPrefillTokens is the prompt tokens (with a resumed request's
// generated ones) of the admitted requests still to be computed: the
// batched engine counts a step's chunks once the step ends, the simple one
// a prefill once it starts.
func (s *Sim) PendingPrefillTokens() int64 {
	if s.eng != nil {
		return s.eng.sch.PendingPrefillTokens()
	}
	return s.toFill
}

func (s *Sim) observe(r *core.Record) {
	if s.ev != nil {
		s.logRecord(r)
	}
	if !r.Rejected {
		s.res.TTFT.Add(r.TTFT())
		s.res.Queue.Add(r.QueueNs())
		s.res.E2E.Add(r.Done - r.Arrival)
		if r.OutputTokens >= 2 {
			s.res.TPOT.Add((r.Done - r.FirstToken) / int64(r.OutputTokens-1))
		}
		s.res.OutputTokens += int64(r.OutputTokens)
		s.res.PromptTokens += int64(r.InputTokens)
		s.res.LoadWait.Add(r.LoadWaitNs)
	}
	if s.obs != nil {
		s.obs(r)
	}
}

func (s *Sim) timing(id core.ReqID) *reqTiming {
	for int(id) >= len(s.req) {
		s.req = append(s.req, reqTiming{})
	}
	return &s.req[id]
}

// Drop implements core.Mover; dropping costs nothing in the model.
func (s *Sim) Drop(now int64, b core.Block, tier int) {
	if s.ev != nil {
		s.logEv(Event{Time: now, Kind: EvDrop, Seq: -1, Block: int64(b), From: int8(tier)})
	}
	if s.cfg.Tee != nil {
		s.cfg.Tee.Drop(now, b, tier)
	}
}

// ComputeNs is the prefill time of n new tokens after c cached ones; past
// core.MaxTime it is core.MaxTime+1.
func (g *GPUSpec) ComputeNs(c, n int) int64 {
	lin, quad := g.computeTerms(c, n)
	return toNs(lin + quad)
}

// computeTerms are the linear (rate) and quadratic (attention) parts of
// ComputeNs, in ns.
func (g *GPUSpec) computeTerms(c, n int) (lin, quad float64) {
	lin = float64(n) / g.PrefillTokensPerSec * 1e9
	quad = g.AttentionNsPerToken2 * (float64(n)*float64(c) + float64(n)*float64(n+1)/2)
	return lin, quad
}

// toNs rounds a float duration to ns, saturating at core.MaxTime+1 (a
// float64 too large for an int64 would convert to garbage).
func toNs(ns float64) int64 {
	if !(ns < float64(core.MaxTime)) { // also +Inf, NaN
		return core.MaxTime + 1
	}
	return int64(math.Round(ns))
}

// decodeNs is the time to generate tokens at the decode rate.
func (g *GPUSpec) decodeNs(tokens int) int64 {
	return toNs(float64(tokens) / g.DecodeTokensPerSec * 1e9)
}

// Prefill implements core.Mover: the simple engine queues the prefill for
// the GPU (simple.go).
func (s *Sim) Prefill(now int64, req core.ReqID, cached, compute int) {
	if s.err != nil {
		return
	}
	if s.ev != nil {
		s.logPrefill(now, req, cached, compute)
	}
	if s.eng != nil {
		s.eng.sch.Prefill(now, req, cached, compute)
	} else {
		s.simplePrefill(now, req, cached, compute)
	}
	if s.cfg.Tee != nil {
		s.cfg.Tee.Prefill(now, req, cached, compute)
	}
}

// Decode implements core.Mover: the simple engine decodes each request at
// a fixed rate beside the prefills, growing its KV a block at a time.
func (s *Sim) Decode(now int64, req core.ReqID, tokens int) {
	if s.err != nil {
		return
	}
	if s.eng != nil {
		s.eng.sch.Decode(req, tokens)
	} else {
		s.simpleDecode(now, req, tokens)
	}
	if s.cfg.Tee != nil {
		s.cfg.Tee.Decode(now, req, tokens)
	}
}

// Wake implements core.Mover. A wake past core.MaxTime is dropped: a
// prefetch timeout that long can never run out, and the request is admitted
// when its prefetch lands (which the links keep within the limit).
func (s *Sim) Wake(at int64, req core.ReqID) {
	if at <= core.MaxTime {
		s.heap.push(at, evWake, req)
	}
}

// Preempted implements core.Mover.
func (s *Sim) Preempted(now int64, req core.ReqID) {
	if s.ev != nil {
		s.logEv(Event{Time: now, Kind: EvPreempt, Seq: s.seqOf(req), Block: -1})
	}
	if s.eng != nil {
		s.eng.sch.Preempt(req)
	} else {
		s.simplePreempted(now, req)
	}
	if s.cfg.Tee != nil {
		s.cfg.Tee.Preempted(now, req)
	}
}

// EstimateLoad implements core.CostModel: the first hop's backlog (its
// earliest lane) and the idle time of the whole route into HBM.
func (s *Sim) EstimateLoad(now int64, tier int, bytes int64) (backlog, service int64) {
	route := s.route[tier][0]
	if len(route) == 0 {
		return 0, 0
	}
	service = s.PredictNs(tier, 0, bytes)
	if tier == s.pt && s.cfg.Net != nil { // as if the copy were remote: an upper bound
		service = core.AddTime(service, s.cfg.Net.PredictNs(s.cfg.Node, s.cfg.Node, bytes))
	}
	return s.links[route[0]].backlog(now), service
}

// EstimatePeerLoad implements core.PeerCost: a peer read crosses only the
// fabric (the holder's NIC and this node's), straight into HBM.
func (s *Sim) EstimatePeerLoad(now int64, node int, bytes int64) (backlog, service int64) {
	if s.cfg.Net == nil {
		return 0, core.MaxTime + 1
	}
	return 0, s.cfg.Net.PredictNs(node, s.cfg.Node, bytes)
}

// EstimateCompute implements core.CostModel.
func (s *Sim) EstimateCompute(cached, compute int) int64 {
	if s.eng != nil {
		return s.eng.computeNs(cached, compute)
	}
	return s.cfg.GPU.ComputeNs(cached, compute)
}

// EstimateBesideDecodes is EstimateCompute in the batched engine's steps
// as they run now, beside the sequences decoding (which share each step's
// budget and time); the simple engine decodes beside prefills for free.
func (s *Sim) EstimateBesideDecodes(cached, compute int) int64 {
	if s.eng == nil {
		return s.cfg.GPU.ComputeNs(cached, compute)
	}
	n, ctx := s.eng.sch.Decoding()
	return s.eng.sch.ComputeBeside(cached, compute, n, ctx, toNs)
}

// Overlapped implements core.CostModel.
func (s *Sim) Overlapped() bool { return s.eng == nil && !s.cfg.GPU.Serial }

// PredictNs is the model's time for one transfer of bytes from tier a to
// tier b on idle links and devices: latency + bytes/bandwidth per hop.
func (s *Sim) PredictNs(a, b int, bytes int64) int64 {
	var t int64
	for _, li := range s.route[a][b] {
		l := s.links[li]
		t = core.AddTime(t, core.AddTime(l.latency, nsFor(bytes, l.rate())))
	}
	return t
}

// OnEvent installs a function called after every event (samplers use it).
func (s *Sim) OnEvent(f func(s *Sim)) { s.hook = f }

// admissible checks what one request can cost before the core sees it, so
// that no byte count or duration derived from it can wrap: its KV bytes,
// its longest prefill and its decode.
func (s *Sim) admissible(r *core.Request) error {
	fail := func(key, format string, args ...any) error {
		return &LimitError{Key: key, Line: r.Line, Msg: fmt.Sprintf(format, args...)}
	}
	if r.InputTokens < 0 || r.OutputTokens < 0 {
		return fail("tokens", "request %d has negative token counts", r.Seq)
	}
	// Blocks are at most BlockTokens each, so the request never needs more
	// than (input + output + one block) tokens' worth of HBM.
	toks := uint64(r.InputTokens) + uint64(r.OutputTokens) + uint64(s.cfg.Core.BlockTokens)
	if hi, lo := bits.Mul64(toks, uint64(s.cfg.Core.BytesPerToken)); hi != 0 || lo > uint64(core.MaxTime) {
		return fail("model", "request %d (%d input, %d output tokens) needs more than 2^62 bytes of KV at %d bytes per token",
			r.Seq, r.InputTokens, r.OutputTokens, s.cfg.Core.BytesPerToken)
	}
	if s.eng != nil {
		return s.eng.admissible(r)
	}
	g := &s.cfg.GPU
	// The whole prompt computed from scratch is the longest prefill.
	n := max(r.InputTokens, 1)
	if lin, quad := g.computeTerms(0, n); !(lin+quad < float64(core.MaxTime)) {
		key := "gpu.prefill_tokens_per_s"
		if quad > lin {
			key = "gpu.attention_ns_per_token2"
		}
		return fail(key, "a prefill of %d tokens (prefill %g tokens/s, attention %g ns/token^2) takes %s, past the simulated-time limit of %s",
			n, g.PrefillTokensPerSec, g.AttentionNsPerToken2, span(lin+quad), limit)
	}
	if ns := g.decodeNs(r.OutputTokens); ns > core.MaxTime {
		return fail("gpu.decode_tokens_per_s", "decoding %d tokens at %g tokens/s takes %s, past the simulated-time limit of %s",
			r.OutputTokens, g.DecodeTokensPerSec, span(float64(r.OutputTokens)/g.DecodeTokensPerSec*1e9), limit)
	}
	return nil
}

// Run replays src to the end.
func (s *Sim) Run(src core.Source) (*Result, error) {
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
		if err := CheckArrival(&next, last); err != nil {
			return nil, err
		}
		last = next.Arrival
		if err := s.AdvanceTo(next.Arrival); err != nil {
			return nil, err
		}
		if err := s.Arrive(&next); err != nil {
			return nil, err
		}
	}
	return s.Finish()
}

// CheckArrival checks r's arrival time as Run does, last being the arrival
// of the request before it: within the simulated-time limit and in order.
func CheckArrival(r *core.Request, last int64) error {
	switch {
	case r.Arrival > core.MaxTime:
		return &LimitError{Key: "timestamp", Line: r.Line, Msg: fmt.Sprintf(
			"request %d arrives at %s, past the simulated-time limit of %s", r.Seq, span(float64(r.Arrival)), limit)}
	case r.Arrival < last:
		return &LimitError{Key: "timestamp", Line: r.Line, Msg: fmt.Sprintf(
			"request %d arrives at %d ns, before the one ahead of it (%d ns): arrivals must be in order", r.Seq, r.Arrival, last)}
	}
	return nil
}

// The stepping API lets a coordinator drive several Sims in one virtual
// time (Run is built on it). An arrival at t is an event like the others:
// AdvanceTo(t) queues it behind the events already due at t and processes
// events until it comes up; the Sim then stands at t, and Arrive hands it
// the request (or, if the request went elsewhere, the next AdvanceTo moves
// on). What the event's processing does after the request (starting GPU
// work) runs at the next AdvanceTo or Finish, after the next arrival has
// been queued: the order Run has always had, so that a coordinator over one
// Sim reproduces Run byte for byte.

// NextEventTime is the time of the earliest pending event; ok is false
// when none is pending.
func (s *Sim) NextEventTime() (t int64, ok bool) {
	if s.heap.len() == 0 {
		return 0, false
	}
	return s.heap.ev[0].t, true
}

// AdvanceTo processes every event due before an arrival at t (those at t
// queued before it included) and stops at that arrival. t must not be
// before the current time nor past core.MaxTime.
func (s *Sim) AdvanceTo(t int64) error {
	if err := s.mark(t); err != nil {
		return err
	}
	return s.loop()
}

// mark queues an arrival at t behind the events already due then, and
// ends the last arrival's event.
func (s *Sim) mark(t int64) error {
	if s.err != nil {
		return s.err
	}
	if t < s.now || t > core.MaxTime {
		return &LimitError{Key: "timestamp", Msg: fmt.Sprintf("an arrival at %d ns, outside %d..%d ns", t, s.now, core.MaxTime)}
	}
	s.heap.push(t, evArrival, -1)
	s.open = false
	return s.settle()
}

// settle runs what the last arrival's event had left (see after).
func (s *Sim) settle() error {
	if s.pending {
		s.pending = false
		return s.after()
	}
	return nil
}

// Arrive hands the Sim request r at r.Arrival: at the arrival AdvanceTo
// stopped at, or after advancing to r.Arrival itself. The Sim copies what
// it keeps of r.
func (s *Sim) Arrive(r *core.Request) error {
	if !s.open || s.now != r.Arrival {
		if err := s.AdvanceTo(r.Arrival); err != nil {
			return err
		}
	}
	s.open = false
	if err := s.admissible(r); err != nil {
		return err
	}
	if s.ev != nil {
		s.logArrive(r)
	}
	s.core.Arrive(s.now, r)
	return nil
}

// Inject hands the Sim request r at time at (not before the Sim's
// current time): a request another instance passes on, such as a
// disaggregated prefill's decode, whose Arrival (the user's) is earlier.
// It is an event like the others; the Sim copies r.
func (s *Sim) Inject(at int64, r *core.Request) error {
	if at < s.now || at > core.MaxTime {
		return &LimitError{Key: "timestamp", Line: r.Line, Msg: fmt.Sprintf("a hand-over at %d ns, outside %d..%d ns", at, s.now, core.MaxTime)}
	}
	if n := len(s.injects); n < cap(s.injects) {
		s.injects = s.injects[:n+1]
		q := &s.injects[n]
		blocks := append(q.Blocks[:0], r.Blocks...)
		*q = *r
		q.Blocks = blocks
	} else {
		q := *r
		q.Blocks = append([]core.Block(nil), r.Blocks...)
		s.injects = append(s.injects, q)
	}
	s.heap.push(at, evInject, -1)
	return nil
}

// Finish runs every pending event and returns the run's result.
func (s *Sim) Finish() (*Result, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.open = false
	if s.pending {
		s.pending = false
		if err := s.after(); err != nil {
			return nil, err
		}
	}
	if err := s.loop(); err != nil {
		return nil, err
	}
	return s.result(), nil
}

// loop processes events until the heap is empty or an arrival comes up.
func (s *Sim) loop() error {
	for s.heap.len() > 0 {
		if arrived, err := s.step(); arrived || err != nil {
			return err
		}
	}
	return nil
}

// step processes the earliest event; arrived says it was an arrival.
func (s *Sim) step() (arrived bool, err error) {
	e := s.heap.pop()
	if s.sampler != nil {
		s.sample(e.t)
	}
	s.now = e.t
	switch e.kind {
	case evArrival:
		s.open, s.pending = true, true
		return true, nil
	case evPrefillDone:
		s.core.PrefillDone(s.now, e.req, s.req[e.req].timing)
	case evDecodeDone:
		s.decodeStep(s.now, e.req, e.block)
	case evHop:
		s.hopDone(s.now, e.req)
	case evKick:
		s.dispatch(s.now)
	case evWake:
		s.core.Wake(s.now, e.req)
	case evStep:
		s.eng.sch.Done(s.now)
	case evNet:
		s.netDone(s.now, e.req)
	case evInject:
		r := &s.injects[s.ih]
		s.ih++
		if err := s.admissible(r); err != nil {
			return false, err
		}
		if s.ev != nil {
			s.logArrive(r)
		}
		s.core.Arrive(s.now, r)
		if s.ih == len(s.injects) { // drained: reuse the arrays from the start
			s.injects, s.ih = s.injects[:0], 0
		}
	}
	return false, s.after()
}

// after ends an event: the GPU takes up what the event made ready.
func (s *Sim) after() error {
	if s.eng != nil && s.err == nil {
		s.eng.kick(s.now)
	}
	if len(s.pq) > 0 {
		s.kickSimple(s.now)
	}
	if s.err != nil {
		return s.err
	}
	if s.hook != nil {
		s.hook(s)
	}
	return nil
}

// result fills the run's Result from the current state.
func (s *Sim) result() *Result {
	s.res.Stats = s.core.Stats
	s.res.End = s.now
	s.res.MovedByKind = s.moved
	if s.eng != nil {
		s.res.Steps = s.eng.steps
		s.res.GPUBusyNs = s.eng.busyNs
	}
	s.res.Links, s.res.Devices = nil, nil // fresh: an earlier Run's result keeps its own
	for _, l := range s.links {
		s.res.Links = append(s.res.Links, LinkStats{Name: l.name, From: l.from, To: l.to, Lanes: len(l.lanes),
			Bytes: l.bytes, Transfers: l.transfers, BusyNs: l.busy, ByKind: l.byKind})
	}
	for i, d := range s.devs {
		if d != nil {
			s.res.Devices = append(s.res.Devices, DeviceStats{Tier: i, Name: d.name, Bandwidth: d.bw,
				Bytes: d.bytes, Transfers: d.transfers, BusyNs: d.busy})
		}
	}
	res := s.res // a copy: a pointer into s would keep the whole simulation alive
	return &res
}
