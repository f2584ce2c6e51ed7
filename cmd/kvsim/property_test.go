package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/experiment"
	"kvsim/policy"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// The property test: random small valid scenarios x random small traces,
// each run through the code kvsim run uses (scenario.Load, experiment.SimConfig,
// experiment.OpenTrace, workload.NewSource, sim), checked after every event. A case
// is seeded, so a failure names its seed; KVSIM_PROPERTY_SEED=N reruns
// only that case and prints it, KVSIM_PROPERTY_CASES=N runs N cases.

// propCase is one generated input: a scenario file and a trace.
type propCase struct {
	seed  uint64
	toml  string
	lines []propLine
}

// propLine is one trace line; bad lines are written as they are.
type propLine struct {
	ts      string
	in, out int
	ids     []int64
	bad     string
}

func (c *propCase) traceText(relabel map[int64]int64) string {
	var b strings.Builder
	for _, l := range c.lines {
		if l.bad != "" {
			b.WriteString(l.bad + "\n")
			continue
		}
		fmt.Fprintf(&b, `{"timestamp": %s, "input_length": %d, "output_length": %d, "hash_ids": [`, l.ts, l.in, l.out)
		for i, h := range l.ids {
			if i > 0 {
				b.WriteString(", ")
			}
			if relabel != nil {
				h = relabel[h]
			}
			b.WriteString(strconv.FormatInt(h, 10))
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// logUniform is a number between lo and hi, spread over the decades.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

// genCase builds a valid scenario and a trace for it. Capacities are a few
// blocks, some less than one, so that rejections, evictions, refused
// demotions and queueing all happen.
func genCase(seed uint64) *propCase {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("name = \"prop\"\nseed = %d\n", r.IntN(1000))

	layers, heads, dim, bt := 1+r.IntN(4), 1+r.IntN(2), pick(r, 1, 2, 4, 8), pick(r, 1, 2, 4, 8, 16)
	dtype := pick(r, scenario.DTypes()...)
	dsize := map[string]int{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}[dtype]
	bpt := int64(2 * layers * heads * dim * dsize)
	block := bpt * int64(bt)
	w("[model]\nlayers = %d\nkv_heads = %d\nhead_dim = %d\ndtype = %q\nblock_tokens = %d\n", layers, heads, dim, dtype, bt)

	// A sixth of the cases are shaped for prefetching: three or more tiers,
	// a small tier 1, slow links, slow decoding and bunched arrivals, so
	// that requests queue while their prefix sits in a storage tier.
	pf := r.IntN(6) == 0
	decode := logUniform(r, 10, 1e4)
	if pf {
		decode = logUniform(r, 10, 100)
	}
	w("[gpu]\nprefill_tokens_per_s = %g\ndecode_tokens_per_s = %g\nload = %q\n",
		logUniform(r, 1e3, 1e6), decode, pick(r, "layerwise", "serial"))
	if r.IntN(3) == 0 {
		w("attention_ns_per_token2 = %g\n", logUniform(r, 1e-3, 10))
	}
	// Both engines; the batched one with budgets, sequence limits and
	// pages small enough that chunking, the limit and preemption all show.
	w("engine = %q\n", pick(r, "simple", "batched"))
	if r.IntN(2) == 0 {
		w("max_num_batched_tokens = %d\n", pick(r, 1, 3, 8, 64))
	}
	if r.IntN(2) == 0 {
		w("max_num_seqs = %d\n", pick(r, 1, 2, 5))
	}
	w("page_tokens = %d\n", pick(r, 1, 2, 4, 16))

	rate := func() string {
		if pf {
			return pick(r, "1000", "20000", "1e6") // bytes/s: transfers as slow as decoding
		}
		if r.IntN(2) == 0 {
			return fmt.Sprintf("%g", math.Round(logUniform(r, 1e5, 1e11)))
		}
		return strconv.Quote(pick(r, "1MB/s", "50MB/s", "1GB/s", "7GB/s", "25GB/s", "1TB/s"))
	}
	lat := func() string { return strconv.Quote(pick(r, "0us", "100ns", "1us", "20us", "1ms")) }

	nt := pick(r, 1, 2, 3, 3, 4, 4)
	if pf {
		nt = pick(r, 3, 4)
	}
	names := make([]string, nt)
	used := map[string]bool{"hbm": true}
	for i := 0; i < nt; i++ {
		kind := "hbm"
		if i > 0 {
			kind = pick(r, "pinned", "dram", "ssd", "nvmeof", "remote_dram")
		}
		w("[[tier]]\nkind = %q\n", kind)
		names[i] = kind
		if (i > 0 && used[kind]) || r.IntN(3) == 0 {
			names[i] = fmt.Sprintf("t%d", i)
			w("name = %q\n", names[i])
		}
		used[kind] = true
		var capacity int64
		switch {
		case i == 0 && pf:
			capacity = int64(4+r.IntN(7))*block + 8*bpt
		case i == 1 && pf:
			capacity = int64(1+r.IntN(2)) * block
		case i == 0:
			capacity = int64(1+r.IntN(pick(r, 3, 12, 40)))*block + r.Int64N(block)
			if r.IntN(4) > 0 {
				capacity += 8 * bpt // room for some generated tokens
			}
		case r.IntN(6) == 0:
			capacity = 1 + r.Int64N(block) // less than a block: every copy refused
		case i == 1 && r.IntN(2) == 0:
			capacity = int64(1+r.IntN(3))*block + r.Int64N(block) // pushes blocks further down
		default:
			capacity = int64(1+r.IntN(pick(r, 4, 16, 64)))*block + r.Int64N(block)
		}
		w("capacity = %d\n", capacity)
		if pf || r.IntN(2) == 0 {
			w("bandwidth = %s\n", rate())
		}
		if r.IntN(2) == 0 {
			w("latency = %s\n", lat())
		}
		if i > 0 && r.IntN(4) == 0 {
			w("shared_bandwidth = true\n")
		}
	}
	if nt > 1 && r.IntN(3) > 0 { // a tree, sometimes with one more link making a cycle
		linked := map[[2]int]bool{}
		link := func(a, c int) {
			linked[[2]int{min(a, c), max(a, c)}] = true
			if r.IntN(2) == 0 {
				a, c = c, a
			}
			w("[[link]]\nfrom = %q\nto = %q\n", names[a], names[c])
			if r.IntN(3) > 0 {
				w("bandwidth = %s\n", rate())
			}
			if r.IntN(3) == 0 {
				w("reverse_bandwidth = %s\n", rate())
			}
			if r.IntN(2) == 0 {
				w("latency = %s\n", lat())
			}
			if r.IntN(4) == 0 {
				w("reverse_latency = %s\n", lat())
			}
			if r.IntN(2) == 0 {
				w("lanes = %d\n", 1+r.IntN(4))
			}
		}
		for i := 1; i < nt; i++ {
			link(r.IntN(i), i)
		}
		var free [][2]int
		for a := 0; a < nt; a++ {
			for c := a + 1; c < nt; c++ {
				if !linked[[2]int{a, c}] {
					free = append(free, [2]int{a, c})
				}
			}
		}
		if len(free) > 0 && r.IntN(3) == 0 {
			e := pick(r, free...)
			link(e[0], e[1])
		}
	}

	lines := genTrace(r, bt, pf)
	if r.IntN(12) == 0 { // the generator's own trace, made from the scenario's seed
		w("[workload]\nformat = \"synthetic\"\nrequests = %d\nrate = %g\nturns = %g\nsystem_tokens = %d\nuser_tokens = %d\noutput_tokens = %d\nthink = \"%dms\"\nmax_context = %d\n",
			1+r.IntN(40), logUniform(r, 0.5, 200), 1+3*r.Float64(), r.IntN(8*bt), 1+r.IntN(8*bt), 1+r.IntN(4*bt), r.IntN(2000), 8*bt+r.IntN(32*bt))
	} else {
		w("[workload]\ntrace = \"trace.jsonl\"\n")
	}
	if r.IntN(3) == 0 {
		w("speedup = %g\n", pick(r, 0.5, 2.0, 3.7, 100.0))
	}
	if r.IntN(6) == 0 {
		w("limit = %d\n", 1+r.IntN(len(lines)))
	}
	if r.IntN(5) == 0 {
		w("skip_bad_lines = true\n")
		i := r.IntN(len(lines) + 1)
		bad := propLine{bad: pick(r, `{"timestamp": "soon"}`, `not json`, `{"timestamp": 1, "input_length": 9, "output_length": 1, "hash_ids": []}`)}
		lines = append(lines[:i], append([]propLine{bad}, lines[i:]...)...)
	}

	evictions := policy.Names()
	for i, n := 0, 1+r.IntN(3); i < n; i++ {
		ev := pick(r, evictions...)
		prefetch := pick(r, "", "off", "best_effort", "wait_complete", "timeout")
		if pf {
			prefetch = pick(r, "best_effort", "wait_complete", "timeout")
		}
		w("[[policy]]\nname = \"p%d\"\neviction = %q\n", i, ev)
		for _, kv := range [][2]string{
			{"admission", pick(r, "", "always", "after:1", "after:2", "after:3")},
			{"write", pick(r, "", "back", "through")},
			{"promotion", pick(r, "", "always", "second-hit", "never")},
			{"prefetch", prefetch},
			{"recompute", pick(r, "", "never", "when-cheaper")},
		} {
			if kv[1] != "" {
				w("%s = %q\n", kv[0], kv[1])
			}
			if kv[1] == "timeout" {
				w("prefetch_timeout = %s\n", strconv.Quote(pick(r, "1us", "100us", "5ms")))
			}
		}
		if r.IntN(3) == 0 {
			for k, v := range policyParams(r, ev) {
				w("%s = %g\n", k, v)
			}
		}
	}
	return &propCase{seed: seed, toml: b.String(), lines: lines}
}

// policyParams draws parameters in each policy's documented range.
func policyParams(r *rand.Rand, ev string) map[string]float64 {
	switch ev {
	case "gdsf":
		return map[string]float64{"cost_exponent": pick(r, 0.0, 0.5, 1.0, 2.0)}
	case "s3fifo":
		return map[string]float64{"small_fraction": pick(r, 0.01, 0.1, 0.5, 0.9), "move_threshold": pick(r, 1.0, 2.0, 3.0)}
	case "mooncake":
		return map[string]float64{"evict_fraction": pick(r, 0.01, 0.05, 1.0), "high_watermark": pick(r, 0.0, 0.9, 1.0)}
	case "wtinylfu":
		return map[string]float64{"window": pick(r, 0.0, 0.01, 0.5), "protected": pick(r, 0.0, 0.8, 1.0), "doorkeeper": pick(r, 0.0, 1.0)}
	case "2q":
		return map[string]float64{"kin": pick(r, 0.1, 0.25, 0.9), "kout": pick(r, 0.0, 0.5, 2.0)}
	}
	return nil
}

// genTrace makes requests that share prefixes (a conversation's next turn
// extends an earlier prompt), repeat ids inside one prompt, and sometimes
// have no blocks at all.
func genTrace(r *rand.Rand, bt int, bunched bool) []propLine {
	n := 1 + r.IntN(pick(r, 5, 30, 60))
	if bunched {
		n = 10 + r.IntN(30)
	}
	var lines []propLine
	var ms float64
	next := int64(r.IntN(1000))
	for i := 0; i < n; i++ {
		var ids []int64
		switch {
		case bunched && i >= n/2 && i > 0: // the burst: whole prompts of the first half
			ids = append(ids, lines[r.IntN(n/2)].ids...)
		case len(lines) > 0 && r.IntN(4) > 0:
			prev := lines[max(0, len(lines)-1-r.IntN(pick(r, 3, 10, 100)))].ids
			ids = append(ids, prev[:r.IntN(len(prev)+1)]...)
		}
		for k := r.IntN(6); k > 0; k-- {
			switch {
			case len(ids) > 0 && r.IntN(8) == 0:
				ids = append(ids, ids[r.IntN(len(ids))]) // the same id twice in a prompt
			default:
				ids = append(ids, next)
				next += 1 + int64(r.IntN(3))
			}
		}
		in := 0
		if len(ids) > 0 {
			in = len(ids)*bt - r.IntN(bt)
		}
		switch k := r.IntN(4); {
		case bunched && i >= n/2:
			ms += float64(r.IntN(3))
		case bunched:
			ms += 1000 + float64(r.IntN(3000)) // the first half drains: its blocks go down
		case k == 0: // same instant as the previous one
		case k == 1:
			ms += math.Round(r.Float64()*2000) / 4
		case k == 2:
			ms += float64(r.IntN(5))
		default:
			ms += float64(r.IntN(300))
		}
		ts := strconv.FormatFloat(ms, 'f', -1, 64)
		out := pick(r, 0, 1, r.IntN(2*bt+1), r.IntN(8*bt+1), r.IntN(8*bt+1), r.IntN(500))
		if bunched {
			out = r.IntN(2*bt + 1)
		}
		lines = append(lines, propLine{ts: ts, in: in, out: out, ids: ids})
	}
	return lines
}

// violation is a broken property, raised by panic from inside the
// simulator's callbacks and recovered by runPolicy.
type violation struct{ msg string }

func failf(format string, args ...any) { panic(violation{fmt.Sprintf(format, args...)}) }

// failure is a broken property or a panic, as opposed to an error the run
// reports (a bad trace line, a limit).
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

// tracker follows every command the core gives (sim.Config.Tee) and checks
// them against the core's state: a copy appears in a tier only by a move
// (or, in HBM, by computing it), disappears only by a drop, and a move
// carries the block's own bytes.
type tracker struct {
	sim      *sim.Sim
	src      *recSource // the requests so far: their blocks are the ones to check
	nt       int
	block    int64    // bytes of a full block
	bpt      int64    // bytes per token
	have     [][]bool // [block][tier]: copy the commands account for
	moved    [4]int64
	hopBytes int64 // bytes x hops over all moves
	hops     int64
	link     map[string][2]int64 // "a->b": bytes, transfers (tree topologies)
	dev      []int64             // bytes through each tier's shared pipe (tree)
	paths    [][][][2]int        // [from][to]: hops of the unique path, nil if not a tree
	dist     [][]int
	names    []string
}

func (k *tracker) copyAt(b core.Block, t int) *bool {
	for int(b) >= len(k.have) {
		k.have = append(k.have, make([]bool, k.nt))
	}
	return &k.have[b][t]
}

func (k *tracker) Move(now int64, req core.ReqID, b core.Block, bytes int64, from, to int, kind core.MoveKind) {
	c := k.sim.Core()
	if bytes != c.BlockBytes(b) || bytes <= 0 || bytes > k.block || bytes%k.bpt != 0 {
		failf("t=%d: move of block %d carries %d bytes, the block has %d (a full one %d, %d per token)", now, b, bytes, c.BlockBytes(b), k.block, k.bpt)
	}
	if from != 0 && !*k.copyAt(b, from) {
		failf("t=%d: block %d moved %d->%d from a tier that holds no copy", now, b, from, to)
	}
	if *k.copyAt(b, to) {
		failf("t=%d: block %d moved %d->%d onto a copy already there", now, b, from, to)
	}
	*k.copyAt(b, to) = true
	k.moved[kind] += bytes
	d := int64(k.dist[from][to])
	k.hopBytes += bytes * d
	k.hops += d
	if k.paths != nil {
		for _, h := range k.paths[from][to] {
			name := k.names[h[0]] + "->" + k.names[h[1]]
			v := k.link[name]
			k.link[name] = [2]int64{v[0] + bytes, v[1] + 1}
			k.dev[h[0]] += bytes
			k.dev[h[1]] += bytes
		}
	}
}

func (k *tracker) Drop(now int64, b core.Block, tier int) {
	if !*k.copyAt(b, tier) {
		failf("t=%d: drop of block %d from tier %d, which holds no copy", now, b, tier)
	}
	*k.copyAt(b, tier) = false
}

func (k *tracker) Prefill(now int64, req core.ReqID, cached, compute int) {
	if cached < 0 || compute < 0 {
		failf("t=%d: prefill of %d cached + %d computed tokens", now, cached, compute)
	}
}
func (k *tracker) Decode(int64, core.ReqID, int) {}
func (k *tracker) Wake(int64, core.ReqID)        {}
func (k *tracker) Preempted(int64, core.ReqID)   {}

// check compares the commands with the core's residency after an event.
func (k *tracker) check(now int64) {
	c := k.sim.Core()
	for _, r := range k.src.reqs {
		for _, b := range r.Blocks {
			k.copyAt(b, 0)
		}
	}
	for b := range k.have {
		for t := 0; t < k.nt; t++ {
			res, have := c.Resident(core.Block(b), t), k.have[b][t]
			switch {
			case t == 0 && res && !have: // computed into HBM: no move makes it
				k.have[b][t] = true
			case res != have:
				failf("t=%d: block %d in tier %d: resident=%v, but the moves and drops say %v (a copy created or lost unseen)", now, b, t, res, have)
			}
		}
	}
}

// topology: hop distances, and the unique paths when the links form a tree.
func topology(sc *scenario.Scenario) (dist [][]int, paths [][][][2]int) {
	n := len(sc.Tiers)
	adj := make([][]int, n)
	for _, l := range sc.Links {
		adj[l.From] = append(adj[l.From], l.To)
		adj[l.To] = append(adj[l.To], l.From)
	}
	dist = make([][]int, n)
	tree := len(sc.Links) == n-1
	if tree {
		paths = make([][][][2]int, n)
	}
	for a := 0; a < n; a++ {
		d, via := make([]int, n), make([]int, n)
		for i := range d {
			d[i] = -1
		}
		d[a] = 0
		q := []int{a}
		for len(q) > 0 {
			x := q[0]
			q = q[1:]
			for _, y := range adj[x] {
				if d[y] < 0 {
					d[y], via[y] = d[x]+1, x
					q = append(q, y)
				}
			}
		}
		dist[a] = d
		if tree {
			paths[a] = make([][][2]int, n)
			for b := 0; b < n; b++ {
				for y := b; y != a; y = via[y] {
					paths[a][b] = append([][2]int{{via[y], y}}, paths[a][b]...)
				}
			}
		}
	}
	return dist, paths
}

// recSource records what the workload source yields.
type recSource struct {
	src  *workload.Source
	reqs []core.Request
}

func (s *recSource) Next(r *core.Request) error {
	err := s.src.Next(r)
	if err == nil {
		c := *r
		c.Blocks = append([]core.Block(nil), r.Blocks...)
		s.reqs = append(s.reqs, c)
	}
	return err
}

// policyOutcome is everything one policy's run produced; two runs of the
// same case must give equal outcomes.
type policyOutcome struct {
	Res     sim.Result
	Records []core.Record
	Series  *sim.Series
	Reqs    int64
}

// runPolicy simulates one policy of sc as kvsim run does; with check, it
// verifies the properties after every event. Panics and violations come
// back as errors.
func runPolicy(sc *scenario.Scenario, i int, check bool) (out *policyOutcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			if v, ok := p.(violation); ok {
				err = &failure{v.msg}
			} else {
				err = &failure{fmt.Sprintf("panic: %v\n%s", p, debug.Stack())}
			}
		}
	}()
	p := sc.Policies[i]
	opt := experiment.TraceOptions(sc, false, 0)
	var fut policy.Future
	if p.Offline() {
		if fut, err = experiment.BuildFuture(context.Background(), sc, opt); err != nil {
			return nil, fmt.Errorf("future: %v", err)
		}
	}
	cfg := experiment.SimConfig(sc, p, fut)
	out = &policyOutcome{}
	var k *tracker
	if check {
		dist, paths := topology(sc)
		k = &tracker{nt: len(sc.Tiers), block: sc.Model.BytesPerBlock(), bpt: sc.Model.BytesPerToken(), link: map[string][2]int64{}, dev: make([]int64, len(sc.Tiers)), dist: dist, paths: paths}
		for _, t := range sc.Tiers {
			k.names = append(k.names, t.Name)
		}
		cfg.Tee = k
	}
	s, err := sim.New(cfg, func(r *core.Record) {
		c := *r
		c.HitBlocks = append([]int64(nil), r.HitBlocks...)
		out.Records = append(out.Records, c)
	})
	if err != nil {
		return nil, &failure{fmt.Sprintf("a loaded scenario does not build: %v", err)}
	}
	rd, err := experiment.OpenTrace(context.Background(), sc, opt)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	src := &recSource{src: workload.NewSource(rd, trace.NewDict())}
	s.SampleEvery(pick(rand.New(rand.NewPCG(uint64(i), 1)), int64(1e9), int64(1e7)))
	if check {
		k.sim, k.src = s, src
		var events int64
		limit := int64(-1)
		last := int64(0)
		s.OnEvent(func(s *sim.Sim) {
			events++
			if limit < 0 || events > limit { // the source has read ahead by one request at most
				var blocks int64
				for _, r := range src.reqs {
					// A batched step per token at worst (a preemption redoes some).
					blocks += int64(len(r.Blocks)) + int64(r.InputTokens) + int64(r.OutputTokens)
				}
				limit = 16*(int64(len(src.reqs))+blocks) + 64
				if events > limit {
					failf("%d events for %d requests of %d blocks: the run does not end", events, len(src.reqs), blocks)
				}
			}
			if s.Now() < last || s.Now() < 0 {
				failf("time went from %d to %d", last, s.Now())
			}
			last = s.Now()
			if err := s.Core().Check(); err != nil {
				failf("t=%d: %v", s.Now(), err)
			}
			k.check(s.Now())
		})
	}
	res, err := s.Run(src)
	if err != nil {
		return nil, fmt.Errorf("run: %v", err)
	}
	out.Res, out.Series, out.Reqs = *res, s.Series(), src.src.Requests
	if check {
		checkOutcome(sc, cfg, out, src.reqs, k)
	}
	return out, nil
}

// checkOutcome checks the totals of a finished run.
func checkOutcome(sc *scenario.Scenario, cfg sim.Config, o *policyOutcome, reqs []core.Request, k *tracker) {
	st, res := o.Res.Stats, &o.Res
	if st.Requests+st.Rejected != int64(len(reqs)) || int64(len(o.Records)) != int64(len(reqs)) {
		failf("%d requests read, %d finished + %d rejected, %d records", len(reqs), st.Requests, st.Rejected, len(o.Records))
	}
	if total(st.Hits)+st.Misses != st.BlockAccesses {
		failf("hits %v + misses %d != block accesses %d", st.Hits, st.Misses, st.BlockAccesses)
	}
	nt := len(sc.Tiers)
	batched := cfg.GPU.Engine == sim.EngineBatched
	// lone is a prompt's compute alone on the GPU, by the engine's model.
	lone := cfg.GPU.ComputeNs
	if batched {
		lone = k.sim.EstimateCompute
	}
	hits := make([]int64, nt)
	var accesses, ttfts int64
	seen := make([]bool, len(reqs))
	for _, r := range o.Records {
		if r.Seq < 0 || r.Seq >= int64(len(reqs)) || seen[r.Seq] {
			failf("record of request %d: unknown or twice", r.Seq)
		}
		seen[r.Seq] = true
		in := reqs[r.Seq]
		if r.Arrival != in.Arrival || r.Blocks != len(in.Blocks) || r.InputTokens != in.InputTokens || r.OutputTokens != in.OutputTokens {
			failf("record %+v does not match its request %+v", r, in)
		}
		if !(0 <= r.Arrival && r.Arrival <= r.Admitted && r.Admitted <= r.PrefillStart && r.PrefillStart <= r.FirstToken &&
			r.FirstToken <= r.Done && r.Done <= res.End) || r.LoadNs < 0 || r.ComputeNs < 0 {
			failf("request %d: times out of order or negative: %+v (run ends %d)", r.Seq, r, res.End)
		}
		if r.Rejected {
			continue
		}
		ttfts++
		if h := total(r.HitBlocks); h > int64(r.Blocks) || int64(r.BlockHits) < h || r.BlockHits > r.Blocks ||
			r.RecomputedTokens < 0 || r.RecomputedTokens > max(r.InputTokens, 1) { // an empty prompt may still compute one token
			failf("request %d: hits %v, block hits %d, recomputed %d of %d blocks, %d tokens", r.Seq, r.HitBlocks, r.BlockHits, r.RecomputedTokens, r.Blocks, r.InputTokens)
		}
		if r.RecomputedTokens < 1 {
			failf("request %d: no token computed (%d of %d cached): the engine computes at least the last one", r.Seq, r.InputTokens-r.RecomputedTokens, r.InputTokens)
		}
		// A preempted request prefills again (prompt and generated tokens):
		// its compute adds up beyond the first prefill's. Batched, a prompt
		// shares its steps with others: at least its chunks' time alone.
		want := lone(max(r.InputTokens-r.RecomputedTokens, 0), r.RecomputedTokens)
		if batched {
			// A step sums its sequences' figures in floating point before
			// rounding to ns: up to 1 ns per step off the lone sum.
			want -= int64(r.RecomputedTokens)
		}
		if batched && r.ComputeNs < want || !batched && r.ComputeNs != want && (r.Preemptions == 0 || r.ComputeNs < want) {
			failf("request %d: compute %d ns, the model says %d", r.Seq, r.ComputeNs, want)
		}
		if r.FirstToken-r.PrefillStart < want {
			failf("request %d: first token %d ns after its prefill started, compute alone takes %d", r.Seq, r.FirstToken-r.PrefillStart, want)
		}
		for t, h := range r.HitBlocks {
			hits[t] += h
		}
		accesses += int64(r.Blocks)
	}
	// One GPU: simple prefills run one at a time, so their compute windows,
	// in order of first token, do not overlap (batched ones share steps).
	var done []core.Record
	for _, r := range o.Records {
		if !r.Rejected && !batched {
			done = append(done, r)
		}
	}
	// Windows of first prefills: a preempted request's later prefills add
	// to its ComputeNs, not to its FirstToken.
	for i := range done {
		r := &done[i]
		r.ComputeNs = lone(max(r.InputTokens-r.RecomputedTokens, 0), r.RecomputedTokens)
	}
	sort.SliceStable(done, func(i, j int) bool {
		a, b := done[i], done[j]
		return a.FirstToken < b.FirstToken || a.FirstToken == b.FirstToken && a.ComputeNs > b.ComputeNs
	})
	for i := 1; i < len(done); i++ {
		if a, b := done[i-1], done[i]; b.FirstToken-b.ComputeNs < a.FirstToken {
			failf("requests %d and %d computed at once: [%d, %d] and [%d, %d]", a.Seq, b.Seq, a.FirstToken-a.ComputeNs, a.FirstToken, b.FirstToken-b.ComputeNs, b.FirstToken)
		}
	}
	if !reflect.DeepEqual(hits, st.Hits) || accesses != st.BlockAccesses || ttfts != res.TTFT.Count() || ttfts != res.Queue.Count() {
		failf("records add to hits %v, %d accesses, %d TTFTs; stats say %v, %d, %d", hits, accesses, ttfts, st.Hits, st.BlockAccesses, res.TTFT.Count())
	}
	if res.TTFT.Max() > res.End || res.End < 0 {
		failf("TTFT max %d past the run's end %d", res.TTFT.Max(), res.End)
	}
	for t := 0; t < nt; t++ {
		if st.PeakUsed[t] > sc.Tiers[t].Capacity || st.Evictions[t] < st.Demotions[t]+st.Drops[t] {
			failf("tier %d: peak %d of %d, %d evictions < %d demotions + %d drops", t, st.PeakUsed[t], sc.Tiers[t].Capacity, st.Evictions[t], st.Demotions[t], st.Drops[t])
		}
	}
	if res.MovedByKind != k.moved {
		failf("moved by kind %v, the moves add to %v", res.MovedByKind, k.moved)
	}
	var bytes, transfers int64
	for _, l := range res.Links {
		bytes += l.Bytes
		transfers += l.Transfers
		if l.BusyNs < 0 || l.Bytes < 0 {
			failf("link %s: %d bytes, busy %d ns", l.Name, l.Bytes, l.BusyNs)
		}
		if k.paths != nil {
			if want := k.link[l.Name]; l.Bytes != want[0] || l.Transfers != want[1] {
				failf("link %s: %d bytes in %d transfers, the moves over it add to %d in %d", l.Name, l.Bytes, l.Transfers, want[0], want[1])
			}
		}
	}
	if bytes != k.hopBytes || transfers != k.hops {
		failf("links carried %d bytes in %d transfers; moves x hops add to %d in %d", bytes, transfers, k.hopBytes, k.hops)
	}
	for _, d := range res.Devices {
		if k.paths != nil && d.Bytes != k.dev[d.Tier] {
			failf("shared pipe of %s: %d bytes, the moves through it add to %d", d.Name, d.Bytes, k.dev[d.Tier])
		}
	}
	if s := o.Series; s != nil {
		for i, tm := range s.Times {
			if tm <= 0 || (i > 0 && tm <= s.Times[i-1]) {
				failf("series times %v", s.Times)
			}
		}
		for t, us := range s.TierUsed {
			for _, u := range us {
				if !(u >= 0 && u <= 1) {
					failf("tier %d sampled %g full", t, u)
				}
			}
		}
		for i, us := range s.LinkUtil {
			for _, u := range us {
				if !(u >= 0 && u <= 1) {
					failf("pipe %s sampled %g busy", s.Pipes[i], u)
				}
			}
		}
	}
}

func total(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// caseDir writes a case (its trace relabelled when relabel is set).
func caseDir(t *testing.T, base string, c *propCase, relabel map[int64]int64, tag string) string {
	dir := filepath.Join(base, fmt.Sprintf("case-%d%s", c.seed, tag))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "trace.jsonl", c.traceText(relabel))
	return writeFile(t, dir, "s.toml", c.toml)
}

// relabelling maps every hash id of c to a distinct random int64.
func relabelling(c *propCase) map[int64]int64 {
	r := rand.New(rand.NewPCG(c.seed, 7))
	m, used := map[int64]int64{}, map[int64]bool{}
	for _, l := range c.lines {
		for _, h := range l.ids {
			for _, done := m[h]; !done; _, done = m[h] {
				if v := int64(r.Uint64()); !used[v] {
					m[h], used[v] = v, true
				}
			}
		}
	}
	return m
}

// checkCase runs every property on c; the error is the first broken one.
func checkCase(t *testing.T, base string, c *propCase) error {
	_, err := checkCaseTally(t, base, c)
	return err
}

// checkCaseTally is checkCase that also counts what the case exercised.
func checkCaseTally(t *testing.T, base string, c *propCase) (map[string]int64, error) {
	path := caseDir(t, base, c, nil, "")
	sc, err := scenario.Load(path)
	if err != nil {
		return nil, fmt.Errorf("the generator's scenario does not load: %v", err)
	}
	relabeled, err := scenario.Load(caseDir(t, base, c, relabelling(c), "-relabelled"))
	if err != nil {
		return nil, err
	}
	var outs []*policyOutcome
	for i, p := range sc.Policies {
		o, err := runPolicy(sc, i, true)
		if err != nil {
			return nil, fmt.Errorf("policy %s (%s): %v", p.Name, p.Eviction, err)
		}
		again, err := runPolicy(sc, i, false)
		if err != nil {
			return nil, fmt.Errorf("policy %s, second run: %v", p.Name, err)
		}
		if !reflect.DeepEqual(o, again) {
			return nil, fmt.Errorf("policy %s: two runs of the same case differ", p.Name)
		}
		rl, err := runPolicy(relabeled, i, false)
		if err != nil {
			return nil, fmt.Errorf("policy %s, relabelled hash ids: %v", p.Name, err)
		}
		if !reflect.DeepEqual(o, rl) {
			return nil, fmt.Errorf("policy %s: relabelling the hash ids changed the results", p.Name)
		}
		outs = append(outs, o)
	}
	tally := map[string]int64{}
	for _, o := range outs {
		st := o.Res.Stats
		for k, v := range map[string]int64{"rejected": st.Rejected, "evictions": total(st.Evictions), "demotions": total(st.Demotions),
			"drops": total(st.Drops), "promotions": total(st.Promotions), "admission denied": total(st.AdmissionDenied),
			"write-throughs": st.WriteThroughs, "transient loads": st.TransientLoads, "prefetches": st.Prefetches,
			"late prefetches": st.PrefetchLate, "recompute cuts": st.RecomputeCuts, "dependency waits": st.DepWaits,
			"lower-tier hits": total(st.Hits[1:]), "queued": o.Res.Queue.Max(), "shared pipes": int64(len(o.Res.Devices))} {
			if v > 0 {
				tally[k]++
			}
		}
	}
	if len(sc.Links) >= len(sc.Tiers) {
		tally["cycles"]++
	}
	if sc.Workload.Gen != nil && outs[0].Reqs > 0 {
		tally["synthetic workloads"]++
	}
	for _, p := range sc.Policies {
		tally["eviction "+p.Eviction]++
	}
	if outs[0].Reqs < int64(len(c.lines)) {
		tally["lines skipped or past the limit"]++
	}
	if c.seed%5 != 0 { // the whole command writes a report: a fifth of the cases suffice
		return tally, nil
	}
	return tally, checkCommand(path, sc, outs)
}

// checkCommand runs the case through kvsim run itself and checks that what
// it wrote agrees with the in-process runs.
func checkCommand(path string, sc *scenario.Scenario, outs []*policyOutcome) error {
	out := filepath.Join(filepath.Dir(path), "out")
	err := runRun(context.Background(), []string{"--quiet", "--parallel", "2", "--out", out, path}, io.Discard, io.Discard)
	var simulated int64
	for _, o := range outs {
		simulated += o.Res.Stats.Requests
	}
	if err != nil {
		if simulated > 0 || strings.Contains(err.Error(), "\n") {
			return fmt.Errorf("kvsim run: %v", err)
		}
		return nil // nothing simulated: kvsim run may refuse to call that a result
	}
	sum, err := results.ReadSummary(filepath.Join(out, sc.Name, "summary.json"))
	if err != nil {
		return err
	}
	if len(sum.Policies) != len(outs) {
		return fmt.Errorf("summary.json has %d policies", len(sum.Policies))
	}
	for i, p := range sum.Policies {
		st := outs[i].Res.Stats
		if p.Requests != st.Requests || p.Rejected != st.Rejected || p.BlockAccesses != st.BlockAccesses || p.Misses != st.Misses {
			return fmt.Errorf("summary.json policy %s: %+v, the run gave %+v", p.Name, p, st)
		}
		var moved int64
		for _, b := range p.BytesMoved {
			moved += b
		}
		var linkBytes int64
		for _, l := range outs[i].Res.Links {
			linkBytes += l.Bytes
		}
		if moved != linkBytes {
			return fmt.Errorf("summary.json policy %s: %d bytes moved, the links carried %d", p.Name, moved, linkBytes)
		}
	}
	return checkLedger(sum)
}

// shrink drops trace lines and policies while the case still fails, so a
// report shows a small input.
func shrink(t *testing.T, base string, c *propCase) (*propCase, error) {
	err := checkCase(t, base, c)
	for changed := true; changed; {
		changed = false
		for i := len(c.lines) - 1; i >= 0 && len(c.lines) > 1; i-- {
			d := *c
			d.lines = append(append([]propLine(nil), c.lines[:i]...), c.lines[i+1:]...)
			if e := checkCase(t, base, &d); e != nil {
				c, err, changed = &d, e, true
			}
		}
		head, pols, ok := strings.Cut(c.toml, "[[policy]]\n")
		if !ok {
			continue
		}
		entries := strings.Split(pols, "[[policy]]\n")
		for i := range entries {
			if len(entries) < 2 {
				break
			}
			rest := append(append([]string(nil), entries[:i]...), entries[i+1:]...)
			d := *c
			d.toml = head + "[[policy]]\n" + strings.Join(rest, "[[policy]]\n")
			if e := checkCase(t, base, &d); e != nil {
				c, err, changed = &d, e, true
				break
			}
		}
	}
	return c, err
}

func TestPipelineProperties(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	if s := os.Getenv("KVSIM_PROPERTY_CASES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	first := uint64(0)
	if s := os.Getenv("KVSIM_PROPERTY_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		first, n = v, 1
	}
	base := t.TempDir()
	failures := 0
	seen := map[string]int64{}
	for seed := first; seed < first+uint64(n); seed++ {
		c := genCase(seed)
		if n == 1 {
			t.Logf("seed %d:\n%s\ntrace.jsonl:\n%s", seed, c.toml, c.traceText(nil))
		}
		tally, err := checkCaseTally(t, base, c)
		for k, v := range tally {
			seen[k] += v
		}
		if err != nil {
			small, serr := shrink(t, base, c)
			t.Errorf("seed %d (rerun: KVSIM_PROPERTY_SEED=%d go test ./cmd/kvsim -run PipelineProperties -v): %v\nsmallest failing case: %v\n%s\ntrace.jsonl:\n%s",
				seed, seed, err, serr, small.toml, small.traceText(nil))
			if failures++; failures == 5 {
				t.Fatal("stopping after 5 failing cases")
			}
		}
		os.RemoveAll(filepath.Join(base, fmt.Sprintf("case-%d", seed)))
		os.RemoveAll(filepath.Join(base, fmt.Sprintf("case-%d-relabelled", seed)))
	}
	if n < 300 || failures > 0 {
		return
	}
	// The cases must reach every mechanism, or the properties hold vacuously.
	want := []string{"rejected", "evictions", "demotions", "drops", "promotions", "admission denied", "write-throughs",
		"transient loads", "prefetches", "late prefetches", "recompute cuts", "dependency waits", "lower-tier hits",
		"queued", "shared pipes", "cycles", "lines skipped or past the limit", "synthetic workloads"}
	for _, name := range policy.Names() {
		want = append(want, "eviction "+name)
	}
	for _, k := range want {
		if seen[k] == 0 {
			t.Errorf("no case exercised %s", k)
		}
	}
	t.Logf("cases exercising each mechanism: %v", seen)
}
