package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"kvsim/trace"
	"kvsim/workload"
)

// fitPercents are the sizes, in percent of the distinct blocks, at which
// trace fit matches the LRU curves (100: the hit ceiling).
var fitPercents = []float64{1, 2, 5, 10, 25, 50, 100}

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
	t, err := loadTrace(ctx, "trace fit", *path, trace.Options{BlockTokens: *bt, Format: *format, Limit: *limit}, nil)
	if err != nil {
		return err
	}
	if t.prof.Distinct() == 0 {
		return badInputf("trace fit: --trace: %s has no hash ids to fit to", *path)
	}
	res, err := fitTrace(ctx, t, *bt, *seed)
	if err != nil {
		return err
	}
	writeFit(stdout, filepath.Base(*path), t, res)
	return nil
}

// fitTrace fits the injection parameters to t's LRU curve.
func fitTrace(ctx context.Context, t *loadedTrace, bt int, seed int64) (workload.FitResult, error) {
	distinct := t.prof.Distinct()
	sizes := make([]int, len(fitPercents))
	for i, p := range fitPercents {
		sizes[i] = max(1, int(p/100*float64(distinct)))
	}
	target := lruHits(t.ids, t.starts, sizes)
	sys := workload.SharedPrefixBlocks(t.ids, t.starts) * bt
	return workload.Fit(ctx, t.shapes, bt, seed, sys, sizes, target, lruHits)
}

// writeFit prints the fit as a [workload.inject] table, the curves it
// matched in comments above it.
func writeFit(w io.Writer, name string, t *loadedTrace, r workload.FitResult) {
	fmt.Fprintf(w, "# kvsim trace fit: %s, %d requests, %d block accesses, %d distinct blocks\n",
		name, t.prof.Requests, t.prof.BlockAccesses, t.prof.Distinct())
	fmt.Fprintln(w, "# LRU hit ratio at a share of the distinct blocks: trace, fitted")
	for i, p := range fitPercents {
		fmt.Fprintf(w, "#   %3g%% (%d blocks): %5.1f%%  %5.1f%%\n", p, r.Sizes[i], 100*r.Target[i], 100*r.Fitted[i])
	}
	fmt.Fprintf(w, "# largest difference %.1f points (%d injections tried)\n", 100*r.MaxAbsError(), r.Evals)
	fmt.Fprintln(w, "# for a trace with ids of its own, replace = true replaces them")
	fmt.Fprint(w, injectTOML(r.Inject))
}

// injectTOML renders c as a [workload.inject] table.
func injectTOML(c workload.Inject) string {
	var b strings.Builder
	b.WriteString("[workload.inject]\n")
	fmt.Fprintf(&b, "system_tokens = %d\n", c.SystemTokens)
	if c.Tenants > 0 {
		fmt.Fprintf(&b, "tenants = %d\ntenant_tokens = %d\ntenant_zipf = %s\n", c.Tenants, c.TenantTokens, fmtFloat(c.TenantZipf))
	}
	fmt.Fprintf(&b, "session_continue = %s\nsessions = %d\nsession_gap = %d\n", fmtFloat(c.SessionContinue), c.Sessions, c.SessionGap)
	return b.String()
}

// fmtFloat writes x as a TOML float.
func fmtFloat(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
