package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"kvsim/events"
	"kvsim/trace"
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

func eventsWhatIf(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("events whatif", "kvsim events whatif LOG [--capacities N,N,...] [--pooled] [--block-bytes B] [--json]", stderr)
	caps := fs.String("capacities", "", "candidate tier sizes in blocks, `N,N,...` (per instance, or in all with --pooled;\ndefault: 1/64 .. 1/1 of the blocks that left the instances)")
	pooled := fs.Bool("pooled", false, "one candidate tier shared by every instance (default: one per instance)")
	blockBytes := fs.Int64("block-bytes", 0, "bytes per block, to report bytes written (`B`; events do not carry it)")
	blockTokens := fs.Int64("block-tokens", 16, "tokens per block where an event's block_size is absent (`N`)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInputf("events whatif: want exactly one LOG, got %d", len(pos))
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
	res, err := events.WhatIfFile(pos[0], opt)
	if err != nil {
		return badInputf("events whatif: %v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
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
	return tw.Flush()
}
