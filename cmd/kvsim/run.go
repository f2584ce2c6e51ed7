package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"kvsim/core"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

type runOptions struct {
	out     string
	assets  string
	skipBad bool
	limit   int
	workers int
	quiet   bool
	wait    bool // wait for a results folder another kvsim is writing
	cpuProf string
	memProf string
	sets    setFlags
	sweep   *results.SweepPoint // the point of a kvsim sweep this run is
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "kvsim run [--out DIR] [--set KEY=VALUE]... [flags] SCENARIO.toml...", stderr)
	var o runOptions
	fs.StringVar(&o.out, "out", "out", "write results under `DIR`/<scenario>/")
	fs.StringVar(&o.assets, "assets", "", "local ECharts 5 dist `DIR` (holding echarts.min.js): reports then need no network")
	fs.BoolVar(&o.skipBad, "skip-bad-lines", false, "skip malformed trace lines (counted and reported) instead of failing")
	fs.IntVar(&o.limit, "limit", 0, "replay at most `N` requests (overrides [workload] limit)")
	fs.IntVar(&o.workers, "parallel", runtime.GOMAXPROCS(0), "simulate up to `N` policies at once")
	fs.BoolVar(&o.quiet, "quiet", false, "print nothing but errors (no table, no progress)")
	addWaitFlag(fs, &o.wait)
	addSetFlag(fs, &o.sets)
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of the simulation to `FILE` (go tool pprof)")
	fs.StringVar(&o.memProf, "memprofile", "", "write a heap profile to `FILE` when the run ends (its alloc_space view shows everything the run allocated)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return badInputf("run: no scenario given (usage: kvsim run [--out DIR] SCENARIO.toml...)")
	}
	if o.workers < 1 {
		return badInputf("run: --parallel must be >= 1")
	}
	if o.limit < 0 {
		return badInputf("run: --limit must be >= 0")
	}
	if o.assets != "" {
		if _, err := os.Stat(filepath.Join(o.assets, "echarts.min.js")); err != nil {
			return badInputf("run: --assets: %v", err)
		}
	}
	// Validate every scenario before simulating any.
	var scs []*scenario.Scenario
	seen := map[string]string{}
	for _, p := range paths {
		sc, err := scenario.LoadWith(p, o.sets)
		if err != nil {
			return badInput(err)
		}
		if _, err := os.Stat(sc.Workload.Trace); sc.Workload.Gen == nil && err != nil {
			return badInputf("%s: workload: trace: %v", sc.Path, err)
		}
		if prev, dup := seen[sc.Name]; dup {
			return badInputf("%s: scenario name %q already used by %s (results would collide)", p, sc.Name, prev)
		}
		seen[sc.Name] = p
		scs = append(scs, sc)
	}
	// Every output path is checked, and the results folders locked,
	// before any simulation.
	for _, f := range [...][2]string{{"run: --cpuprofile", o.cpuProf}, {"run: --memprofile", o.memProf}} {
		if f[1] != "" {
			if err := checkOutFile(f[0], f[1]); err != nil {
				return err
			}
		}
	}
	var names []string
	for _, sc := range scs {
		names = append(names, sc.Name)
	}
	dirs, err := prepareResultDirs("run: --out", o.out, names, len(scs) > 1, o.assets)
	if err != nil {
		return err
	}
	unlock, err := lockDirs(ctx, dirs, o.wait)
	if err != nil {
		return err
	}
	defer unlock()
	stopProf, err := startProfiles(o.cpuProf, o.memProf)
	if err != nil {
		return err
	}
	defer stopProf()
	var sums []*results.Summary
	var empty []string // scenarios in which no request completed
	for _, sc := range scs {
		sum, err := simulateAndReport(ctx, sc, o, stderr)
		if err != nil {
			return err
		}
		sums = append(sums, sum)
		if !o.quiet {
			printTable(stdout, sum)
			fmt.Fprintf(stdout, "wrote %s\n\n", filepath.Join(o.out, sc.Name, "report.html"))
		}
		if sum.NoneCompleted() != "" {
			empty = append(empty, sc.Name)
		}
	}
	if len(sums) > 1 {
		if err := writeIndex(o.out, sums, o.assets); err != nil {
			return err
		}
		if !o.quiet {
			fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(o.out, "index.html"))
		}
	}
	if len(empty) > 0 {
		// The cause is the input (the trace, or HBM too small for it): the
		// results are written, but no latency was measured.
		return badInputf("run: nothing was simulated in scenario %s (see the warning above)", strings.Join(empty, ", "))
	}
	return nil
}

// simulateAndReport runs one scenario and writes its results folder:
// summary.json, requests.csv and report.html.
func simulateAndReport(ctx context.Context, sc *scenario.Scenario, o runOptions, stderr io.Writer) (*results.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sum, err := simulateScenario(ctx, sc, o, stderr)
	if err != nil {
		return nil, err
	}
	warnEmpty(stderr, sum)
	if err := writeScenarioReport(filepath.Join(o.out, sc.Name), sum, o.assets); err != nil {
		return nil, err
	}
	return sum, nil
}

// warnEmpty names, on stderr, what completed no request and why: its
// latencies are null (shown as -), not 0.
func warnEmpty(stderr io.Writer, sum *results.Summary) {
	if why := sum.NoneCompleted(); why != "" {
		fmt.Fprintf(stderr, "kvsim: warning: scenario %s: no request completed: %s\n", sum.Scenario, why)
		return
	}
	for _, p := range sum.Policies {
		if p.Requests == 0 {
			fmt.Fprintf(stderr, "kvsim: warning: scenario %s: policy %s completed no request (%d rejected)\n", sum.Scenario, p.Name, p.Rejected)
		}
	}
}

// policyRun is one [[policy]] entry's simulation.
type policyRun struct {
	res    *sim.Result
	series *sim.Series
	trace  results.Trace // what the source read; the source itself (its id map) is let go
	csv    string        // temporary file with this policy's requests.csv rows
	err    error
	wallS  float64
}

func simulateScenario(ctx context.Context, sc *scenario.Scenario, o runOptions, stderr io.Writer) (*results.Summary, error) {
	dir := filepath.Join(o.out, sc.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	opt := traceOptions(sc, o.skipBad, o.limit)
	id, err := runID(sc, opt, o.sweep)
	if err != nil {
		return nil, err
	}
	var prog *progress
	if !o.quiet && isTerminal(stderr) {
		var total int64
		if g := sc.Workload.Gen; g != nil {
			total = int64(g.Requests)
		} else {
			total = countLines(sc.Workload.Trace)
		}
		if opt.Limit > 0 {
			total = min(total, int64(opt.Limit))
		}
		prog = startProgress(stderr, sc.Name, total*int64(len(sc.Policies)), true)
	} else {
		prog = startProgress(stderr, sc.Name, 0, false)
	}
	start := time.Now()
	runs := make([]policyRun, len(sc.Policies))
	sem := make(chan struct{}, o.workers)
	var wg sync.WaitGroup
	for i := range sc.Policies {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			t0 := time.Now()
			runs[i] = simulatePolicy(ctx, sc, i, opt, dir, id, prog)
			runs[i].wallS = time.Since(t0).Seconds()
		}(i)
	}
	wg.Wait()
	prog.finish()
	wall := time.Since(start).Seconds()
	defer func() {
		for _, r := range runs {
			if r.csv != "" {
				os.Remove(r.csv)
			}
		}
	}()
	for _, r := range runs {
		if r.err != nil {
			return nil, r.err
		}
	}
	sum := summarize(sc, runs)
	sum.RunID = id
	var accesses int64
	for _, p := range sum.Policies {
		accesses += p.BlockAccesses
	}
	sum.Run = results.Run{WallSeconds: wall, Workers: o.workers}
	sum.Sweep = o.sweep
	if wall > 0 {
		sum.Run.BlockAccessesPerSecond = float64(accesses) / wall
		sum.Run.RequestsPerSecond = float64(sum.Trace.Requests*int64(len(runs))) / wall
	}
	var parts []string
	for _, r := range runs {
		parts = append(parts, r.csv)
	}
	if err := results.WriteRequests(filepath.Join(dir, "requests.csv"), tierNames(sc), parts); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if err := results.WriteSummary(filepath.Join(dir, "summary.json"), sum); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return sum, nil
}

func simulatePolicy(ctx context.Context, sc *scenario.Scenario, i int, opt trace.Options, dir, id string, prog *progress) (pr policyRun) {
	p := sc.Policies[i]
	var fut *workload.Future
	if needsFuture(p.Eviction) {
		f, err := buildFuture(ctx, sc, opt)
		if err != nil {
			pr.err = wrapTrace(sc, err)
			return
		}
		fut = f.(*workload.Future)
	}
	cfg := simConfig(sc, p, nil)
	if fut != nil {
		cfg = simConfig(sc, p, fut)
	}
	tmp, err := os.CreateTemp(dir, ".requests-*.csv")
	if err != nil {
		pr.err = fmt.Errorf("run: %w", err)
		return
	}
	pr.csv = tmp.Name()
	w := bufio.NewWriterSize(tmp, 1<<16)
	var buf []byte
	row := results.Request{Policy: p.Name, RunID: id}
	obs := func(r *core.Record) {
		row.Seq, row.ArrivalNs, row.QueueNs, row.DepWaitNs = r.Seq, r.Arrival, r.QueueNs(), r.DepWaitNs()
		row.LoadNs, row.ComputeNs, row.TTFTNs, row.DoneNs = r.LoadNs, r.ComputeNs, r.TTFT(), r.Done
		row.InputTokens, row.OutputTokens, row.Blocks = r.InputTokens, r.OutputTokens, r.Blocks
		row.HitBlocks, row.BlockHits, row.RecomputedTokens, row.Rejected = r.HitBlocks, r.BlockHits, r.RecomputedTokens, r.Rejected
		buf = results.AppendRequest(buf[:0], &row)
		w.Write(buf)
	}
	s, err := sim.New(cfg, obs)
	if err != nil {
		tmp.Close()
		pr.err = badInputf("%s: policy %q: %v", sc.Path, p.Name, err)
		return
	}
	rd, err := openTrace(ctx, sc, opt)
	if err != nil {
		tmp.Close()
		pr.err = wrapTrace(sc, err)
		return
	}
	defer rd.Close()
	src := workload.NewSource(rd, trace.NewDict())
	s.SampleEvery(1e9)
	pr.res, err = s.Run(&ctxSource{ctx: ctx, src: src, prog: prog})
	pr.series = s.Series()
	pr.trace = results.Trace{Path: sc.Workload.Trace, Requests: src.Requests, BlockAccesses: src.BlockAccesses,
		DistinctBlocks: int64(src.Distinct()), InputTokens: src.InputTokens,
		DurationS: float64(src.LastArrival) / 1e9, SkippedLines: src.Skipped(), Speedup: sc.Workload.Speedup}
	if e := src.FirstSkipped(); e != nil {
		pr.trace.FirstSkipped = e.Error()
	}
	ferr := w.Flush()
	if cerr := tmp.Close(); ferr == nil {
		ferr = cerr
	}
	switch {
	case err != nil:
		pr.err = wrapTrace(sc, err)
	case ferr != nil:
		// The disk, not the input: name the file the user will look for,
		// not the temporary one, and the cause (ENOSPC, EIO) alone.
		pr.err = fmt.Errorf("run: writing %s: %w", filepath.Join(dir, "requests.csv"), pathErr(ferr))
	}
	return
}

// ctxSource stops a run when the context is cancelled (checked every 4096
// requests to keep the hot path cheap).
type ctxSource struct {
	ctx  context.Context
	src  core.Source
	prog *progress
	n    int
}

func (c *ctxSource) Next(r *core.Request) error {
	if c.n++; c.n&4095 == 0 {
		if err := c.ctx.Err(); err != nil {
			return err
		}
	}
	err := c.src.Next(r)
	if err == nil {
		c.prog.add(r.Arrival)
	}
	return err
}

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

func summarize(sc *scenario.Scenario, runs []policyRun) *results.Summary {
	m := sc.Model
	sum := &results.Summary{Scenario: sc.Name, Description: sc.Describe(), Overrides: sc.Sets, Seed: sc.Seed,
		Model: results.Model{Layers: m.Layers, KVHeads: m.KVHeads, HeadDim: m.HeadDim, DType: m.DType,
			BlockTokens: m.BlockTokens, BytesPerToken: m.BytesPerToken(), BytesPerBlock: m.BytesPerBlock()}}
	for _, t := range sc.Tiers {
		cost := float64(t.Capacity) / 1e9 * t.CostPerGB
		sum.Tiers = append(sum.Tiers, results.Tier{Name: t.Name, Kind: t.Kind, CapacityBytes: t.Capacity,
			Bandwidth: t.Bandwidth, LatencyNs: t.Latency, CostPerGB: t.CostPerGB, CostUSD: cost})
		sum.CostUSD += cost
	}
	sum.Trace = runs[0].trace
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
		if st.BlockAccesses > 0 {
			var hits int64
			for _, h := range st.Hits {
				hits += h
			}
			pol.HitRatio = float64(hits) / float64(st.BlockAccesses)
			pol.BlockHitRatio = float64(st.BlockHits) / float64(st.BlockAccesses)
		}
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
		sum.Policies = append(sum.Policies, pol)
		if r.series != nil {
			sum.Series = append(sum.Series, timeSeries(p.Name, sc, r.series))
		}
	}
	return sum
}

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

func printTable(w io.Writer, s *results.Summary) {
	t := s.Trace
	fmt.Fprintf(w, "scenario %s: %d requests, %d block accesses, %d distinct blocks; hierarchy $%.0f", s.Scenario, t.Requests, t.BlockAccesses, t.DistinctBlocks, s.CostUSD)
	if t.SkippedLines > 0 {
		fmt.Fprintf(w, ", %d bad lines skipped", t.SkippedLines)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "policy\thit\tblock-hit\t"
	for _, ti := range s.Tiers {
		hdr += "from " + ti.Name + "\t"
	}
	hdr += "recomputed tok\tTTFT p50 ms\tp90\tp99\tqueue p99 ms\tmoved GiB\trejected\t"
	fmt.Fprintln(tw, hdr)
	for _, p := range s.Policies {
		row := p.Name + "\t" + pct(p.HitRatio) + "\t" + pct(p.BlockHitRatio) + "\t"
		for _, ti := range s.Tiers {
			row += strconv.FormatInt(p.Hits[ti.Name], 10) + "\t"
		}
		var moved int64
		for _, b := range p.BytesMoved {
			moved += b
		}
		ttft, queue := p.TTFTms.OrNaN(), p.QueueMs.OrNaN()
		row += fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%.1f\t%d\t", p.RecomputedTokens, msCell(ttft.P50), msCell(ttft.P90),
			msCell(ttft.P99), msCell(queue.P99), float64(moved)/(1<<30), p.Rejected)
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}

// msCell is a latency in a printed table: "-" where no request completed.
func msCell(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
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
	return ts
}
