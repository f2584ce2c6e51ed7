package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/BurntSushi/toml"

	"kvsim/mrc"
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

// loadedTrace is a trace read whole for stats and fit.
type loadedTrace struct {
	prof     *workload.Profile
	shapes   []workload.Shape
	ids      []int64 // every request's ids, flat: request r's are ids[starts[r]:starts[r+1]]
	starts   []int32
	skipped  int
	injected int64 // requests given ids by the injector
}

// loadTrace reads path to the end; errors are bad input naming the file
// (and line).
func loadTrace(ctx context.Context, cmd, path string, opt trace.Options, in *workload.Injector) (*loadedTrace, error) {
	r, err := trace.Open(path, opt)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, badInputf("%s: %v", cmd, pe)
		}
		return nil, badInputf("%s: %v", cmd, err)
	}
	defer r.Close()
	t := &loadedTrace{prof: workload.NewProfile(), starts: []int32{0}}
	var q trace.Request
	for n := 0; ; n++ {
		if n&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		err := r.Next(&q)
		if err == io.EOF {
			break
		}
		if err != nil {
			var le *trace.LineError
			if errors.As(err, &le) {
				return nil, badInput(err) // FILE:LINE: reason
			}
			return nil, badInputf("%s: %s: %v", cmd, path, err)
		}
		if in != nil && in.Applies(&q) {
			in.Apply(&q)
			t.injected++
		}
		t.prof.Add(&q)
		t.shapes = append(t.shapes, workload.Shape{Input: q.InputTokens, Output: q.OutputTokens})
		t.ids = append(t.ids, q.HashIDs...)
		if len(t.ids) > math.MaxInt32 {
			return nil, badInputf("%s: %s: more than 2^31-1 block references", cmd, path)
		}
		t.starts = append(t.starts, int32(len(t.ids)))
	}
	t.skipped = r.Skipped()
	return t, nil
}

// readInject reads a file's [workload.inject] table (other tables are
// ignored: a scenario will do): the keys a scenario takes, the defaults
// of the ones it leaves out.
func readInject(path string) (workload.Inject, error) {
	c := workload.DefaultInject()
	var doc struct {
		Workload struct {
			Inject struct {
				Replace         *bool    `toml:"replace"`
				SystemTokens    *int     `toml:"system_tokens"`
				Tenants         *int     `toml:"tenants"`
				TenantTokens    *int     `toml:"tenant_tokens"`
				TenantZipf      *float64 `toml:"tenant_zipf"`
				SessionContinue *float64 `toml:"session_continue"`
				Sessions        *int     `toml:"sessions"`
				SessionGap      *int     `toml:"session_gap"`
			} `toml:"inject"`
		} `toml:"workload"`
	}
	md, err := toml.DecodeFile(path, &doc)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return c, badInputf("trace stats: --inject: %v", pe)
		}
		var te toml.ParseError
		if errors.As(err, &te) {
			return c, badInputf("trace stats: --inject: %s:%d: %s", path, te.Position.Line, oneLineMsg(te.Message))
		}
		return c, badInputf("trace stats: --inject: %s: %s", path, oneLineMsg(err.Error()))
	}
	if !md.IsDefined("workload", "inject") {
		return c, badInputf("trace stats: --inject: %s has no [workload.inject] table", path)
	}
	for _, k := range md.Undecoded() {
		if len(k) == 3 && k[0] == "workload" && k[1] == "inject" {
			return c, badInputf("trace stats: --inject: %s: unknown key %q in [workload.inject]", path, k[2])
		}
	}
	in := doc.Workload.Inject
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.SystemTokens, in.SystemTokens)
	set(&c.Tenants, in.Tenants)
	set(&c.TenantTokens, in.TenantTokens)
	set(&c.Sessions, in.Sessions)
	set(&c.SessionGap, in.SessionGap)
	if in.Replace != nil {
		c.Replace = *in.Replace
	}
	if in.TenantZipf != nil {
		c.TenantZipf = *in.TenantZipf
	}
	if in.SessionContinue != nil {
		c.SessionContinue = *in.SessionContinue
	}
	return c, nil
}

// oneLineMsg keeps a library's message to one line.
func oneLineMsg(s string) string { return strings.Join(strings.Fields(s), " ") }

// mrcTrace is ids and starts with dense block ids, as mrc replays them.
func denseTrace(ids []int64, starts []int32) *mrc.Trace {
	reqs := make([][]int64, len(starts)-1)
	for r := range reqs {
		reqs[r] = ids[starts[r]:starts[r+1]]
	}
	return mrc.FromRequests(reqs)
}

// lruHits is workload.HitCurve by mrc's one-pass stack.
func lruHits(ids []int64, starts []int32, sizes []int) []float64 {
	st := mrc.NewStack(denseTrace(ids, starts))
	out := make([]float64, len(sizes))
	for i, n := range sizes {
		c := st.Counts(n)
		if c.Accesses > 0 {
			out[i] = float64(c.Hits) / float64(c.Accesses)
		}
	}
	return out
}

// statsPercents are the LRU sizes trace stats reports, in percent of the
// distinct blocks.
var statsPercents = []float64{1, 5, 10, 25, 50}

// TraceStats is kvsim trace stats --json (docs/workloads.md documents it).
type TraceStats struct {
	File         string `json:"file"`
	Format       string `json:"format"`
	BlockTokens  int    `json:"block_tokens"`
	Requests     int64  `json:"requests"`
	SkippedLines int    `json:"skipped_lines"`
	// Arrivals: span from the first to the last, requests per second over
	// it, coefficient of variation of the gaps (1 for Poisson; null with
	// fewer than 3 requests) and the busiest 1 s window over the mean one.
	SpanS          float64  `json:"span_s"`
	RatePerS       float64  `json:"rate_per_s"`
	InterarrivalCV *float64 `json:"interarrival_cv"`
	PeakToMean1s   *float64 `json:"peak_to_mean_1s"`
	InputTokens    *Lengths `json:"input_tokens"`  // null without requests
	OutputTokens   *Lengths `json:"output_tokens"` // null without requests
	// Blocks: references, distinct blocks and the hit ratio of an infinite
	// cache (a block's first reference misses); requests_without_ids have
	// no hash ids (a hashless format: see [workload.inject]).
	RequestsWithoutIDs int64   `json:"requests_without_ids"`
	InjectedRequests   int64   `json:"injected_requests"` // given ids by --inject
	BlockAccesses      int64   `json:"block_accesses"`
	DistinctBlocks     int     `json:"distinct_blocks"`
	HitCeiling         float64 `json:"hit_ceiling"`
	// Reuse: of the references that are not a block's first, how many
	// distinct blocks were referenced since the previous reference to the
	// same block, plus one (an LRU cache of that many blocks hits); null
	// without reuse.
	Reuses        int64      `json:"reuses"`
	ReuseDistance *Distances `json:"reuse_distance_blocks"`
	LRU           []LRUPoint `json:"lru"`
}

// Lengths are quantiles of a token count.
type Lengths struct {
	Mean float64 `json:"mean"`
	P50  int     `json:"p50"`
	P90  int     `json:"p90"`
	P99  int     `json:"p99"`
	Max  int     `json:"max"`
}

// Distances are quantiles of reuse distances, in blocks.
type Distances struct {
	P50 int `json:"p50"`
	P90 int `json:"p90"`
	P99 int `json:"p99"`
}

// LRUPoint is an LRU cache's hit ratio at one size.
type LRUPoint struct {
	SizePercent float64 `json:"size_percent"` // of the distinct blocks
	SizeBlocks  int     `json:"size_blocks"`
	HitRatio    float64 `json:"hit_ratio"`
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
		c, err := readInject(*injectPath)
		if err != nil {
			return err
		}
		if in, err = workload.NewInjector(c, *seed, *bt); err != nil {
			return badInputf("trace stats: --inject: %s: workload.inject: %v", *injectPath, err)
		}
	}
	t, err := loadTrace(ctx, "trace stats", pos[0], trace.Options{BlockTokens: *bt, Format: *format}, in)
	if err != nil {
		return err
	}
	s := computeStats(t, pos[0], *format, *bt)
	if *asJSON {
		return writeJSON(stdout, s)
	}
	printStats(stdout, s)
	return nil
}

// computeStats summarises a loaded trace.
func computeStats(t *loadedTrace, path, format string, bt int) *TraceStats {
	p := t.prof
	s := &TraceStats{File: path, Format: format, BlockTokens: bt, Requests: p.Requests, SkippedLines: t.skipped,
		SpanS: p.Span().Seconds(), RatePerS: p.Rate(), RequestsWithoutIDs: p.NoIDs, InjectedRequests: t.injected, BlockAccesses: p.BlockAccesses,
		DistinctBlocks: p.Distinct(), HitCeiling: p.Ceiling(), LRU: []LRUPoint{}}
	if cv := p.GapCV(); !math.IsNaN(cv) {
		s.InterarrivalCV = &cv
	}
	if pm := p.PeakToMean(); !math.IsNaN(pm) {
		s.PeakToMean1s = &pm
	}
	in, out := make([]int, len(t.shapes)), make([]int, len(t.shapes))
	for i, sh := range t.shapes {
		in[i], out[i] = sh.Input, sh.Output
	}
	s.InputTokens, s.OutputTokens = lengths(in), lengths(out)
	if s.DistinctBlocks == 0 {
		return s
	}
	st := mrc.NewStack(denseTrace(t.ids, t.starts))
	s.Reuses = st.Counts(s.DistinctBlocks).Hits
	if s.Reuses > 0 {
		q := func(f float64) int { // the smallest distance covering a share f of the reuses
			need := int64(math.Ceil(f * float64(s.Reuses)))
			lo, hi := 1, s.DistinctBlocks
			for lo < hi {
				mid := lo + (hi-lo)/2
				if st.Counts(mid).Hits >= need {
					hi = mid
				} else {
					lo = mid + 1
				}
			}
			return lo
		}
		s.ReuseDistance = &Distances{P50: q(0.5), P90: q(0.9), P99: q(0.99)}
	}
	for _, pc := range statsPercents {
		n := max(1, int(pc/100*float64(s.DistinctBlocks)))
		c := st.Counts(n)
		s.LRU = append(s.LRU, LRUPoint{SizePercent: pc, SizeBlocks: n, HitRatio: float64(c.Hits) / float64(c.Accesses)})
	}
	return s
}

// lengths are xs' quantiles (nearest rank); nil when xs is empty.
func lengths(xs []int) *Lengths {
	if len(xs) == 0 {
		return nil
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	sum := 0.0
	for _, x := range xs {
		sum += float64(x)
	}
	rank := func(f float64) int { return xs[max(0, int(math.Ceil(f*float64(len(xs))))-1)] }
	return &Lengths{Mean: sum / float64(len(xs)), P50: rank(0.5), P90: rank(0.9), P99: rank(0.99), Max: xs[len(xs)-1]}
}

func printStats(w io.Writer, s *TraceStats) {
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
		q    *Lengths
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
