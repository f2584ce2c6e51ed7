package sim

import (
	"errors"
	"fmt"
	"io"
	"math"

	"kvsim/core"
)

// LinkSpec joins tiers From and To; each direction gets its own queue.
type LinkSpec struct {
	From, To         int
	Bandwidth        float64 // bytes/s, From->To
	ReverseBandwidth float64 // bytes/s, To->From (0: same as Bandwidth)
	Latency          int64   // ns, From->To
	ReverseLatency   int64   // ns, To->From (0: same as Latency)
	Lanes            int     // transfers in flight per direction, hiding latency (0: 1)
}

// GPUSpec is the compute model.
type GPUSpec struct {
	PrefillTokensPerSec  float64
	AttentionNsPerToken2 float64 // extra ns per (new token x context token) pair
	DecodeTokensPerSec   float64 // per running request
	Layers               int     // pipeline depth of layer-wise loading
	Serial               bool    // load all cached KV before computing
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
}

// LinkStats describes one direction of one link after a run.
type LinkStats struct {
	Name      string // "from->to"
	From, To  int
	Lanes     int
	Bytes     int64
	Transfers int64
	BusyNs    int64 // the pipe moving bytes
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
}

type reqTiming struct {
	loadStart, loadDone int64
	loads               bool
	timing              core.Timing
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
	nt      int
	gpu     int64 // when the GPU finishes its current prefill
	req     []reqTiming
	landed  []int64 // [block*nt+tier]: when that copy finished arriving
	obs     core.Observer
	moved   [4]int64 // bytes by core.MoveKind
	res     Result
	hook    func(s *Sim)
	sampler *sampler
}

// New builds a simulator. obs (optional) sees every finished request.
func New(cfg Config, obs core.Observer) (*Sim, error) {
	s := &Sim{cfg: cfg, nt: len(cfg.Core.Tiers), obs: obs}
	g := cfg.GPU
	if g.PrefillTokensPerSec <= 0 || g.DecodeTokensPerSec <= 0 {
		return nil, errors.New("sim: gpu rates must be > 0")
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
		if rlat <= 0 {
			rlat = ls.Latency
		}
		for _, d := range [2]struct {
			a, b int
			bw   float64
			lat  int64
		}{{ls.From, ls.To, ls.Bandwidth, ls.Latency}, {ls.To, ls.From, rev, rlat}} {
			if d.bw <= 0 {
				return nil, fmt.Errorf("sim: link %d->%d: bandwidth must be > 0", d.a, d.b)
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
	if cfg.Core.Strategy.RecomputeWhenCheaper && cfg.Core.Cost == nil {
		cfg.Core.Cost = s
	}
	c, err := core.New(cfg.Core, s, s.observe)
	if err != nil {
		return nil, err
	}
	s.core = c
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

func (s *Sim) observe(r *core.Record) {
	if !r.Rejected {
		s.res.TTFT.Add(r.TTFT())
		s.res.Queue.Add(r.QueueNs())
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

// Move implements core.Mover: store-and-forward over the route, starting
// once the source copy has landed.
func (s *Sim) Move(now int64, req core.ReqID, b core.Block, bytes int64, from, to int, kind core.MoveKind) {
	need := (int(b) + 1) * s.nt
	if len(s.landed) < need {
		t := make([]int64, max(need, 2*len(s.landed))) // one exact allocation per doubling
		copy(t, s.landed)
		s.landed = t
	}
	t := max(now, s.landed[int(b)*s.nt+from])
	for _, li := range s.route[from][to] {
		t = s.links[li].transfer(t, bytes)
	}
	s.landed[int(b)*s.nt+to] = t
	s.moved[kind] += bytes
	if s.cfg.Tee != nil {
		s.cfg.Tee.Move(now, req, b, bytes, from, to, kind)
	}
	if kind == core.PrefetchMove {
		s.heap.pushMove(t, req, b)
		return
	}
	if req >= 0 {
		rt := s.timing(req)
		if !rt.loads {
			rt.loads, rt.loadStart, rt.loadDone = true, now, now
		}
		rt.loadDone = max(rt.loadDone, t)
	}
}

// Drop implements core.Mover; dropping costs nothing in the model.
func (s *Sim) Drop(now int64, b core.Block, tier int) {
	if s.cfg.Tee != nil {
		s.cfg.Tee.Drop(now, b, tier)
	}
}

// ComputeNs is the prefill time of n new tokens after c cached ones.
func (g *GPUSpec) ComputeNs(c, n int) int64 {
	lin := float64(n) / g.PrefillTokensPerSec * 1e9
	quad := g.AttentionNsPerToken2 * (float64(n)*float64(c) + float64(n)*float64(n+1)/2)
	return int64(math.Round(lin + quad))
}

// Prefill implements core.Mover. The GPU runs one prefill at a time. With
// serial loading, compute starts once every load landed; layer-wise, layer
// i computes as soon as its share of the KV arrived (a two-stage pipeline).
func (s *Sim) Prefill(now int64, req core.ReqID, cached, compute int) {
	rt := s.timing(req)
	g := &s.cfg.GPU
	cn := g.ComputeNs(cached, compute)
	ld := now
	if rt.loads {
		ld = max(now, rt.loadDone)
	}
	start := max(now, s.gpu)
	var end int64
	if g.Serial {
		end = max(start, ld) + cn
	} else {
		L := float64(g.Layers)
		tl := float64(ld - now)
		c := float64(cn) / L
		end = max(start+cn, now+int64(math.Round(tl/L+float64(cn))), now+int64(math.Round(tl+c)))
	}
	s.gpu = end
	rt.timing = core.Timing{ComputeNs: cn}
	if rt.loads {
		rt.timing.LoadNs = rt.loadDone - rt.loadStart
	}
	rt.loads = false
	s.heap.push(end, evPrefillDone, req)
	if s.cfg.Tee != nil {
		s.cfg.Tee.Prefill(now, req, cached, compute)
	}
}

// Decode implements core.Mover: decoding runs beside prefills at a fixed
// per-request rate and holds the request's HBM until it ends.
func (s *Sim) Decode(now int64, req core.ReqID, tokens int) {
	d := int64(math.Round(float64(tokens) / s.cfg.GPU.DecodeTokensPerSec * 1e9))
	s.heap.push(now+d, evDecodeDone, req)
	if s.cfg.Tee != nil {
		s.cfg.Tee.Decode(now, req, tokens)
	}
}

// Wake implements core.Mover.
func (s *Sim) Wake(at int64, req core.ReqID) { s.heap.push(at, evWake, req) }

// EstimateLoad implements core.CostModel: the first hop's backlog (its
// earliest lane) and the idle time of the whole route into HBM.
func (s *Sim) EstimateLoad(now int64, tier int, bytes int64) (backlog, service int64) {
	route := s.route[tier][0]
	if len(route) == 0 {
		return 0, 0
	}
	return s.links[route[0]].backlog(now), s.PredictNs(tier, 0, bytes)
}

// EstimateCompute implements core.CostModel.
func (s *Sim) EstimateCompute(cached, compute int) int64 { return s.cfg.GPU.ComputeNs(cached, compute) }

// Overlapped implements core.CostModel.
func (s *Sim) Overlapped() bool { return !s.cfg.GPU.Serial }

// PredictNs is the model's time for one transfer of bytes from tier a to
// tier b on idle links and devices: latency + bytes/bandwidth per hop.
func (s *Sim) PredictNs(a, b int, bytes int64) int64 {
	var t int64
	for _, li := range s.route[a][b] {
		l := s.links[li]
		t += l.latency + nsFor(bytes, l.rate())
	}
	return t
}

// OnEvent installs a function called after every event (samplers use it).
func (s *Sim) OnEvent(f func(s *Sim)) { s.hook = f }

// Run replays src to the end.
func (s *Sim) Run(src core.Source) (*Result, error) {
	var next core.Request
	have := false
	read := func() error {
		err := src.Next(&next)
		if err == io.EOF {
			have = false
			return nil
		}
		if err != nil {
			return err
		}
		have = true
		s.heap.push(next.Arrival, evArrival, -1)
		return nil
	}
	if err := read(); err != nil {
		return nil, err
	}
	for s.heap.len() > 0 {
		e := s.heap.pop()
		if s.sampler != nil {
			s.sample(e.t)
		}
		s.now = e.t
		switch e.kind {
		case evArrival:
			if have {
				s.core.Arrive(s.now, &next)
			}
			if err := read(); err != nil {
				return nil, err
			}
		case evPrefillDone:
			s.core.PrefillDone(s.now, e.req, s.req[e.req].timing)
		case evDecodeDone:
			s.core.DecodeDone(s.now, e.req)
		case evMoveDone:
			s.core.MoveDone(s.now, e.req, e.block)
		case evWake:
			s.core.Wake(s.now, e.req)
		}
		if s.hook != nil {
			s.hook(s)
		}
	}
	s.res.Stats = s.core.Stats
	s.res.End = s.now
	s.res.MovedByKind = s.moved
	s.res.Links, s.res.Devices = nil, nil // fresh: an earlier Run's result keeps its own
	for _, l := range s.links {
		s.res.Links = append(s.res.Links, LinkStats{Name: l.name, From: l.from, To: l.to, Lanes: len(l.lanes),
			Bytes: l.bytes, Transfers: l.transfers, BusyNs: l.busy})
	}
	for i, d := range s.devs {
		if d != nil {
			s.res.Devices = append(s.res.Devices, DeviceStats{Tier: i, Name: d.name, Bandwidth: d.bw,
				Bytes: d.bytes, Transfers: d.transfers, BusyNs: d.busy})
		}
	}
	res := s.res // a copy: a pointer into s would keep the whole simulation alive
	return &res, nil
}
