package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"kvsim/experiment"
	"kvsim/mrc"
	"kvsim/policy"
	"kvsim/report"
	"kvsim/results"
	"kvsim/trace"
)

func runMrc(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mrc", "kvsim mrc --trace FILE [--format F] --policies LIST --sizes LIST [--mode block|prefix] [--json] [--html FILE [--assets DIR]] [--bench] [--sample RATE]", stderr)
	tracePath := fs.String("trace", "", "trace `FILE` (or a binary trace from kvsim trace convert)")
	format := fs.String("format", "mooncake", "trace `FORMAT`: "+strings.Join(trace.Formats(), ", "))
	blockTokens := fs.Int("block-tokens", trace.DefaultBlockTokens, "tokens per block `N` (bailian: a multiple of 16, its 16-token blocks regrouped)")
	policies := fs.String("policies", "", "comma-separated eviction policies, each NAME or NAME:key=value:... (`LIST`; "+
		strings.Join(append(policy.Names(), mrc.StackLRU), ", ")+")")
	sizes := fs.String("sizes", "", "comma-separated cache sizes: blocks (1000) or percent of distinct blocks (10%) (`LIST`)")
	mode := fs.String("mode", "block", "`block`: every reference counts on its own; prefix: a reference hits only if its whole request prefix hit")
	asJSON := fs.Bool("json", false, "print a JSON list instead of a table")
	bench := fs.Bool("bench", false, "measure replay speed (accesses/s on one core, allocations per access) instead")
	htmlOut := fs.String("html", "", "also write the curves as an HTML chart to `FILE`")
	assets := fs.String("assets", "", "with --html: local ECharts 5 dist `DIR`; echarts.min.js is copied next to FILE")
	sample := fs.Float64("sample", 0, "SHARDS spatial sampling `RATE` in (0,1]: replay that share of blocks, with sizes scaled by it")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInputf("mrc: unexpected argument %q (the trace goes in --trace)", pos[0])
	}
	if *tracePath == "" {
		return badInputf("mrc: --trace: required")
	}
	if !slices.Contains(trace.Formats(), *format) {
		return badInputf("mrc: --format: unknown trace format %q (known: %s)", *format, strings.Join(trace.Formats(), ", "))
	}
	if *blockTokens <= 0 || (*format == "bailian" && *blockTokens%16 != 0) {
		return badInputf("mrc: --block-tokens: want a positive number of tokens (a multiple of 16 for bailian), got %d", *blockTokens)
	}
	var m mrc.Mode
	switch *mode {
	case "block":
		m = mrc.BlockMode
	case "prefix":
		m = mrc.PrefixMode
	default:
		return badInputf("mrc: --mode: want block or prefix, got %q", *mode)
	}
	if *sample < 0 || *sample > 1 || *sample != *sample {
		return badInputf("mrc: --sample: rate must be in (0,1], got %v", *sample)
	}
	if *sample > 0 && *sample < 1 && m == mrc.PrefixMode {
		return badInputf("mrc: --sample works in block mode only (prefix hits depend on blocks a sample drops)")
	}
	if *bench && *sample > 0 && *sample < 1 {
		return badInputf("mrc: --bench replays the whole trace; drop --sample")
	}
	if *bench && *htmlOut != "" {
		return badInputf("mrc: --bench measures speed and draws no curve; drop --html")
	}
	specs, err := parseSpecs(*policies)
	if err != nil {
		return err
	}
	want, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	// The page's paths are checked before the trace is read (minutes for a
	// large one): a bad one is bad input naming the user's path.
	if *htmlOut != "" {
		if err := checkPage("mrc", *htmlOut, *assets, []role{{"--trace", *tracePath}}); err != nil {
			return err
		}
	} else if *assets != "" {
		return badInputf("mrc: --assets is for the --html page; add --html FILE or drop --assets")
	}

	release, err := experiment.SpoolTrace(ctx, *tracePath) // a pipe or device: checked, and ctx ends it
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return badInputf("mrc: --trace: %v", err)
	}
	defer release()
	tr, err := mrc.LoadContext(ctx, *tracePath, trace.Options{Format: *format, BlockTokens: *blockTokens})
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return badInputf("mrc: --trace: %v", pe) // names the file
		}
		return badInput(err) // FILE:LINE: reason
	}
	if tr.Distinct == 0 {
		return badInputf("mrc: --trace: %s holds no blocks", *tracePath)
	}
	blocks, capped, err := mrc.ResolveSizes(want, tr.Distinct)
	if err != nil {
		return badInputf("mrc: --sizes: %v", err)
	}
	// Warned once the input is known good: bad input stays one line.
	warnCapped := func() {
		for _, c := range capped {
			if c != "" {
				fmt.Fprintf(stderr, "kvsim: warning: mrc: --sizes: %s is more than the trace's %d distinct blocks; capped to %d (a larger cache misses exactly as often)\n",
					c, tr.Distinct, tr.Distinct)
			}
		}
	}
	if *bench {
		warnCapped()
		return mrcBench(ctx, tr, specs, blocks, m, *asJSON, stdout)
	}

	sampled := *sample > 0 && *sample < 1
	res, run, err := mrc.SampledCurve(ctx, tr, specs, blocks, capped, *sample, mrc.Options{Mode: m})
	var empty *mrc.EmptySampleError
	if errors.As(err, &empty) {
		return badInputf("mrc: --sample: %v", empty)
	}
	if err != nil {
		return err
	}
	warnCapped()
	if *htmlOut != "" {
		title := fmt.Sprintf("%s: %s mode, %d references, %d distinct blocks", filepath.Base(*tracePath), m, len(tr.Blocks), tr.Distinct)
		if err := writeMRCHTML(*htmlOut, *assets, title, res); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "%s: %d requests, %d references, %d distinct blocks; %s mode", filepath.Base(*tracePath),
		tr.Requests(), len(tr.Blocks), tr.Distinct, m)
	if sampled {
		fmt.Fprintf(stdout, "; sampled at %g (%d distinct blocks, %d references, SHARDS-adj)", *sample, run.Distinct, len(run.Blocks))
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tsize_blocks\taccesses\tmisses\tmiss_ratio\t")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.4f\t\n", r.Policy, r.SizeBlocks, r.Accesses, r.Misses, r.MissRatio)
	}
	return tw.Flush()
}

func parseSpecs(list string) ([]mrc.Spec, error) {
	if strings.TrimSpace(list) == "" {
		return nil, badInputf("mrc: --policies: required (known: %s)", strings.Join(append(policy.Names(), mrc.StackLRU), ", "))
	}
	var specs []mrc.Spec
	for _, s := range strings.Split(list, ",") {
		sp, err := mrc.ParseSpec(s)
		if err == nil {
			err = sp.Check()
		}
		if err != nil {
			return nil, badInputf("mrc: --policies: %v", err)
		}
		specs = append(specs, sp)
	}
	return specs, nil
}

func parseSizes(list string) ([]mrc.Size, error) {
	if strings.TrimSpace(list) == "" {
		return nil, badInputf("mrc: --sizes: required (blocks like 1000, or percentages of distinct blocks like 10%%)")
	}
	sizes, err := mrc.ParseSizes(list)
	if err != nil {
		return nil, badInputf("mrc: --sizes: %v", err)
	}
	return sizes, nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := results.MarshalJSON(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// mrcBench prints mrc.BenchCurve's rows.
func mrcBench(ctx context.Context, tr *mrc.Trace, specs []mrc.Spec, sizes []int, mode mrc.Mode, asJSON bool, stdout io.Writer) error {
	rows, err := mrc.BenchCurve(ctx, tr, specs, sizes, mode)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, rows)
	}
	fmt.Fprintf(stdout, "replay speed on one core, in process (trace already read), second of two passes over %d references (lru-stack: one pass, all sizes); miss ratio of the curve (%s mode)\n", len(tr.Blocks), mode)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tsize_blocks\tM accesses/s\tallocs/access\tmiss_ratio\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.3g\t%.4f\t\n", r.Policy, r.SizeBlocks, r.AccessesPerSec/1e6, r.AllocsPerAccess, r.MissRatio)
	}
	return tw.Flush()
}

// writeMRCHTML renders the curves with the report package.
func writeMRCHTML(path, assets, title string, res []mrc.Result) error {
	var curves []report.Curve
	idx := map[string]int{}
	for _, r := range res {
		i, ok := idx[r.Policy]
		if !ok {
			i = len(curves)
			idx[r.Policy] = i
			curves = append(curves, report.Curve{Policy: r.Policy})
		}
		curves[i].SizeBlocks = append(curves[i].SizeBlocks, r.SizeBlocks)
		curves[i].MissRatio = append(curves[i].MissRatio, r.MissRatio)
	}
	o, err := experiment.PageOptions(filepath.Dir(path), assets)
	if err != nil {
		return badInput(err)
	}
	var b bytes.Buffer
	if err := report.MRC(&b, title, curves, o); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(path, b.Bytes()); err != nil {
		return badInputf("mrc: --html: %v", err)
	}
	return nil
}
