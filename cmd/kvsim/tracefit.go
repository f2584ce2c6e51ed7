package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"kvsim/experiment"
	"kvsim/trace"
	"kvsim/workload"
)

func traceFit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trace fit", "kvsim trace fit --trace HASHED [--format F] [--block-tokens N] [--seed N] [--limit N]", stderr)
	path := fs.String("trace", "", "a trace with hash ids whose reuse to fit (`FILE`)")
	format := fs.String("format", "mooncake", "trace `FORMAT` ("+strings.Join(traceFormats, ", ")+")")
	bt := fs.Int("block-tokens", trace.DefaultBlockTokens, "tokens per hash id and per injected block (`N`)")
	seed := fs.Int64("seed", 1, "injection seed the fit draws with (`N`; the scenario's seed when replayed)")
	limit := fs.Int("limit", 0, "fit to the first `N` requests (0: all)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInputf("trace fit: unexpected argument %q (the trace goes in --trace)", pos[0])
	}
	if *path == "" {
		return badInputf("trace fit: --trace: required")
	}
	if err := checkFormat("trace fit", *format); err != nil {
		return err
	}
	if *bt < 1 || *bt > trace.MaxTokens {
		return badInputf("trace fit: --block-tokens: must be in 1..%d, got %d", trace.MaxTokens, *bt)
	}
	if *limit < 0 {
		return badInputf("trace fit: --limit: must be >= 0, got %d", *limit)
	}
	t, err := readTraceData(ctx, "trace fit", *path, trace.Options{BlockTokens: *bt, Format: *format, Limit: *limit}, nil)
	if err != nil {
		return err
	}
	if t.Profile.Distinct() == 0 {
		return badInputf("trace fit: --trace: %s has no hash ids to fit to", *path)
	}
	res, err := t.Fit(ctx, *bt, *seed)
	if err != nil {
		return err
	}
	writeFit(stdout, filepath.Base(*path), t, res)
	return nil
}

// writeFit prints the fit as a [workload.inject] table, the curves it
// matched in comments above it.
func writeFit(w io.Writer, name string, t *experiment.TraceData, r workload.FitResult) {
	fmt.Fprintf(w, "# kvsim trace fit: %s, %d requests, %d block accesses, %d distinct blocks\n",
		name, t.Profile.Requests, t.Profile.BlockAccesses, t.Profile.Distinct())
	fmt.Fprintln(w, "# LRU hit ratio at a share of the distinct blocks: trace, fitted")
	for i, p := range experiment.FitPercents {
		fmt.Fprintf(w, "#   %3g%% (%d blocks): %5.1f%%  %5.1f%%\n", p, r.Sizes[i], 100*r.Target[i], 100*r.Fitted[i])
	}
	fmt.Fprintf(w, "# largest difference %.1f points (%d injections tried)\n", 100*r.MaxAbsError(), r.Evals)
	fmt.Fprintln(w, "# for a trace with ids of its own, replace = true replaces them")
	fmt.Fprint(w, experiment.InjectTOML(r.Inject))
}
