package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"kvsim/cluster"
	"kvsim/core"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// Options say how Run runs a scenario. The zero value simulates every
// policy one after the other, writes nothing and reports no progress.
type Options struct {
	// Out, if set, is the results folders' parent: Run writes
	// Out/<scenario name>/ whole, as kvsim run does: summary.json,
	// requests.csv and report.html, as one set (results.WriteSet), in a
	// folder checked, made and locked first (OpenResults).
	Out string
	// OutFlag is what error messages call Out ("--out" if empty).
	OutFlag string
	// Assets, if set, is a local ECharts dist folder (holding
	// echarts.min.js), copied beside each page so that it needs no
	// network; pages load ECharts online otherwise.
	Assets string
	// Wait waits for a results folder another kvsim is writing, rather
	// than failing at once.
	Wait bool
	// Warn, if set, hears what is worth telling but no error: a results
	// folder whose files come from different runs, about to be replaced.
	Warn func(msg string)
	// Limit, if > 0, replays at most that many requests (overriding the
	// scenario's [workload] limit).
	Limit int
	// SkipBadLines skips malformed trace lines (counted in the summary)
	// instead of failing, whatever the scenario says.
	SkipBadLines bool
	// Workers is how many policies are simulated at once (< 1: one).
	Workers int
	// Sweep, if set, places the run in a sweep: it enters the run_id and
	// summary.json.
	Sweep *results.SweepPoint
	// Progress, if set, hears of every request read, from every policy's
	// goroutine.
	Progress Progress
	// OnRecord, if set, receives each finished request of policy
	// sc.Policies[policy]: called from that policy's goroutine (policies
	// run in parallel), r valid during the call only.
	OnRecord func(policy int, r *core.Record)
	// OnResidency, if set, is asked once per policy for a hook that hears
	// every residency change of every instance (cluster.Config's); nil
	// leaves that policy unobserved. kvsim run --publish-events.
	OnResidency func(policy int) func(inst int, now int64, b core.Block, where uint8)
	// TraceEvents, if > 0, records every event of each policy's run, up to
	// that many, into the results folder's events.bin (events.go).
	TraceEvents int
}

// Progress hears of each request a policy reads; it must be safe for
// concurrent use.
type Progress interface {
	Add(arrivalNs int64)
}

type noProgress struct{}

func (noProgress) Add(int64) {}

// policyRun is one [[policy]] entry's simulation.
type policyRun struct {
	res    *sim.Result // with [cluster], the cluster's total
	series *sim.Series
	trace  results.Trace // what the source read; the source itself (its id map) is let go
	csv    string        // temporary file with this policy's requests.csv rows
	slo    sloCount
	err    error
	wallS  float64

	cluster  *cluster.Result // with [cluster]
	sessions *results.Sessions
	events   *sim.EventLog // with Options.TraceEvents
}

// Run simulates every policy of sc over its trace and summarises them;
// with o.Out it writes the results folder. Errors are *InputError for bad
// input (the trace, a value the trace cannot go with, a results folder
// kvsim cannot write or another kvsim holds), ctx's error when
// interrupted, and others for the machine (writing under Out).
func Run(ctx context.Context, sc *scenario.Scenario, o Options) (*results.Summary, error) {
	if o.Out == "" {
		return run(ctx, sc, o, nil, "")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := OpenResults(ctx, []string{sc.Name}, false, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Run(ctx, sc, o)
}

// run is Run writing into folder f (none if nil), with ECharts copied
// from assets.
func run(ctx context.Context, sc *scenario.Scenario, o Options, f *results.Folder, assets string) (*results.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// A trace through a pipe is read once, into a copy every pass reads.
	release, err := SpoolScenarios(ctx, sc)
	if err != nil {
		return nil, err
	}
	defer release()
	o.Workers = max(o.Workers, 1)
	if o.Progress == nil {
		o.Progress = noProgress{}
	}
	dir := ""
	if f != nil {
		dir = f.Dir
	}
	if o.TraceEvents > 0 && dir != "" {
		if err := checkEventsOurs(dir); err != nil {
			return nil, err
		}
	}
	opt := TraceOptions(sc, o.SkipBadLines, o.Limit)
	id, err := runID(sc, opt, o.Sweep)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	runs := make([]policyRun, len(sc.Policies))
	sem := make(chan struct{}, o.Workers)
	var wg sync.WaitGroup
	for i := range sc.Policies {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			t0 := time.Now()
			runs[i] = simulatePolicy(ctx, sc, i, opt, dir, id, o)
			runs[i].wallS = time.Since(t0).Seconds()
		}(i)
	}
	wg.Wait()
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
	sum.Run = results.Run{WallSeconds: wall, Workers: o.Workers}
	sum.Sweep = o.Sweep
	if wall > 0 {
		sum.Run.BlockAccessesPerSecond = float64(accesses) / wall
		sum.Run.RequestsPerSecond = float64(sum.Trace.Requests*int64(len(runs))) / wall
	}
	if dir == "" {
		return sum, nil
	}
	// Interrupted after the last request was read (in the events that
	// finish the run): the earlier results stay, as at any other moment.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var parts []string
	for _, r := range runs {
		parts = append(parts, r.csv)
	}
	var pageErr error
	page := func(csv string) ([]byte, error) {
		// Rendered before any file of the set is renamed in: stopping
		// here would leave the old set whole, but the run is done, so
		// finish.
		b, err := renderPage(context.Background(), dir, csv, sum, assets)
		pageErr = err
		return b, err
	}
	if err := f.WriteSet(TierNames(sc), parts, sum, page); err != nil {
		switch {
		case pageErr != nil:
			return nil, pageErr
		case errors.Is(err, results.ErrNotOurs):
			return nil, BadInputf("run: %v: it will not be replaced; move it or give another --out", err)
		}
		return nil, fmt.Errorf("run: %w", err)
	}
	if o.TraceEvents > 0 {
		if err := writeEvents(dir, sc, id, runs); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

// simulatePolicy runs sc.Policies[i]; with dir set, its requests.csv rows
// go to a temporary file there.
func simulatePolicy(ctx context.Context, sc *scenario.Scenario, i int, opt trace.Options, dir, id string, o Options) (pr policyRun) {
	p := sc.Policies[i]
	if p.Offline() && sc.Cluster.Instances > 0 {
		pr.err = BadInputf("%s: policy %q: eviction %q reads the whole trace's future, which one instance of a [cluster] does not see", sc.Path, p.Name, p.Eviction)
		return
	}
	var fut *workload.Future
	if p.Offline() {
		f, err := BuildFuture(ctx, sc, opt)
		if err != nil {
			pr.err = TraceError(sc, err)
			return
		}
		fut = f.(*workload.Future)
	}
	cfg := SimConfig(sc, p, nil)
	if fut != nil {
		cfg = SimConfig(sc, p, fut)
	}
	var tmp *os.File
	var w *bufio.Writer
	if dir != "" {
		var err error
		if tmp, err = results.PartTemp.Create(dir); err != nil {
			pr.err = fmt.Errorf("run: %w", err)
			return
		}
		pr.csv = tmp.Name()
		w = bufio.NewWriterSize(tmp, 1<<16)
	}
	closeTmp := func() error {
		if tmp == nil {
			return nil
		}
		err := w.Flush()
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		return err
	}
	var buf []byte
	row := results.Request{Policy: p.Name, RunID: id}
	slo := newSLOCheck(sc.SLO)
	inst := 0 // the instance of the record obs is given
	obs := func(r *core.Record) {
		if o.OnRecord != nil {
			o.OnRecord(i, r)
		}
		tpot := results.TPOT(r.FirstToken, r.Done, r.OutputTokens)
		if r.Rejected {
			tpot = results.NoTPOT
		}
		slo.add(&pr.slo, r, tpot)
		if w == nil {
			return
		}
		row.Seq, row.ArrivalNs, row.QueueNs, row.DepWaitNs = r.Seq, r.Arrival, r.QueueNs(), r.DepWaitNs()
		row.LoadNs, row.ComputeNs, row.TTFTNs, row.DoneNs = r.LoadNs, r.ComputeNs, r.TTFT(), r.Done
		row.InputTokens, row.OutputTokens, row.Blocks = r.InputTokens, r.OutputTokens, r.Blocks
		row.HitBlocks, row.BlockHits, row.RecomputedTokens, row.Rejected = r.HitBlocks, r.BlockHits, r.RecomputedTokens, r.Rejected
		row.TPOTNs, row.E2ENs, row.LoadWaitNs, row.Preemptions = tpot, r.Done-r.Arrival, r.LoadWaitNs, r.Preemptions
		row.Instance = inst
		buf = results.AppendRequest(buf[:0], &row)
		w.Write(buf)
	}
	var hook func(int, int64, core.Block, uint8)
	if o.OnResidency != nil {
		hook = o.OnResidency(i)
	}
	scfg := cfg
	var s *sim.Sim
	if hook != nil {
		scfg.Core.OnResidency = func(b core.Block, w uint8) {
			var now int64
			if s != nil {
				now = s.Now()
			}
			hook(0, now, b, w)
		}
	}
	s, err := sim.New(scfg, obs)
	if err != nil {
		closeTmp()
		pr.err = BadInputf("%s: policy %q: %v", sc.Path, p.Name, err)
		return
	}
	if o.TraceEvents > 0 {
		pr.events = sim.NewEventLog(o.TraceEvents)
		s.SetEventLog(pr.events)
	}
	rd, err := OpenTrace(ctx, sc, opt)
	if err != nil {
		closeTmp()
		pr.err = TraceError(sc, err)
		return
	}
	defer rd.Close()
	src, err := RequestSource(sc, rd, opt)
	if err != nil {
		closeTmp()
		pr.err = err
		return
	}
	var csrc core.Source = &ctxSource{ctx: ctx, src: src, prog: o.Progress, mask: simCheck}
	if sc.Workload.Closed {
		cl, cerr := workload.NewClosed(src)
		if cerr == nil {
			cerr = cl.SetIdle(sc.Policies[i].IdleRank)
		}
		if cerr != nil {
			closeTmp()
			pr.err = TraceError(sc, cerr)
			return
		}
		csrc = &ctxSessions{ctxSource{ctx: ctx, src: cl, prog: o.Progress, mask: simCheck}, cl}
		ss := newSessionStats(cl)
		inner := obs
		obs = func(r *core.Record) { ss.add(r); inner(r) }
		defer func() {
			if pr.err == nil {
				pr.sessions = ss.summary()
			}
		}()
	}
	if sc.Cluster.Instances > 0 {
		var ccfg cluster.Config
		if ccfg, err = ClusterConfig(sc, cfg); err != nil {
			closeTmp()
			pr.err = BadInputf("%s: cluster: %v", sc.Path, err)
			return
		}
		ccfg.Setup = func(i int, s *sim.Sim) {
			s.SampleEvery(1e9)
			if pr.events != nil { // one log, each record marked with its instance
				s.SetEventLogInstance(pr.events, i)
			}
		}
		ccfg.OnResidency = hook
		pr.cluster, err = cluster.Run(csrc, ccfg, func(i int, r *core.Record) { inst = i; obs(r) })
		if err == nil {
			pr.res = pr.cluster.Total()
			pr.series = mergeSeries(pr.cluster.Series)
		}
	} else if sc.Workload.Closed { // sessions need the coordinator: a cluster of one
		ccfg := cluster.Config{Instances: []sim.Config{cfg}, Router: &oneInstance{},
			Setup: func(_ int, s *sim.Sim) { s.SampleEvery(1e9); s.SetEventLog(pr.events) }, OnResidency: hook}
		var cr *cluster.Result
		if cr, err = cluster.Run(csrc, ccfg, func(_ int, r *core.Record) { obs(r) }); err == nil {
			pr.res, pr.series = cr.Total(), cr.Series[0]
		}
	} else {
		s.SampleEvery(1e9)
		pr.res, err = s.Run(csrc)
		pr.series = s.Series()
	}
	pr.trace = results.Trace{Path: sc.Workload.Trace, Requests: src.Requests, BlockAccesses: src.BlockAccesses,
		DistinctBlocks: int64(src.Distinct()), InputTokens: src.InputTokens,
		DurationS: float64(src.LastArrival) / 1e9, SkippedLines: src.Skipped(), Speedup: sc.Workload.Speedup,
		Inject: sc.Workload.Inject, InjectedRequests: src.Injected}
	if e := src.FirstSkipped(); e != nil {
		pr.trace.FirstSkipped = e.Error()
	}
	ferr := closeTmp()
	switch {
	case err != nil:
		pr.err = TraceError(sc, err)
	case ferr != nil:
		// The disk, not the input: name the file the user will look for,
		// not the temporary one, and the cause (ENOSPC, EIO) alone.
		pr.err = fmt.Errorf("run: writing %s: %w", filepath.Join(dir, "requests.csv"), PathErr(ferr))
	}
	return
}

// ctxSource stops a run once the context is cancelled, checked every
// mask+1 requests: every 4096 in the simulator (microseconds each, and the
// check costs as much as a cheap request), every one in a replay
// (milliseconds each).
type ctxSource struct {
	ctx  context.Context
	src  core.Source
	prog Progress
	mask int
	n    int
}

// Interruptible wraps src so that reading it stops once ctx is cancelled,
// checked at every request (a real replay's take milliseconds each), and
// tells prog (nil: nobody) of each request read.
func Interruptible(ctx context.Context, src core.Source, prog Progress) core.Source {
	if prog == nil {
		prog = noProgress{}
	}
	return &ctxSource{ctx: ctx, src: src, prog: prog}
}

// simCheck is ctxSource's mask in simulations.
const simCheck = 4095

// ctxSessions is a ctxSource over closed-loop sessions.
type ctxSessions struct {
	ctxSource
	s core.Sessions
}

func (c *ctxSessions) Follow(seq, done int64) ([]core.Request, error) { return c.s.Follow(seq, done) }

func (c *ctxSource) Next(r *core.Request) error {
	if c.n++; c.n&c.mask == 0 {
		if err := c.ctx.Err(); err != nil {
			return err
		}
	}
	err := c.src.Next(r)
	if err == nil {
		c.prog.Add(r.Arrival)
	}
	return err
}

// TierNames lists the scenario's tier names in order.
func TierNames(sc *scenario.Scenario) []string {
	var out []string
	for _, t := range sc.Tiers {
		out = append(out, t.Name)
	}
	return out
}
