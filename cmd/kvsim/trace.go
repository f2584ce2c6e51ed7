package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"kvsim/experiment"
	"kvsim/trace"
	"kvsim/workload"
)

// runTrace dispatches kvsim trace's subcommands.
func runTrace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const use = "usage: kvsim trace <stats|fit|convert> [flags] (kvsim trace <subcommand> -h for its flags)"
	if len(args) == 0 {
		return badInputf("trace: no subcommand given (stats, fit or convert)")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, use)
		return nil
	case "stats":
		return traceStats(ctx, args[1:], stdout, stderr)
	case "fit":
		return traceFit(ctx, args[1:], stdout, stderr)
	case "convert":
		return runTraceConvert(ctx, args[1:], stdout, stderr)
	}
	return badInputf("trace: unknown subcommand %q (stats, fit or convert)", args[0])
}

// traceFormats are the formats --format accepts: the readers'.
var traceFormats = trace.Formats()

func checkFormat(cmd, f string) error {
	if !slices.Contains(traceFormats, f) {
		return badInputf("%s: --format: unknown trace format %q (known: %s)", cmd, f, strings.Join(traceFormats, ", "))
	}
	return nil
}

// readTraceData reads path whole for stats and fit; bad input is one
// line naming the file (and line), prefixed with the command.
func readTraceData(ctx context.Context, cmd, path string, opt trace.Options, in *workload.Injector) (*experiment.TraceData, error) {
	t, err := experiment.ReadTraceData(ctx, path, opt, in)
	var le *trace.LineError
	var ie *experiment.InputError
	if err != nil && !errors.As(err, &le) && errors.As(err, &ie) {
		return nil, badInputf("%s: %v", cmd, err)
	}
	return t, err
}

func traceStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trace stats", "kvsim trace stats FILE [--format F] [--block-tokens N] [--inject FILE.toml [--seed N]] [--json]", stderr)
	format := fs.String("format", "mooncake", "trace `FORMAT` ("+strings.Join(traceFormats, ", ")+")")
	bt := fs.Int("block-tokens", trace.DefaultBlockTokens, "tokens per hash id (`N`)")
	asJSON := fs.Bool("json", false, "print JSON (schema in docs/workloads.md)")
	injectPath := fs.String("inject", "", "give the requests ids by the [workload.inject] table in `FILE` (as trace fit prints it) first")
	seed := fs.Int64("seed", 1, "with --inject: the injection seed (`N`; a scenario's seed)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInputf("trace stats: want exactly one trace FILE, got %d", len(pos))
	}
	if err := checkFormat("trace stats", *format); err != nil {
		return err
	}
	if *bt < 1 || *bt > trace.MaxTokens {
		return badInputf("trace stats: --block-tokens: must be in 1..%d, got %d", trace.MaxTokens, *bt)
	}
	var in *workload.Injector
	if *injectPath != "" {
		if in, err = experiment.LoadInjector(*injectPath, *seed, *bt); err != nil {
			return badInputf("trace stats: --inject: %v", err)
		}
	}
	t, err := readTraceData(ctx, "trace stats", pos[0], trace.Options{BlockTokens: *bt, Format: *format}, in)
	if err != nil {
		return err
	}
	s := t.Stats(pos[0], *format, *bt)
	if *asJSON {
		return writeJSON(stdout, s)
	}
	printStats(stdout, s)
	return nil
}

func printStats(w io.Writer, s *experiment.TraceStats) {
	opt := func(x *float64) string {
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f", *x)
	}
	fmt.Fprintf(w, "%s (%s, %d-token blocks)\n", filepath.Base(s.File), s.Format, s.BlockTokens)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "requests\t%d", s.Requests)
	if s.SkippedLines > 0 {
		fmt.Fprintf(tw, " (%d bad lines skipped)", s.SkippedLines)
	}
	fmt.Fprintf(tw, "\nspan\t%.1f s\narrival rate\t%.3g requests/s\n", s.SpanS, s.RatePerS)
	fmt.Fprintf(tw, "burstiness\tinter-arrival CV %s, peak/mean over 1 s windows %s\n", opt(s.InterarrivalCV), opt(s.PeakToMean1s))
	for _, l := range []struct {
		name string
		q    *experiment.Lengths
	}{{"input tokens", s.InputTokens}, {"output tokens", s.OutputTokens}} {
		if l.q != nil {
			fmt.Fprintf(tw, "%s\tmean %.0f, p50 %d, p90 %d, p99 %d, max %d\n", l.name, l.q.Mean, l.q.P50, l.q.P90, l.q.P99, l.q.Max)
		}
	}
	if s.InjectedRequests > 0 {
		fmt.Fprintf(tw, "injected\t%d requests were given ids by --inject\n", s.InjectedRequests)
	}
	fmt.Fprintf(tw, "block accesses\t%d\ndistinct blocks\t%d\n", s.BlockAccesses, s.DistinctBlocks)
	if s.RequestsWithoutIDs > 0 {
		fmt.Fprintf(tw, "without ids\t%d requests have no hash ids: their reuse is unknown ([workload.inject] gives them ids)\n", s.RequestsWithoutIDs)
	}
	if s.BlockAccesses > 0 {
		fmt.Fprintf(tw, "hit ceiling\t%.1f%% (infinite cache; a block's first reference misses)\n", 100*s.HitCeiling)
	}
	if d := s.ReuseDistance; d != nil {
		fmt.Fprintf(tw, "reuse distance\tp50 %d, p90 %d, p99 %d distinct blocks (%d reuses)\n", d.P50, d.P90, d.P99, s.Reuses)
	} else if s.BlockAccesses > 0 {
		fmt.Fprintf(tw, "reuse distance\tnone: no block is referenced twice, every policy ties\n")
	}
	tw.Flush()
	if len(s.LRU) > 0 {
		fmt.Fprintln(w, "LRU hit ratio by cache size (percent of distinct blocks):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "size\tblocks\thit\t")
		for _, p := range s.LRU {
			fmt.Fprintf(tw, "%g%%\t%d\t%.1f%%\t\n", p.SizePercent, p.SizeBlocks, 100*p.HitRatio)
		}
		tw.Flush()
	}
}
