package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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

// runSweep answers "how much of this tier is worth buying" (--tier with
// --capacities) or, generally, "what does this knob do" (--vary KEY with
// --values, any key --set takes): the scenario is simulated once per
// value, every policy each time, and one table sets hit ratio and TTFT
// against the hierarchy's cost.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sweep", "kvsim sweep (--tier NAME --capacities LIST | --vary KEY --values LIST) [--out DIR] [--set KEY=VALUE]... [--trace-events] [--shard I/N | --emit slurm|k8s [--shards N]] SCENARIO.toml", stderr)
	var o runOptions
	tier := fs.String("tier", "", "the tier whose capacity varies (its name in the scenario)")
	caps := fs.String("capacities", "", "comma-separated capacities to try (`LIST`, e.g. 64GiB,128GiB,256GiB)")
	vary := fs.String("vary", "", "the scenario value to vary, a `KEY` as --set takes (workload.speedup, tier.ssd.bandwidth, ...)")
	values := fs.String("values", "", "comma-separated values of --vary to try (`LIST`, e.g. 0.5,1,2)")
	fs.StringVar(&o.out, "out", "out", "write each point's results under `DIR`/<scenario>-<key>-<value>/")
	fs.StringVar(&o.assets, "assets", "", "local ECharts 5 dist `DIR` for offline reports")
	fs.IntVar(&o.limit, "limit", 0, "replay at most `N` requests")
	fs.IntVar(&o.workers, "parallel", runtime.GOMAXPROCS(0), "simulate up to `N` policies at once")
	quiet := fs.Bool("quiet", false, "print nothing but errors (no table)")
	addWaitFlag(fs, &o.wait)
	addSetFlag(fs, &o.sets)
	addTraceEventsFlags(fs, &o.trace)
	shardFlag := fs.String("shard", "", "run only share `I/N` of the points (0-based: point k is shard k mod N's), into a --out the shards share; kvsim merge writes the index")
	var em emitOptions
	addEmitFlags(fs, &em)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	shard, shards := -1, 0
	if *shardFlag != "" {
		if shard, shards, err = parseShard(*shardFlag); err != nil {
			return err
		}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := em.check(*shardFlag != "", given); err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInputf("sweep: want exactly one SCENARIO.toml, got %d", len(pos))
	}
	if o.workers < 1 || o.limit < 0 {
		return badInputf("sweep: --parallel must be >= 1 and --limit >= 0")
	}
	if o.trace.max < 1 {
		return badInputf("sweep: --trace-events-max must be >= 1")
	}
	base, err := scenario.LoadWith(pos[0], o.sets)
	if err != nil {
		return badInput(err)
	}
	var key, what string // the key varied; what the table calls it
	var list []string
	switch {
	case *vary == "" && *tier == "":
		return badInputf("sweep: give --tier NAME with --capacities LIST, or --vary KEY with --values LIST")
	case *vary != "" && *tier != "":
		return badInputf("sweep: give --tier with --capacities, or --vary with --values, not both")
	case *vary != "":
		if strings.TrimSpace(*values) == "" {
			return badInputf("sweep: --values: required with --vary, e.g. --vary workload.speedup --values 0.5,1,2")
		}
		key, what = *vary, *vary
		list = strings.Split(*values, ",")
	default:
		if !slices.ContainsFunc(base.Tiers, func(t scenario.Tier) bool { return t.Name == *tier }) {
			var names []string
			for _, t := range base.Tiers {
				names = append(names, t.Name)
			}
			return badInputf("sweep: --tier %q: %s has no such tier (tiers: %s)", *tier, pos[0], strings.Join(names, ", "))
		}
		if strings.TrimSpace(*caps) == "" {
			return badInputf("sweep: --capacities: required, e.g. 64GiB,128GiB")
		}
		key, what = "tier."+*tier+".capacity", "capacity"
		for _, c := range strings.Split(*caps, ",") {
			if n, err := scenario.ParseBytes(strings.TrimSpace(c)); err != nil || n <= 0 {
				return badInputf("sweep: --capacities: %q: want a positive size like 128GiB", strings.TrimSpace(c))
			}
			list = append(list, c)
		}
	}
	// Every point is loaded, so checked, before any is simulated.
	tag := *tier
	if *vary != "" {
		tag = *vary
	}
	sw, err := experiment.LoadSweep(pos[0], o.sets, key, tag, list)
	if err != nil {
		return err
	}
	scs, labels := sw.Points, sw.Values
	// Every point's trace (--vary workload.trace gives each its own) and
	// --assets are checked before any folder is made.
	for i, sc := range scs {
		if err := sc.CheckTrace(); err != nil {
			if len(scs) > 1 && sc.Workload.Trace != base.Workload.Trace {
				return badInputf("%v (--vary value %q)", err, labels[i])
			}
			return badInput(err)
		}
	}
	if o.assets != "" {
		if _, err := os.Stat(filepath.Join(o.assets, "echarts.min.js")); err != nil {
			return badInputf("sweep: --assets: %v", err)
		}
	}
	var names []string
	for i, sc := range scs {
		if j := slices.Index(names, sc.Name); j >= 0 {
			return badInputf("sweep: values %q and %q both write %s (one's results would overwrite the other's)",
				labels[j], labels[i], filepath.Join(o.out, sc.Name))
		}
		names = append(names, sc.Name)
	}
	// No output may be an input: the scenario, a point's trace or profile,
	// the ECharts copied.
	ins := []role{{"the scenario", pos[0]}}
	for _, sc := range scs {
		ins = append(ins, role{"the hardware profile", sc.Profile})
		if sc.Workload.Gen == nil {
			ins = append(ins, role{"the trace", sc.Workload.Trace})
		}
	}
	if o.assets != "" {
		ins = append(ins, role{"--assets'", filepath.Join(o.assets, "echarts.min.js")})
	}
	outs := []string{filepath.Join(o.out, "index.html")}
	for _, n := range names {
		for _, f := range results.SetFiles {
			outs = append(outs, filepath.Join(o.out, n, f))
		}
		if o.trace.on {
			outs = append(outs, filepath.Join(o.out, n, results.EventsFile))
		}
	}
	for _, p := range outs {
		if err := checkNotInput("sweep: --out", p, ins); err != nil {
			return err
		}
	}
	if em.target != "" {
		return em.write(stdout, fs, args, len(scs), o.out, o.assets, ins)
	}
	so := o.output("sweep: --out", stderr)
	so.Limit, so.Workers, so.TraceEvents = o.limit, o.workers, o.trace.n()
	var sums []*results.Summary
	var reused []bool
	if shard >= 0 {
		sums, reused, err = sw.RunShard(ctx, so, shard, shards, func(_ int, sum *results.Summary) error { warnEmpty(stderr, sum); return nil })
		var ls []string
		for _, k := range experiment.ShardPoints(len(labels), shard, shards) {
			ls = append(ls, labels[k])
		}
		labels = ls
	} else {
		sums, err = sw.Run(ctx, so, func(_ int, sum *results.Summary) error { warnEmpty(stderr, sum); return nil })
	}
	if err != nil {
		return err
	}
	if *quiet {
		return nil
	}
	if len(sums) == 0 {
		fmt.Fprintf(stdout, "shard %s: no points (the sweep has %d); when every shard has finished: kvsim merge %s\n", *shardFlag, len(scs), o.out)
		return nil
	}
	if *vary != "" {
		fmt.Fprintf(stdout, "sweep of %s in %s (%d requests)\n", key, base.Name, sums[0].Trace.Requests)
	} else {
		fmt.Fprintf(stdout, "sweep of tier %q in %s (%d requests)\n", *tier, base.Name, sums[0].Trace.Requests)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\thierarchy $\tpolicy\thit\tTTFT p50 ms\tp99\tmoved GiB\t\n", what)
	for i, s := range sums {
		for _, p := range s.Policies {
			var moved int64
			for _, b := range p.BytesMoved {
				moved += b
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%.1f\t\n", labels[i], s.CostUSD, p.Name, pct(p.HitRatio),
				msCell(p.TTFTms.OrNaN().P50), msCell(p.TTFTms.OrNaN().P99), float64(moved)/(1<<30))
		}
	}
	tw.Flush()
	if shard >= 0 {
		n := 0
		for _, r := range reused {
			if r {
				n++
			}
		}
		fmt.Fprintf(stdout, "shard %s: %d of the sweep's %d points (%d already done, kept); when every shard has finished: kvsim merge %s\n",
			*shardFlag, len(sums), len(scs), n, o.out)
		return nil
	}
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(o.out, "index.html"))
	return nil
}

// parseShard reads --shard I/N, 0-based: SLURM_ARRAY_TASK_ID (from
// --array=0-(N-1)) and JOB_COMPLETION_INDEX count from 0.
func parseShard(v string) (i, n int, err error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, badInputf("sweep: --shard %q: want I/N with 0 <= I < N (0-based, as SLURM_ARRAY_TASK_ID from --array=0-(N-1))", v)
	}
	return i, n, nil
}
