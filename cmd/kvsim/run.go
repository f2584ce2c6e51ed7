package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"kvsim/experiment"
	"kvsim/results"
	"kvsim/scenario"
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
	events  eventsFlags      // --publish-events
	trace   traceEventsFlags // --trace-events
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
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
	addTraceEventsFlags(fs, &o.trace)
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of the simulation to `FILE` (go tool pprof)")
	fs.StringVar(&o.memProf, "memprofile", "", "write a heap profile to `FILE` when the run ends (its alloc_space view shows everything the run allocated)")
	addEventsFlags(fs, &o.events)
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if _, _, err := o.events.check(); err != nil {
		return err
	}
	if o.trace.max < 1 {
		return badInputf("run: --trace-events-max must be >= 1")
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
		if err := sc.CheckTrace(); err != nil {
			return badInput(err)
		}
		if prev, dup := seen[sc.Name]; dup {
			return badInputf("%s: scenario name %q already used by %s (results would collide)", p, sc.Name, prev)
		}
		seen[sc.Name] = p
		scs = append(scs, sc)
	}
	// Every output path is checked, and the results folders locked,
	// before any simulation. No output may be an input or another output.
	var names []string
	var ins, outs []role
	for i, sc := range scs {
		names = append(names, sc.Name)
		ins = append(ins, role{"the scenario", paths[i]}, role{"the hardware profile", sc.Profile})
		if sc.Workload.Gen == nil {
			ins = append(ins, role{"the trace", sc.Workload.Trace})
		}
		for _, f := range results.SetFiles {
			outs = append(outs, role{"a results file of this run,", filepath.Join(o.out, sc.Name, f)})
		}
	}
	if o.assets != "" {
		ins = append(ins, role{"--assets'", filepath.Join(o.assets, "echarts.min.js")})
	}
	if len(scs) > 1 {
		outs = append(outs, role{"a results file of this run,", filepath.Join(o.out, "index.html")})
	}
	for _, out := range outs {
		if err := checkNotInput("run: --out", out.path, ins); err != nil {
			return err
		}
	}
	profs := [...]role{{"run: --cpuprofile", o.cpuProf}, {"run: --memprofile", o.memProf}}
	for i, f := range profs {
		if f.path != "" {
			other := profs[1-i]
			other.what = strings.TrimPrefix(other.what, "run: ")
			if err := checkProfilePath(f.what, f.path, slices.Concat(ins, outs, []role{other})); err != nil {
				return err
			}
		}
	}
	res, err := experiment.OpenResults(ctx, names, len(scs) > 1, o.output("run: --out", stderr))
	if err != nil {
		return err
	}
	defer res.Close()
	// A trace through a pipe or device is read once, into a temporary
	// copy that the trace line, the progress total and the run all read.
	release, err := experiment.SpoolScenarios(ctx, scs...)
	if err != nil {
		return err
	}
	defer release()
	stopProf, err := startProfiles(o.cpuProf, o.memProf)
	if err != nil {
		return err
	}
	defer func() {
		if perr := stopProf(); err == nil {
			err = perr
		}
	}()
	var sums []*results.Summary
	var empty []string // scenarios in which no request completed
	for _, sc := range scs {
		sum, err := simulateAndReport(ctx, res, sc, o, stderr)
		if err != nil {
			return err
		}
		sums = append(sums, sum)
		if !o.quiet {
			printTable(stdout, sum)
			printLedger(stdout, sum)
			fmt.Fprintf(stdout, "wrote %s\n\n", filepath.Join(o.out, sc.Name, "report.html"))
		}
		if sum.NoneCompleted() != "" {
			empty = append(empty, sc.Name)
		}
	}
	if len(sums) > 1 {
		if err := res.WriteIndex(ctx, sums); err != nil {
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
func simulateAndReport(ctx context.Context, res *experiment.Results, sc *scenario.Scenario, o runOptions, stderr io.Writer) (*results.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !o.quiet {
		if err := traceLine(ctx, sc, o, stderr); err != nil {
			return nil, err
		}
	}
	// The progress line counts every policy's requests.
	var prog *progress
	if !o.quiet && isTerminal(stderr) {
		var total int64
		if g := sc.Workload.Gen; g != nil {
			total = int64(g.Requests)
		} else {
			total = countLines(ctx, sc.Workload.Trace)
		}
		if lim := experiment.TraceOptions(sc, o.skipBad, o.limit).Limit; lim > 0 {
			total = min(total, int64(lim))
		}
		prog = startProgress(stderr, sc.Name, total*int64(len(sc.Policies)), true)
	} else {
		prog = startProgress(stderr, sc.Name, 0, false)
	}
	pubHook, pubFinish, err := startEvents(ctx, sc, &o.events, stderr)
	if err != nil {
		prog.finish()
		return nil, err
	}
	sum, err := res.Run(ctx, sc, experiment.Options{Limit: o.limit, SkipBadLines: o.skipBad, Workers: o.workers, Progress: prog,
		OnResidency: pubHook, TraceEvents: o.trace.n()})
	prog.finish()
	pubFinish()
	if err != nil {
		return nil, err
	}
	warnEmpty(stderr, sum)
	return sum, nil
}

// traceLine prints the trace's one-line summary before the simulation,
// and warns of a trace no policy can hit on. It reads the trace once more
// (parsing and mapping ids, no simulation): --quiet skips it.
func traceLine(ctx context.Context, sc *scenario.Scenario, o runOptions, stderr io.Writer) error {
	p, err := experiment.ProfileTrace(ctx, sc, experiment.TraceOptions(sc, o.skipBad, o.limit))
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "kvsim: scenario %s: trace: %s\n", sc.Name, p.Line())
	switch {
	case p.NoReuse():
		fmt.Fprintf(stderr, "kvsim: warning: scenario %s: no block of the trace is referenced twice: no cache can hit, every policy ties\n", sc.Name)
	case p.BlockAccesses == 0 && p.NoIDs > 0:
		fmt.Fprintf(stderr, "kvsim: warning: scenario %s: the trace has no block ids: no cache can hit, every policy ties (add [workload.inject])\n", sc.Name)
	}
	return nil
}

// output is where and how a run or sweep writes its results folders;
// what names --out in messages.
func (o runOptions) output(what string, stderr io.Writer) experiment.Options {
	return experiment.Options{Out: o.out, OutFlag: what, Assets: o.assets, Wait: o.wait,
		Warn: func(msg string) { fmt.Fprintf(stderr, "kvsim: warning: %s\n", msg) }}
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
	hdr += "recomputed tok\tTTFT p50 ms\tp90\tp99\tTPOT p50 ms\tp99\tqueue p99 ms\tmoved GiB\tpreempt\trejected\t"
	if s.SLO != nil {
		hdr += "SLO met\t"
	}
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
		ttft, queue, tpot := p.TTFTms.OrNaN(), p.QueueMs.OrNaN(), p.TPOTms.OrNaN()
		row += fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%d\t%d\t", p.RecomputedTokens, msCell(ttft.P50), msCell(ttft.P90),
			msCell(ttft.P99), ms2Cell(tpot.P50), ms2Cell(tpot.P99), msCell(queue.P99), float64(moved)/(1<<30), p.Preemptions, p.Rejected)
		if s.SLO != nil {
			if p.SLOAttainment == nil {
				row += "-\t"
			} else {
				row += pct(*p.SLOAttainment) + "\t"
			}
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}

// ms2Cell is a TPOT in a printed table: a few ms, so one more decimal.
func ms2Cell(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// msCell is a latency in a printed table: "-" where no request completed.
func msCell(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}
