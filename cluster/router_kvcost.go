package cluster

import (
	"math"

	"kvsim/core"
	"kvsim/param"
)

func init() {
	RegisterRouter(RouterSpec{Name: "kv_cost", Rank: 4, Brief: "the least Dynamo cost",
		Reads: "`QueuedTokens`, `RunningTokens`, `Queued`, `Running`, `Tiers`, `PoolTier`, `Peers`",
		State: "with `kv_events = false`, its own index of routed blocks (TTL, LRU bound)",
		Keys: []param.Key{
			{Name: "overlap_weight", Type: param.Number, Default: 1.0, Min: param.AtLeast0, Example: "1.0",
				Doc: "kv_cost: weight of the blocks to prefill against the blocks to decode (Dynamo's prefill_load_scale)"},
			{Name: "host_weight", Type: param.Number, Default: 0.75, Min: param.AtLeast0, FMax: 1, Example: "0.75",
				Msg: "must be within 0..1 (above 1 a lower-tier hit would beat an hbm hit), got %g",
				Doc: "kv_cost: the share of a hit a block found first in tier 1 is credited (Dynamo's host_cache_hit_weight)"},
			{Name: "disk_weight", Type: param.Number, Default: 0.75, Min: param.AtLeast0, FMax: 1, Example: "0.25",
				Msg: "must be within 0..1, got %g",
				Doc: "kv_cost: the share of a hit a block found first in tier 2 or below is credited (Dynamo: disk_cache_hit_weight 0.25; 0.75 keeps the earlier credit)"},
			{Name: "overlap_credit", Type: param.Number, Default: 1.0, Min: param.AtLeast0, FMax: 1, Example: "1.0",
				Msg: "must be within 0..1, got %g",
				Doc: "kv_cost: the share of a hit an hbm block is credited (Dynamo's overlap_score_credit)"},
			{Name: "credit_decay", Type: param.Number, Default: 0.0, Min: param.AtLeast0, Example: "0",
				Doc: "kv_cost: the hbm credit is divided by 1 + this x the instance's prefill backlog above the least, in request sizes (Dynamo's overlap_score_credit_decay)"},
			{Name: "shared_weight", Type: param.Number, Default: 0.0, Min: param.AtLeast0, FMax: 1, Example: "0.5",
				Msg: "must be within 0..1, got %g",
				Doc: "kv_cost: > 0 credits a block found first in the pooled tier this share instead of its tier's (Dynamo's shared_cache_multiplier)"},
			{Name: "peer_weight", Type: param.Number, Default: 0.0, Min: param.AtLeast0, FMax: 1, Example: "0.5",
				Msg: "must be within 0..1, got %g",
				Doc: "kv_cost: the share of a hit a block another instance would serve from its host tier is credited ([cluster] peer_fetch; not Dynamo's: 0 ignores peers)"},
			{Name: "active_request_weight", Type: param.Number, Default: 0.0, Min: param.AtLeast0, Example: "0",
				Doc: "kv_cost: blocks of cost per queued or running request (Dynamo's decode_active_request_weight)"},
			{Name: "temperature", Type: param.Number, Default: 0.0, Min: param.AtLeast0, Example: "0",
				Doc: "kv_cost: 0 takes the least cost; above, a softmax sample over the normalised costs (Dynamo's router_temperature)"},
			{Name: "sample_seed", Type: param.Int, Default: int64(0), Min: param.AtLeast0, Example: "0",
				Doc: "kv_cost: seeds the temperature sample (with the request's sequence number: a run is reproducible)"},
			{Name: "kv_events", Type: param.Bool, Default: true, Example: "true",
				Doc: "kv_cost: false scores its own index of routed blocks instead of the View's tiers (Dynamo's --no-kv-events)"},
			{Name: "router_ttl", Type: param.Number, Default: 120.0, Min: param.AtLeast0, Example: "120",
				Doc: "kv_cost: seconds a routed block stays in the index without events (Dynamo's router_ttl_secs)"},
			{Name: "index_blocks", Type: param.Int, Default: int64(1 << 20), Min: param.AtLeast1, Example: "1048576",
				Doc: "kv_cost: blocks the index without events keeps per instance, least recently routed dropped (Dynamo's router_max_tree_size)"},
		},
		New: func(p Params) Router { return newKVCost(p) }})
}

// kvCost is Dynamo's KV router: the least cost wins, or a softmax sample.
type kvCost struct {
	p                                 Params
	disk, credit, decay, shared, reqW float64
	peer                              float64
	temp                              float64
	seed                              uint64
	approx                            []approxIndex // nil with KV events
	ttl                               int64
	tiers                             []uint8
	costs                             []float64
}

func newKVCost(p Params) *kvCost {
	g := func(k string) float64 { return p.Keys.Get(k).(float64) }
	k := &kvCost{p: p, disk: g("disk_weight"), credit: g("overlap_credit"), decay: g("credit_decay"),
		shared: g("shared_weight"), reqW: g("active_request_weight"), temp: g("temperature"), peer: g("peer_weight"),
		seed: uint64(p.Keys.Get("sample_seed").(int64))}
	if !p.Keys.Get("kv_events").(bool) {
		k.ttl = int64(g("router_ttl") * 1e9)
		k.approx = []approxIndex{}
	}
	return k
}

func (*kvCost) Name() string { return "kv_cost" }

func (k *kvCost) Route(now int64, r *core.Request, v View) (int, bool) {
	n := v.Instances()
	if n <= 0 {
		return 0, true
	}
	for k.approx != nil && len(k.approx) < n {
		k.approx = append(k.approx, newApproxIndex(int(k.p.Keys.Get("index_blocks").(int64))))
	}
	k.costs = k.costs[:0]
	best, bestCost := 0, math.Inf(1)
	minQ := int64(math.MaxInt64)
	for i := range n {
		minQ = min(minQ, v.QueuedTokens(i))
	}
	for i := range n {
		c := k.cost(now, r, v, i, minQ)
		k.costs = append(k.costs, c)
		if c < bestCost {
			best, bestCost = i, c
		}
	}
	if k.temp > 0 {
		best = softmaxPick(k.costs, k.temp, unitSample(k.seed, uint64(r.Seq)))
	}
	if k.approx != nil {
		k.approx[best].insert(now, now+k.ttl, r.Blocks)
	}
	return best, false
}

// cost is Dynamo's logit for r on instance i, in blocks (B tokens a block,
// n the prompt's): prefill = max(0, queued/B + n - credit), with credit =
// overlap_credit x decay x hbm run + host_weight x tier-1 + disk_weight x
// deeper blocks of the cached prefix past that run (shared_weight for the
// pool's when > 0), + peer_weight x the blocks it would read from peers;
// cost = overlap_weight x prefill + running/B + n +
// active_request_weight x requests. decay = 1 / (1 + credit_decay x
// (queued - least queued)/B/n).
func (k *kvCost) cost(now int64, r *core.Request, v View, i int, minQ int64) float64 {
	nb := float64(len(r.Blocks))
	bt := float64(blockTokens(k.p, r))
	var hbm, host, disk, shared float64
	if k.approx != nil {
		hbm = float64(k.approx[i].match(now, r.Blocks)) // the index knows no tiers
	} else {
		k.tiers = v.Tiers(i, r.Blocks, k.tiers[:0])
		run := true
		pt := v.PoolTier()
		for _, t := range k.tiers {
			switch {
			case run && t == 0:
				hbm++
			case k.shared > 0 && int(t) == pt:
				run = false
				shared++
			case t <= 1:
				run = false
				host++
			default:
				run = false
				disk++
			}
		}
	}
	decay := 1.0
	if k.decay > 0 && nb > 0 {
		excess := float64(v.QueuedTokens(i)-minQ) / bt / nb
		decay = 1 / (1 + k.decay*excess)
	}
	credit := k.credit*decay*hbm + k.p.HostWeight*host + k.disk*disk + k.shared*shared
	if k.peer > 0 && k.approx == nil { // the index without events knows no peers
		credit += k.peer * float64(v.Peers(i, r.Blocks))
	}
	prefill := max(float64(v.QueuedTokens(i))/bt+nb-credit, 0)
	decode := float64(v.RunningTokens(i))/bt + nb
	return k.p.OverlapWeight*prefill + decode + k.reqW*float64(v.Queued(i)+v.Running(i))
}

// softmaxPick samples an index with probability proportional to
// exp(-(c - min)/((max - min) x temp)) at u in [0, 1); all equal: uniform.
func softmaxPick(costs []float64, temp, u float64) int {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range costs {
		lo, hi = min(lo, c), max(hi, c)
	}
	w := make([]float64, len(costs))
	sum := 0.0
	for i, c := range costs {
		w[i] = 1
		if hi > lo {
			w[i] = math.Exp(-(c - lo) / ((hi - lo) * temp))
		}
		sum += w[i]
	}
	acc := 0.0
	for i := range w {
		acc += w[i] / sum
		if u < acc {
			return i
		}
	}
	return len(w) - 1
}

// unitSample is a uniform draw in [0, 1) from (seed, seq): splitmix64, so
// the draw of a request does not depend on the requests routed before it.
func unitSample(seed, seq uint64) float64 {
	z := seed*0x9e3779b97f4a7c15 + seq + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// approxIndex is a router's guess of one instance's cache without KV
// events: the blocks routed to it, each until its TTL, at most max of them
// (the least recently routed dropped). Refreshes push a new entry; an old
// one is skipped when popped.
type approxIndex struct {
	until map[core.Block]int64
	fifo  []approxEntry // by expiry, which is routing order
	head  int
	max   int
}

type approxEntry struct {
	b     core.Block
	until int64
}

func newApproxIndex(max int) approxIndex {
	return approxIndex{until: map[core.Block]int64{}, max: max}
}

func (a *approxIndex) expire(now int64) {
	for a.head < len(a.fifo) && (a.fifo[a.head].until <= now || len(a.until) > a.max) {
		e := a.fifo[a.head]
		if a.until[e.b] == e.until {
			delete(a.until, e.b)
		}
		a.head++
	}
	if a.head > 1024 && 2*a.head > len(a.fifo) {
		a.fifo = a.fifo[:copy(a.fifo, a.fifo[a.head:])]
		a.head = 0
	}
}

// match is the leading blocks the index holds at now.
func (a *approxIndex) match(now int64, blocks []core.Block) int {
	a.expire(now)
	n := 0
	for _, b := range blocks {
		if _, ok := a.until[b]; !ok {
			break
		}
		n++
	}
	return n
}

func (a *approxIndex) insert(now, until int64, blocks []core.Block) {
	for _, b := range blocks {
		a.until[b] = until
		a.fifo = append(a.fifo, approxEntry{b, until})
	}
	a.expire(now)
}

// blockTokens is p.BlockTokens, or r's tokens per block when that is 0.
func blockTokens(p Params, r *core.Request) int {
	if p.BlockTokens > 0 {
		return p.BlockTokens
	}
	if len(r.Blocks) == 0 {
		return max(r.InputTokens, 1)
	}
	return max((r.InputTokens+len(r.Blocks)-1)/len(r.Blocks), 1)
}
