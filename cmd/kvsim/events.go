package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"kvsim/events"
)

// runEvents dispatches kvsim events' subcommands.
func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const use = "usage: kvsim events <record|stats> [flags] (kvsim events <subcommand> -h for its flags)"
	if len(args) == 0 {
		return badInputf("events: no subcommand given (record or stats)")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, use)
		return nil
	case "record":
		return eventsRecord(ctx, args[1:], stdout, stderr)
	case "stats":
		return eventsStats(ctx, args[1:], stdout, stderr)
	}
	return badInputf("events: unknown subcommand %q (record or stats)", args[0])
}

// eventsRecordReady runs once every subscriber is connected (tests).
var eventsRecordReady = func() {}

func eventsRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("events record", "kvsim events record --endpoint tcp://HOST:PORT [--endpoint ...] [--replay tcp://HOST:PORT ...] --out LOG", stderr)
	var eps, replays setFlags
	fs.Var(&eps, "endpoint", "an engine's event PUB socket, `tcp://HOST:PORT` (repeatable: one per instance or data-parallel rank)")
	fs.Var(&replays, "replay", "the replay ROUTER socket of the --endpoint at the same position, `tcp://HOST:PORT` (repeatable; \"-\" for none)")
	out := fs.String("out", "", "append-only event log to write (`LOG`; replaced if it exists)")
	flush := fs.Duration("flush", 200*time.Millisecond, "hand buffered records to the kernel this often (`D`): a kill -9 loses at most that much")
	quiet := fs.Bool("quiet", false, "do not report gaps and malformed frames as they happen")
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
		fmt.Fprintf(stderr, "kvsim events record: %s: %d frames, %d events, %d malformed, %d gaps (%d refilled, %d lost), %d restarts\n",
			s.Endpoint, s.Frames, s.Events, s.Malformed, s.Gaps, s.Refilled, s.Unfilled, s.Restarts)
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
