package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"kvsim/experiment"
	"kvsim/report"
	"kvsim/results"
	"kvsim/scenario"
)

// errNoneMeets is a plan whose grid holds no configuration meeting the
// SLO: exit 1, after the table.
var errNoneMeets = errors.New("plan: no configuration in the grid meets the SLO")

// runPlan answers "what is the cheapest hierarchy that meets my SLO": it
// searches a grid of tier capacities, simulating only the points the
// monotone search cannot infer (docs/plan.md).
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plan", "kvsim plan SCENARIO.toml --slo ttft_p99=MS[,tpot_p99=MS,attainment=0.99] --vary tier.NAME.capacity=A..B [--vary ...] [--budget $] [--steps N] [--margin SHARE] [--exhaustive] [--out DIR] [--json] [--html FILE [--assets DIR]]", stderr)
	var o runOptions
	sloFlag := fs.String("slo", "", "the targets, `TERMS`: ttft_p99=MS, tpot_p99=MS, attainment=SHARE (comma-separated)")
	var varies setFlags
	fs.Var(&varies, "vary", "a tier capacity range, `tier.NAME.capacity=A..B` (repeatable): the grid crosses them")
	budgetFlag := fs.String("budget", "", "leave out configurations costing more than `$` (hierarchy cost)")
	steps := fs.Int("steps", 0, "capacities per varied tier: `N` geometric steps from A to B (0: A doubled up to B, then B)")
	fs.StringVar(&o.out, "out", "", "write each simulated point's results under `DIR`/<scenario>-<tier>-<value>/ as kvsim sweep does (default: none)")
	fs.IntVar(&o.limit, "limit", 0, "replay at most `N` requests")
	fs.IntVar(&o.workers, "parallel", runtime.GOMAXPROCS(0), "simulate up to `N` policies at once")
	asJSON := fs.Bool("json", false, "print the plan as JSON instead of a table")
	htmlOut := fs.String("html", "", "also write the plan as an HTML page to `FILE`: $ against TTFT p99 of every simulated point, the Pareto front")
	assets := fs.String("assets", "", "with --html: local ECharts 5 dist `DIR`; echarts.min.js is copied next to FILE")
	exhaustive := fs.Bool("exhaustive", false, "simulate every point of the grid (to check the search)")
	margin := fs.Float64("margin", experiment.DefaultPlanMargin, "skip a point unsimulated only when one with no less capacity misses the SLO by more than this `SHARE` of the target")
	addWaitFlag(fs, &o.wait)
	addSetFlag(fs, &o.sets)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInputf("plan: want exactly one SCENARIO.toml, got %d", len(pos))
	}
	if o.workers < 1 || o.limit < 0 {
		return badInputf("plan: --parallel must be >= 1 and --limit >= 0")
	}
	if !(*margin >= 0 && *margin <= 10) {
		return badInputf("plan: --margin %v: want a share of the target in [0, 10], e.g. 0.25", *margin)
	}
	if *steps < 0 || *steps == 1 {
		return badInputf("plan: --steps %d: want 0 (powers of two) or N >= 2", *steps)
	}
	slo, err := parseSLO(*sloFlag)
	if err != nil {
		return err
	}
	var budget float64
	if *budgetFlag != "" {
		b, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(*budgetFlag), "$"), 64)
		if err != nil || !(b > 0) || b > 1e300 {
			return badInputf("plan: --budget %q: want a positive number of dollars, e.g. 5000", *budgetFlag)
		}
		budget = b
	}
	base, err := scenario.LoadWith(pos[0], o.sets)
	if err != nil {
		return badInput(err)
	}
	if len(varies) == 0 {
		return badInputf("plan: --vary: give at least one, e.g. --vary tier.ssd.capacity=256GiB..4TiB")
	}
	var dims []experiment.PlanDim
	for _, v := range varies {
		d, err := parseVary(v, base, pos[0], *steps)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(dims, func(e experiment.PlanDim) bool { return e.Tier == d.Tier }) {
			return badInputf("plan: --vary %q: tier %q is varied twice", v, d.Tier)
		}
		dims = append(dims, d)
	}
	// Attainment is slo_attainment, measured against the scenario's
	// [slo]; a scenario without one gets the p99 targets as its [slo].
	sets := o.sets
	if slo.Attainment > 0 && !base.SLO.Set() {
		if slo.TTFTp99 == 0 && slo.TPOTp99 == 0 {
			return badInputf("plan: --slo attainment: needs ttft_p99 or tpot_p99 (per-request targets) when %s has no [slo]", pos[0])
		}
		if slo.TTFTp99 > 0 {
			sets = append(sets, fmt.Sprintf("slo.ttft_ms=%g", slo.TTFTp99))
		}
		if slo.TPOTp99 > 0 {
			sets = append(sets, fmt.Sprintf("slo.tpot_ms=%g", slo.TPOTp99))
		}
	}
	if err := checkAssetsFlag("plan", *htmlOut, *assets); err != nil {
		return err
	}
	if *htmlOut != "" {
		ins := []role{{"the scenario", pos[0]}, {"the hardware profile", base.Profile}}
		if base.Workload.Gen == nil {
			ins = append(ins, role{"the trace", base.Workload.Trace})
		}
		if err := checkPage("plan", *htmlOut, *assets, ins); err != nil {
			return err
		}
	}
	p, err := experiment.LoadPlan(pos[0], sets, dims, nil)
	if err != nil {
		return err
	}
	if err := p.Points[0].CheckTrace(); err != nil {
		return badInput(err)
	}
	if o.out != "" {
		ins := []role{{"the scenario", pos[0]}, {"the hardware profile", base.Profile}}
		if base.Workload.Gen == nil {
			ins = append(ins, role{"the trace", base.Workload.Trace})
		}
		for _, sc := range p.Points {
			for _, f := range results.SetFiles {
				if err := checkNotInput("plan: --out", filepath.Join(o.out, sc.Name, f), ins); err != nil {
					return err
				}
			}
		}
	}
	po := experiment.PlanOptions{Options: o.output("plan: --out", stderr), SLO: slo, Budget: budget, Exhaustive: *exhaustive, Margin: *margin}
	po.Limit, po.Workers = o.limit, o.workers
	po.Done = func(k int, sum *results.Summary) {
		if !*asJSON {
			fmt.Fprintf(stderr, "plan: simulated %s\n", valueLabel(p, p.Values[k]))
		}
		warnEmpty(stderr, sum)
	}
	r, err := p.Search(ctx, po)
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := results.MarshalJSON(r)
		if err != nil {
			return err
		}
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	} else {
		printPlan(stdout, p, r)
	}
	if *htmlOut != "" {
		if err := writePlanPage(*htmlOut, *assets, p, r); err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "wrote %s\n", *htmlOut)
		}
	}
	if r.Best == nil {
		return errNoneMeets
	}
	return nil
}

// parseSLO reads --slo: ttft_p99 and tpot_p99 in ms (a bare number, or
// with ms or s), attainment a share in (0, 1].
func parseSLO(v string) (experiment.SLOTarget, error) {
	var t experiment.SLOTarget
	if strings.TrimSpace(v) == "" {
		return t, badInputf("plan: --slo: required, e.g. --slo ttft_p99=500,attainment=0.99")
	}
	for _, term := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(term), "=")
		val = strings.TrimSpace(val)
		if !ok {
			return t, badInputf("plan: --slo %q: want TERM=VALUE terms (ttft_p99=MS, tpot_p99=MS, attainment=SHARE, life_years=Y)", v)
		}
		switch strings.TrimSpace(k) {
		case "ttft_p99", "tpot_p99":
			ms, err := parseMs(val)
			if err != nil {
				return t, badInputf("plan: --slo %s=%q: want milliseconds > 0, e.g. 500 or 500ms or 0.5s", k, val)
			}
			if k == "ttft_p99" {
				t.TTFTp99 = ms
			} else {
				t.TPOTp99 = ms
			}
		case "attainment":
			a, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 64)
			if err == nil && strings.HasSuffix(val, "%") {
				a /= 100
			}
			if err != nil || !(a > 0 && a <= 1) {
				return t, badInputf("plan: --slo attainment=%q: want a share in (0, 1], e.g. 0.99", val)
			}
			t.Attainment = a
		case "life_years":
			y, err := strconv.ParseFloat(val, 64)
			if err != nil || !(y > 0) || math.IsInf(y, 0) {
				return t, badInputf("plan: --slo life_years=%q: want years > 0, e.g. 5", val)
			}
			t.LifeYears = y
		default:
			return t, badInputf("plan: --slo: unknown term %q (terms: ttft_p99, tpot_p99, attainment, life_years)", k)
		}
	}
	return t, nil
}

func parseMs(v string) (float64, error) {
	scale := 1.0
	switch {
	case strings.HasSuffix(v, "ms"):
		v = strings.TrimSuffix(v, "ms")
	case strings.HasSuffix(v, "s"):
		v, scale = strings.TrimSuffix(v, "s"), 1000
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f > 0) || f > 1e12 {
		return 0, fmt.Errorf("bad")
	}
	return f * scale, nil
}

// parseVary reads --vary tier.NAME.capacity=A..B into a dim.
func parseVary(v string, base *scenario.Scenario, path string, steps int) (experiment.PlanDim, error) {
	key, rng, ok := strings.Cut(v, "=")
	name, isCap := strings.CutSuffix(strings.TrimPrefix(key, "tier."), ".capacity")
	if !ok || !strings.HasPrefix(key, "tier.") || !isCap || name == "" {
		return experiment.PlanDim{}, badInputf("plan: --vary %q: want tier.NAME.capacity=A..B, e.g. tier.ssd.capacity=256GiB..4TiB", v)
	}
	if !slices.ContainsFunc(base.Tiers, func(t scenario.Tier) bool { return t.Name == name }) {
		var names []string
		for _, t := range base.Tiers {
			names = append(names, t.Name)
		}
		return experiment.PlanDim{}, badInputf("plan: --vary %q: %s has no tier %q (tiers: %s)", v, path, name, strings.Join(names, ", "))
	}
	as, bs, ok := strings.Cut(rng, "..")
	a, errA := scenario.ParseBytes(strings.TrimSpace(as))
	b, errB := scenario.ParseBytes(strings.TrimSpace(bs))
	if !ok || errA != nil || errB != nil || a <= 0 || b <= 0 {
		return experiment.PlanDim{}, badInputf("plan: --vary %q: want a range of positive sizes A..B, e.g. 64GiB..1TiB", v)
	}
	if a > b {
		return experiment.PlanDim{}, badInputf("plan: --vary %q: the range is reversed (%s > %s): give A..B with A <= B", v, strings.TrimSpace(as), strings.TrimSpace(bs))
	}
	d := experiment.PlanDim{Tier: name}
	for _, n := range experiment.PlanSteps(a, b, steps) {
		d.Values = append(d.Values, experiment.SizeString(n))
	}
	return d, nil
}

// valueLabel names a point by its varied tiers: host=64GiB ssd=1TiB.
func valueLabel(p *experiment.Plan, value string) string { return p.Label(value) }

func sloString(t experiment.SLOTarget) string {
	var s []string
	if t.TTFTp99 > 0 {
		s = append(s, fmt.Sprintf("TTFT p99 <= %g ms", t.TTFTp99))
	}
	if t.TPOTp99 > 0 {
		s = append(s, fmt.Sprintf("TPOT p99 <= %g ms", t.TPOTp99))
	}
	if t.Attainment > 0 {
		s = append(s, fmt.Sprintf("attainment >= %g", t.Attainment))
	}
	if t.LifeYears > 0 {
		s = append(s, fmt.Sprintf("rated tiers last >= %g years", t.LifeYears))
	}
	return strings.Join(s, ", ")
}

// printPlan writes the plan as tables: the choice, each policy's, why the
// next cheaper point fails, and the Pareto front of the simulated points.
func printPlan(w io.Writer, p *experiment.Plan, r *experiment.PlanResult) {
	var grid []string
	for _, d := range p.Dims {
		grid = append(grid, fmt.Sprintf("%s %s..%s (%d)", d.Tier, d.Values[0], d.Values[len(d.Values)-1], len(d.Values)))
	}
	fmt.Fprintf(w, "plan for %s: %s; grid %s = %d points x %d policies\n", p.Base.Name, sloString(r.SLO), strings.Join(grid, " x "), r.GridPoints, len(p.Base.Policies))
	within := r.GridPoints - r.OverBudget
	fmt.Fprintf(w, "simulated %d of %d points", r.Simulated, within)
	if r.OverBudget > 0 {
		fmt.Fprintf(w, " within the $%g budget (%d over it)", r.Budget, r.OverBudget)
	}
	fp := ""
	if r.FootprintBytes > 0 {
		fp = " of " + scenario.FormatBytes(r.FootprintBytes)
	}
	fmt.Fprintf(w, "; skipped %d (%d implied by a point with more capacity missing by over %g%%, %d repeating a failing run, %d past the trace's footprint%s, %d dearer than a passing point)\n\n",
		r.Skipped, r.Implied, 100*r.Margin, r.SameRun, r.BeyondFootprint, fp, r.Dearer)
	if r.Best == nil {
		fmt.Fprintln(w, "no configuration in the grid meets the SLO")
	} else {
		b := r.Best.Point
		fmt.Fprintf(w, "cheapest meeting the SLO: %s with %s: $%.0f, TTFT p99 %.1f ms, TPOT p99 %.2f ms, hit %s\n",
			valueLabel(p, b.Value), b.Policy, b.CostUSD, b.TTFTp99, b.TPOTp99, pct(b.HitRatio))
		if f := r.NextCheaper; f != nil {
			misses := strings.Join(f.Evidence.Misses, "; ")
			if f.SameRun {
				fmt.Fprintf(w, "next cheaper: %s ($%.0f) fails with %s, inferred: its run is %s's (the tiers it changes never filled there), which misses %s\n",
					valueLabel(p, f.Value), f.CostUSD, b.Policy, valueLabel(p, f.Evidence.Value), misses)
			} else if f.Inferred {
				// Its own numbers are unknown: the failing point that implies it.
				fmt.Fprintf(w, "next cheaper: %s ($%.0f) fails with %s, inferred: %s, with no less capacity, misses %s (over the margin)\n",
					valueLabel(p, f.Value), f.CostUSD, b.Policy, valueLabel(p, f.Evidence.Value), misses)
			} else {
				fmt.Fprintf(w, "next cheaper: %s ($%.0f) fails with %s: %s\n", valueLabel(p, f.Value), f.CostUSD, b.Policy, misses)
			}
		} else {
			fmt.Fprintln(w, "next cheaper: none (the cheapest point of the grid within the budget)")
		}
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "warning: more capacity hurt: %s; the choice may not be the grid's cheapest: check with --exhaustive\n", v)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "policy\tcheapest meeting\t$\tTTFT p99 ms\tTPOT p99\thit\t\n")
	for _, c := range r.PerPolicy {
		if !c.Met {
			fmt.Fprintf(tw, "%s\tnone\t-\t-\t-\t-\t\n", c.Policy)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.2f\t%s\t\n", c.Policy, valueLabel(p, c.Point.Value), c.Point.CostUSD, c.Point.TTFTp99, c.Point.TPOTp99, pct(c.Point.HitRatio))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nPareto front ($ against TTFT p99) of the simulated points:")
	// The ledger's columns only where the scenario prices GPU time or
	// rates a tier's endurance: without either they say nothing new.
	ledger := false
	for _, o := range r.Pareto {
		ledger = ledger || o.LifeYears != nil || o.RunUSD != 0 && o.USDPerMOutput != nil && p.Base.GPU.CostPerHour > 0
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if ledger {
		fmt.Fprintf(tw, "config\t$\tpolicy\tTTFT p99 ms\thit\tSLO\t$/M output\tshortest life y\t\n")
	} else {
		fmt.Fprintf(tw, "config\t$\tpolicy\tTTFT p99 ms\thit\tSLO\t\n")
	}
	for _, o := range r.Pareto {
		met := "meets"
		if !o.Meets {
			met = "misses"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.1f\t%s\t%s\t", valueLabel(p, o.Value), o.CostUSD, o.Policy, o.TTFTp99, pct(o.HitRatio), met)
		if ledger {
			perM, life := "-", "-"
			if o.USDPerMOutput != nil {
				perM = fmt.Sprintf("%.4g", *o.USDPerMOutput)
			}
			if o.LifeYears != nil {
				life = fmt.Sprintf("%.3g (%s)", *o.LifeYears, o.LifeTier)
			}
			fmt.Fprintf(tw, "%s\t%s\t", perM, life)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// writePlanPage renders the plan's page (report.PlanPage) whole to path.
func writePlanPage(path, assets string, p *experiment.Plan, r *experiment.PlanResult) error {
	o, err := experiment.PageOptions(filepath.Dir(path), assets)
	if err != nil {
		return badInput(err)
	}
	var b strings.Builder
	printPlan(&b, p, r)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	v := report.Plan{Title: fmt.Sprintf("kvsim plan: %s", p.Base.Name), TTFTSLO: r.SLO.TTFTp99,
		Head: []string{"config", "$", "policy", "TTFT p99 ms", "hit", "SLO"}}
	for _, l := range lines[:min(len(lines), 4)] { // the choice and why the next cheaper fails, in words
		if strings.TrimSpace(l) != "" {
			v.Facts = append(v.Facts, l)
		}
	}
	point := func(o experiment.PlanOutcome) report.PlanPoint {
		return report.PlanPoint{Policy: o.Policy, Label: valueLabel(p, o.Value), CostUSD: o.CostUSD, TTFTp99: o.TTFTp99, Meets: o.Meets}
	}
	for _, o := range r.Points {
		v.Points = append(v.Points, point(o))
	}
	for _, o := range r.Pareto {
		v.Front = append(v.Front, point(o))
		met := "meets"
		if !o.Meets {
			met = "misses"
		}
		v.Rows = append(v.Rows, []string{valueLabel(p, o.Value), fmt.Sprintf("%.0f", o.CostUSD), o.Policy, fmt.Sprintf("%.1f", o.TTFTp99), pct(o.HitRatio), met})
	}
	var page bytes.Buffer
	if err := report.PlanPage(&page, v, o); err != nil {
		return fmt.Errorf("plan: --html: %w", err)
	}
	if err := results.WriteFileAtomic(path, page.Bytes()); err != nil {
		return fmt.Errorf("plan: --html: %w", err)
	}
	return nil
}
