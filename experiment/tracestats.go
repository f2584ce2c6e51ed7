package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"kvsim/mrc"
	"kvsim/scenario"
	"kvsim/trace"
	"kvsim/workload"
)

// TraceData is a trace read whole, as kvsim trace stats and fit need it.
type TraceData struct {
	Profile  *workload.Profile
	Shapes   []workload.Shape
	IDs      []int64 // every request's ids, flat: request r's are IDs[Starts[r]:Starts[r+1]]
	Starts   []int32
	Skipped  int   // bad lines skipped (trace.Options.SkipBadLines)
	Injected int64 // requests given ids by the injector
}

// ReadTraceData reads the trace at path to the end as a run reads it (in
// its format, or a binary trace, through the binary trace cache), giving
// requests ids by in first where it applies (in may be nil). Bad input is an
// *InputError: a *trace.LineError (FILE:LINE: reason) as it is, an open
// error or anything else naming the file.
func ReadTraceData(ctx context.Context, path string, opt trace.Options, in *workload.Injector) (*TraceData, error) {
	// Read once, but checked as it comes: /dev/zero fails at once, and
	// ctx ends a wait for a pipe's writer.
	release, err := SpoolTrace(ctx, path)
	if err != nil {
		return nil, err
	}
	defer release()
	r, err := trace.OpenCachedContext(ctx, path, opt)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, BadInput(pe)
		}
		return nil, BadInput(err)
	}
	defer r.Close()
	t := &TraceData{Profile: workload.NewProfile(), Starts: []int32{0}}
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
				return nil, BadInput(err)
			}
			return nil, BadInputf("%s: %v", path, err)
		}
		if in != nil && in.Applies(&q) {
			in.Apply(&q)
			t.Injected++
		}
		t.Profile.Add(&q)
		t.Shapes = append(t.Shapes, workload.Shape{Input: q.InputTokens, Output: q.OutputTokens})
		t.IDs = append(t.IDs, q.HashIDs...)
		if len(t.IDs) > math.MaxInt32 {
			return nil, BadInputf("%s: more than 2^31-1 block references", path)
		}
		t.Starts = append(t.Starts, int32(len(t.IDs)))
	}
	t.Skipped = r.Skipped()
	return t, nil
}

// LoadInjector reads the [workload.inject] table of the file at path (as
// kvsim trace fit prints it, or a scenario) and makes its injector.
func LoadInjector(path string, seed int64, blockTokens int) (*workload.Injector, error) {
	c, err := scenario.LoadInject(path)
	if err != nil {
		return nil, BadInput(err)
	}
	in, err := workload.NewInjector(workload.Inject(*c), seed, blockTokens)
	if err != nil {
		return nil, BadInputf("%s: workload.inject: %v", path, err)
	}
	return in, nil
}

// denseTrace is ids and starts with dense block ids, as mrc replays them.
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

// StatsPercents are the LRU sizes trace stats reports, in percent of the
// distinct blocks.
var StatsPercents = []float64{1, 5, 10, 25, 50}

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

// Stats summarises t, read from path in format with blockTokens-token
// blocks.
func (t *TraceData) Stats(path, format string, blockTokens int) *TraceStats {
	p := t.Profile
	s := &TraceStats{File: path, Format: format, BlockTokens: blockTokens, Requests: p.Requests, SkippedLines: t.Skipped,
		SpanS: p.Span().Seconds(), RatePerS: p.Rate(), RequestsWithoutIDs: p.NoIDs, InjectedRequests: t.Injected, BlockAccesses: p.BlockAccesses,
		DistinctBlocks: p.Distinct(), HitCeiling: p.Ceiling(), LRU: []LRUPoint{}}
	if cv := p.GapCV(); !math.IsNaN(cv) {
		s.InterarrivalCV = &cv
	}
	if pm := p.PeakToMean(); !math.IsNaN(pm) {
		s.PeakToMean1s = &pm
	}
	in, out := make([]int, len(t.Shapes)), make([]int, len(t.Shapes))
	for i, sh := range t.Shapes {
		in[i], out[i] = sh.Input, sh.Output
	}
	s.InputTokens, s.OutputTokens = lengths(in), lengths(out)
	if s.DistinctBlocks == 0 {
		return s
	}
	st := mrc.NewStack(denseTrace(t.IDs, t.Starts))
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
	for _, pc := range StatsPercents {
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

// FitPercents are the sizes, in percent of the distinct blocks, at which
// trace fit matches the LRU curves (100: the hit ceiling).
var FitPercents = []float64{1, 2, 5, 10, 25, 50, 100}

// Fit fits the injection parameters to t's LRU curve at FitPercents, with
// blockTokens-token blocks and the injection seed.
func (t *TraceData) Fit(ctx context.Context, blockTokens int, seed int64) (workload.FitResult, error) {
	distinct := t.Profile.Distinct()
	sizes := make([]int, len(FitPercents))
	for i, p := range FitPercents {
		sizes[i] = max(1, int(p/100*float64(distinct)))
	}
	target := lruHits(t.IDs, t.Starts, sizes)
	sys := workload.SharedPrefixBlocks(t.IDs, t.Starts) * blockTokens
	return workload.Fit(ctx, t.Shapes, blockTokens, seed, sys, sizes, target, lruHits)
}

// InjectTOML renders c as a [workload.inject] table.
func InjectTOML(c workload.Inject) string {
	var b strings.Builder
	b.WriteString("[workload.inject]\n")
	fmt.Fprintf(&b, "system_tokens = %d\n", c.SystemTokens)
	if c.Tenants > 0 {
		fmt.Fprintf(&b, "tenants = %d\ntenant_tokens = %d\ntenant_zipf = %s\n", c.Tenants, c.TenantTokens, tomlFloat(c.TenantZipf))
	}
	fmt.Fprintf(&b, "session_continue = %s\nsessions = %d\nsession_gap = %d\n", tomlFloat(c.SessionContinue), c.Sessions, c.SessionGap)
	return b.String()
}

// tomlFloat writes x as a TOML float.
func tomlFloat(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
