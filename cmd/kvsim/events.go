package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"kvsim/events"
	"kvsim/trace"
	"kvsim/validate"
)

// A scenario's format = "kvevents" reads an event log as requests: the
// decoder sits above the trace package, so the command hands it over.
func init() { trace.SetConverter("kvevents", events.ToTrace) }

// runEvents dispatches kvsim events' subcommands.
func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const use = "usage: kvsim events <record|stats|whatif> [flags] (kvsim events <subcommand> -h for its flags)"
	if len(args) == 0 {
		return badInputf("events: no subcommand given (record, stats or whatif)")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, use)
		return nil
	case "record":
		return eventsRecord(ctx, args[1:], stdout, stderr)
	case "stats":
		return eventsStats(ctx, args[1:], stdout, stderr)
	case "whatif":
		return eventsWhatIf(ctx, args[1:], stdout, stderr)
	}
	return badInputf("events: unknown subcommand %q (record, stats or whatif)", args[0])
}

// eventsRecordReady runs once every subscriber is connected (tests).
var eventsRecordReady = func() {}

func eventsRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("events record", "kvsim events record --endpoint tcp://HOST:PORT [--endpoint ...] [--replay tcp://HOST:PORT ...] --out LOG", stderr)
	var eps, replays setFlags
	fs.Var(&eps, "endpoint", "an engine's event PUB socket, `tcp://HOST:PORT` (repeatable: one per instance or data-parallel rank)")
	fs.Var(&replays, "replay", "the replay ROUTER socket of the --endpoint at the same position, `tcp://HOST:PORT` (repeatable; \"-\" for none)")
	out := fs.String("out", "", "append-only event log to write (`LOG`; an existing one is replaced only if empty or a kvsim event log)")
	flush := fs.Duration("flush", 200*time.Millisecond, "hand buffered records to the kernel this often (`D`): a kill -9 loses at most that much")
	quiet := fs.Bool("quiet", false, "do not report gaps and malformed frames as they happen")
	redialMax := fs.Duration("redial-max", 5*time.Second, "longest wait (`D`) between attempts to reach an engine whose connection was lost (from 100ms, doubling)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return badInputf("events record: unexpected argument %q", pos[0])
	}
	if len(eps) == 0 {
		return badInputf("events record: --endpoint: at least one is required")
	}
	if *out == "" {
		return badInputf("events record: --out: required")
	}
	if len(replays) > len(eps) {
		return badInputf("events record: --replay: %d given for %d --endpoint", len(replays), len(eps))
	}
	if *flush <= 0 {
		return badInputf("events record: --flush: must be positive, got %v", *flush)
	}
	if *redialMax < 100*time.Millisecond {
		return badInputf("events record: --redial-max: must be at least 100ms, got %v", *redialMax)
	}
	srcs := make([]events.Source, len(eps))
	for i, e := range eps {
		if err := checkEndpoint(e); err != nil {
			return badInputf("events record: --endpoint %q: %v", e, err)
		}
		srcs[i].Endpoint = e
		if i < len(replays) && replays[i] != "-" {
			if err := checkEndpoint(replays[i]); err != nil {
				return badInputf("events record: --replay %q: %v", replays[i], err)
			}
			srcs[i].Replay = replays[i]
		}
	}
	// Replace only an empty file or a log kvsim recorded.
	if fi, err := os.Stat(*out); err == nil && (!fi.Mode().IsRegular() || fi.Size() > 0 && !events.IsLog(*out)) {
		return badInputf("events record: --out %s: exists and is not an event log kvsim recorded; give a new path", *out)
	}
	w, err := events.Create(*out)
	if err != nil {
		return badInputf("events record: --out: %v", err)
	}
	logf := func(format string, a ...any) {}
	if !*quiet {
		logf = func(format string, a ...any) { fmt.Fprintf(stderr, "kvsim events record: "+format+"\n", a...) }
	}
	sums, err := events.Capture(ctx, srcs, w, events.RecordOptions{
		FlushEvery: *flush,
		RedialMax:  *redialMax,
		Logf:       logf,
		Ready: func() {
			fmt.Fprintf(stderr, "kvsim events record: subscribed to %d endpoint(s), writing %s\n", len(srcs), *out)
			eventsRecordReady()
		},
	})
	if cerr := w.Close(); err == nil || errors.Is(err, context.Canceled) {
		if cerr != nil {
			err = cerr
		}
	}
	for _, s := range sums {
		fmt.Fprintf(stderr, "kvsim events record: %s: %d frames, %d events, %d malformed, %d gaps (%d refilled, %d lost), %d restarts, %d duplicates skipped, %d connections lost\n",
			s.Endpoint, s.Frames, s.Events, s.Malformed, s.Gaps, s.Refilled, s.Unfilled, s.Restarts, s.Duplicates, s.Outages)
	}
	return err
}

// checkEndpoint accepts what the recorder can dial: tcp://HOST:PORT.
func checkEndpoint(e string) error {
	rest, ok := strings.CutPrefix(e, "tcp://")
	if !ok {
		return errors.New("want tcp://HOST:PORT")
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || i == len(rest)-1 {
		return errors.New("want tcp://HOST:PORT")
	}
	return nil
}

func eventsStats(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("events stats", "kvsim events stats LOG [--json]", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInputf("events stats: want exactly one LOG, got %d", len(pos))
	}
	st, err := events.StatsFile(pos[0])
	if err != nil {
		return badInputf("events stats: %v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "frames\t%d (%d replayed, %d malformed skipped)\n", st.Frames, st.Replayed, st.Malformed)
	fmt.Fprintf(tw, "gaps\t%d (%d sequence numbers lost)\n", st.Gaps, st.GapSeqs)
	if st.Outages > 0 || st.Epochs > 0 {
		fmt.Fprintf(tw, "outages\t%d connection(s) lost and redialled, %d restart(s) (sequence numbers from 0 again)\n", st.Outages, st.Epochs)
	}
	if st.Truncated {
		fmt.Fprintf(tw, "tail\ttruncated (recorder killed mid-record; everything before it read)\n")
	}
	fmt.Fprintf(tw, "events\t%d\n", st.Events)
	for _, k := range sortedKeys(st.ByType) {
		fmt.Fprintf(tw, "  %s\t%d\n", k, st.ByType[k])
	}
	for _, k := range sortedKeys(st.ByMedium) {
		fmt.Fprintf(tw, "  medium %s\t%d\n", k, st.ByMedium[k])
	}
	for _, k := range sortedKeys(st.ByEncoding) {
		fmt.Fprintf(tw, "  %s-encoded frames\t%d\n", k, st.ByEncoding[k])
	}
	fmt.Fprintf(tw, "hashes on several instances\t%d\n", st.SharedHashes)
	tw.Flush()
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "instance\tframes\tstored\tremoved\tre-stored\tclears\tresident at end\tendpoint\t")
	for _, is := range st.Instances {
		var res []string
		for _, m := range sortedKeys(is.Resident) {
			res = append(res, fmt.Sprintf("%s %d", m, is.Resident[m]))
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", is.Instance, is.Frames, is.BlocksStored, is.BlocksRemoved, is.Restores, is.Clears, strings.Join(res, ", "), is.Endpoint)
	}
	return tw.Flush()
}

func eventsWhatIf(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("events whatif", "kvsim events whatif LOG [--capacities N,N,...] [--pooled] [--block-bytes B] [--requests FILE] [--json]", stderr)
	caps := fs.String("capacities", "", "candidate tier sizes in blocks, `N,N,...` (per instance, or in all with --pooled;\ndefault: 1/64 .. 1/1 of the blocks that left the instances)")
	pooled := fs.Bool("pooled", false, "one candidate tier shared by every instance (default: one per instance)")
	blockBytes := fs.Int64("block-bytes", 0, "bytes per block, to report bytes written (`B`; events do not carry it)")
	blockTokens := fs.Int64("block-tokens", 16, "tokens per block where an event's block_size is absent (`N`)")
	asJSON := fs.Bool("json", false, "print JSON")
	reqFile := fs.String("requests", "", "join a request log (`FILE`: a bench folder or .jsonl, vLLM's benchmark .json, or the CSV kvsim validate reads)")
	reqFormat := fs.String("requests-format", "", "the request log's format: bench, vllm or csv (default: from its name)")
	reqOffset := fs.String("requests-offset", "", "the events' ts, in seconds, of the request log's first arrival (`S`; default: estimated)")
	reqSlack := fs.Duration("requests-slack", 50*time.Millisecond, "widen each request's window [arrival, first token] by this on both sides (`D`)")
	promptBlocks := fs.String("prompt-blocks", "full", "a prompt's blocks: full (vLLM publishes full blocks only) or ceil (with the last partial one, as kvsim)")
	perRequest := fs.String("per-request", "", "with --requests, write each request's join as CSV to `FILE`")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInputf("events whatif: want exactly one LOG, got %d", len(pos))
	}
	if *reqFile == "" && (*reqFormat != "" || *reqOffset != "" || *perRequest != "") {
		return badInputf("events whatif: --requests-format, --requests-offset and --per-request need --requests")
	}
	if *promptBlocks != "full" && *promptBlocks != "ceil" {
		return badInputf("events whatif: --prompt-blocks: want full or ceil, got %q", *promptBlocks)
	}
	if *reqSlack < 0 {
		return badInputf("events whatif: --requests-slack: must be >= 0, got %v", *reqSlack)
	}
	opt := events.WhatIfOptions{Pooled: *pooled, BlockBytes: *blockBytes, BlockTokens: *blockTokens}
	if *blockBytes < 0 || *blockTokens < 1 {
		return badInputf("events whatif: --block-bytes must be >= 0 and --block-tokens >= 1")
	}
	if *caps != "" {
		for _, f := range strings.Split(*caps, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || n < 1 || n > 1<<40 {
				return badInputf("events whatif: --capacities: %q is not a block count in 1..2^40", f)
			}
			opt.Capacities = append(opt.Capacities, n)
		}
	}
	var jr *events.JoinResult
	var res *events.WhatIfResult
	if *reqFile != "" {
		jo := events.JoinOptions{WhatIf: opt, Slack: reqSlack.Seconds(), CeilBlocks: *promptBlocks == "ceil"}
		if *reqOffset != "" {
			f, err := strconv.ParseFloat(*reqOffset, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return badInputf("events whatif: --requests-offset: want seconds, got %q", *reqOffset)
			}
			jo.Offset, jo.HaveOffset = f, true
		}
		rs, err := validate.Load(ctx, *reqFile, *reqFormat)
		if err != nil {
			return err
		}
		reqs := make([]events.JoinRequest, len(rs.Recs))
		for i, r := range rs.Recs {
			reqs[i] = events.JoinRequest{Line: r.Line, ID: r.ID, ArrivalNs: r.ArrivalNs, TTFTNs: r.TTFTNs, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
		}
		if jr, err = events.JoinFile(pos[0], reqs, jo); err != nil {
			return badInputf("events whatif: %v", err)
		}
		res = jr.WhatIf
		if *perRequest != "" {
			if err := writeJoinCSV(*perRequest, jr); err != nil {
				return badInputf("events whatif: --per-request: %v", err)
			}
		}
	} else if res, err = events.WhatIfFile(pos[0], opt); err != nil {
		return badInputf("events whatif: %v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jr != nil {
			return enc.Encode(jr)
		}
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "instance\tGPU stores\tserved from lower media\trecomputed\tof which re-stores\tleft the instance\t")
	for _, o := range res.Instances {
		var sv []string
		for _, m := range sortedKeys(o.Served) {
			sv = append(sv, fmt.Sprintf("%s %d", m, o.Served[m]))
		}
		if len(sv) == 0 {
			sv = []string{"0"}
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%d\t%d\t\n", o.Instance, o.GPUStores, strings.Join(sv, ", "), o.Recomputed, o.Restores, o.Left)
	}
	tw.Flush()
	scope := "one per instance"
	if res.Pooled {
		scope = "pooled"
	}
	fmt.Fprintf(stdout, "\ncandidate tier below the instances (LRU, %s), fed the blocks that leave them:\n", scope)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "capacity (blocks)\tlookups\thits\thit ratio\tprefill tokens saved\tblocks written\tbytes written\t")
	for _, c := range res.Candidates {
		bw := "-"
		if *blockBytes > 0 {
			bw = strconv.FormatInt(c.BytesWritten, 10)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.4f\t%d\t%d\t%s\t\n", c.Capacity, c.Lookups, c.Hits, c.HitRatio, c.TokensSaved, c.BlocksWritten, bw)
	}
	if err := tw.Flush(); err != nil || jr == nil {
		return err
	}
	return printJoin(stdout, jr)
}

// printJoin says what the request log added.
func printJoin(w io.Writer, jr *events.JoinResult) error {
	how := "given"
	if jr.OffsetEstimated {
		how = "estimated"
	}
	fmt.Fprintf(w, "\nrequest log joined (events ts of its first arrival %.3f s, %s):\n", jr.Offset, how)
	fmt.Fprintf(w, "  requests: %d, %d matched to the GPU stores of their prefill (%.1f%%)\n", jr.Requests, jr.Matched, 100*float64(jr.Matched)/float64(max(jr.Requests, 1)))
	for _, k := range sortedKeys(jr.Unmatched) {
		fmt.Fprintf(w, "    unmatched, %s: %d\n", k, jr.Unmatched[k])
	}
	fmt.Fprintf(w, "  GPU stores: %d claimed by a request, %d by none (decode blocks, requests not in the log)\n", jr.StoresClaimed, jr.StoresUnclaimed)
	fmt.Fprintf(w, "  GPU prefix hits, which the events do not show: %d of the matched requests' %d prompt blocks (%.4f)\n", jr.HitBlocks, jr.PromptBlocks, jr.HitRatio)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "capacity (blocks)\tprefill tokens saved\trequests helped\tmean share of a prefill's compute\t")
	for _, c := range jr.Candidates {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.4f\t\n", c.Capacity, c.TokensSaved, c.RequestsHelped, c.MeanShare)
	}
	return tw.Flush()
}

// writeJoinCSV writes one row per request of the log.
func writeJoinCSV(path string, jr *events.JoinResult) error {
	var b strings.Builder
	b.WriteString("line,id,arrival_ms,input_tokens,prompt_blocks,instance,gpu_stores,loaded,recomputed,gpu_hit_blocks,gpu_hit_tokens")
	for _, c := range jr.Candidates {
		fmt.Fprintf(&b, ",saved_tokens_%d,ttft_share_%d", c.Capacity, c.Capacity)
	}
	b.WriteString(",unmatched\n")
	for _, r := range jr.PerRequest {
		fmt.Fprintf(&b, "%d,%s,%.3f,%d,%d,%d,%d,%d,%d,%d,%d", r.Line, csvField(r.ID), r.ArrivalMs, r.InputTokens, r.PromptBlocks, r.Instance, r.Stored, r.Loaded, r.Recomputed, r.HitBlocks, r.HitTokens)
		for k := range r.Saved {
			fmt.Fprintf(&b, ",%d,%.4f", r.Saved[k], r.Share[k])
		}
		fmt.Fprintf(&b, ",%s\n", csvField(r.Reason))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// csvField quotes s when it needs it.
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
