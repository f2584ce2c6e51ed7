package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"kvsim/results"
	"kvsim/scenario"
)

// runSweep answers "how much of this tier is worth buying": the scenario
// is simulated once per capacity of one tier, every policy each time, and
// the table sets hit ratio and TTFT against the hierarchy's cost.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sweep", "kvsim sweep --tier NAME --capacities LIST [--out DIR] [--set KEY=VALUE]... SCENARIO.toml", stderr)
	var o runOptions
	tier := fs.String("tier", "", "the tier whose capacity varies (its name in the scenario)")
	caps := fs.String("capacities", "", "comma-separated capacities to try (`LIST`, e.g. 64GiB,128GiB,256GiB)")
	fs.StringVar(&o.out, "out", "out", "write each point's results under `DIR`/<scenario>-<tier>-<capacity>/")
	fs.StringVar(&o.assets, "assets", "", "local ECharts 5 dist `DIR` for offline reports")
	fs.IntVar(&o.limit, "limit", 0, "replay at most `N` requests")
	fs.IntVar(&o.workers, "parallel", runtime.GOMAXPROCS(0), "simulate up to `N` policies at once")
	addSetFlag(fs, &o.sets)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInputf("sweep: want exactly one SCENARIO.toml, got %d", len(pos))
	}
	if o.workers < 1 || o.limit < 0 {
		return badInputf("sweep: --parallel must be >= 1 and --limit >= 0")
	}
	base, err := scenario.LoadWith(pos[0], o.sets)
	if err != nil {
		return badInput(err)
	}
	ti := -1
	for i, t := range base.Tiers {
		if t.Name == *tier {
			ti = i
		}
	}
	if ti < 0 {
		var names []string
		for _, t := range base.Tiers {
			names = append(names, t.Name)
		}
		return badInputf("sweep: --tier %q: %s has no such tier (tiers: %s)", *tier, pos[0], strings.Join(names, ", "))
	}
	if strings.TrimSpace(*caps) == "" {
		return badInputf("sweep: --capacities: required, e.g. 64GiB,128GiB")
	}
	var sizes []int64
	var labels []string
	for _, c := range strings.Split(*caps, ",") {
		c = strings.TrimSpace(c)
		n, err := scenario.ParseBytes(c)
		if err != nil || n <= 0 {
			return badInputf("sweep: --capacities: %q: want a positive size like 128GiB", c)
		}
		sizes, labels = append(sizes, n), append(labels, c)
	}
	if _, err := os.Stat(base.Workload.Trace); base.Workload.Gen == nil && err != nil {
		return badInputf("%s: workload: trace: %v", base.Path, err)
	}
	o.quiet = true
	var sums []*results.Summary
	for i, n := range sizes {
		if err := ctx.Err(); err != nil {
			return err
		}
		sc := *base
		sc.Tiers = append([]scenario.Tier(nil), base.Tiers...)
		sc.Tiers[ti].Capacity = n
		sc.Name = fmt.Sprintf("%s-%s-%s", base.Name, *tier, labels[i])
		sum, err := simulateScenario(ctx, &sc, o, stderr)
		if err != nil {
			return err
		}
		if err := writeScenarioReport(filepath.Join(o.out, sc.Name), sum, o.assets); err != nil {
			return err
		}
		sums = append(sums, sum)
	}
	if err := writeIndex(o.out, sums, o.assets); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sweep of tier %q in %s (%d requests)\n", *tier, base.Name, sums[0].Trace.Requests)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "capacity\thierarchy $\tpolicy\thit\tTTFT p50 ms\tp99\tmoved GiB\t")
	for i, s := range sums {
		for _, p := range s.Policies {
			var moved int64
			for _, b := range p.BytesMoved {
				moved += b
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%.1f\t%.1f\t%.1f\t\n", labels[i], s.CostUSD, p.Name, pct(p.HitRatio),
				p.TTFTms.P50, p.TTFTms.P99, float64(moved)/(1<<30))
		}
	}
	tw.Flush()
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(o.out, "index.html"))
	return nil
}
