package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"kvsim/experiment"
	"kvsim/hw/bucket"
	"kvsim/hwrun"
	"kvsim/results"
	"kvsim/scenario"
)

// replayFaults, set by tests, makes storage tiers fail I/O as planned.
var replayFaults *bucket.FaultPlan

// replayBeforeEnd, set by tests, runs before the end-of-run checks.
var replayBeforeEnd func()

type replayOptions struct {
	real, verify, asJSON bool
	fresh, allowLoss     bool
	scenario, dir        string
	profile              string
	policy               string
	blockBytes, limit    int
	hugepages, hugeSize  string
	sequential, quiet    bool
	mirror               bool
	speedup              float64
	engine               string
	sets                 setFlags
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("replay", "kvsim replay --real [--scenario FILE] [--set KEY=VALUE]... [--dir DIR] [--fresh] [--block-bytes N] [--limit N] [--verify] [--allow-loss] [--json] [--quiet] [--profile FILE] [--speedup X] [--mirror | --sequential] TRACE", stderr)
	var o replayOptions
	fs.BoolVar(&o.real, "real", false, "move real bytes through real memory and storage (required)")
	fs.StringVar(&o.scenario, "scenario", "", "scenario `FILE` giving the hierarchy and policy (default: HBM, DRAM, SSD with LRU)")
	addSetFlag(fs, &o.sets)
	fs.StringVar(&o.dir, "dir", "kvsim-replay", "`DIR` for the storage tiers' stores (DIR/tier-NAME, kept across runs) and replay.json (not tmpfs)")
	fs.BoolVar(&o.fresh, "fresh", false, "start the storage tiers empty instead of reopening what an earlier replay left in DIR")
	fs.BoolVar(&o.allowLoss, "allow-loss", false, "exit 0 even if copies were lost to I/O errors (else exit 3)")
	fs.StringVar(&o.profile, "profile", "", "hardware profile `FILE` from kvsim calibrate: predict with this machine's links")
	fs.StringVar(&o.policy, "policy", "", "which [[policy]] of the scenario to replay (default: the first)")
	fs.IntVar(&o.blockBytes, "block-bytes", 64<<10, "real bytes of one full block (`N`); the model's blocks are scaled to it")
	fs.IntVar(&o.limit, "limit", 0, "replay at most `N` requests")
	fs.BoolVar(&o.verify, "verify", false, "check every block read back, and every block left in a tier at the end")
	fs.BoolVar(&o.asJSON, "json", false, "print replay.json to stdout")
	fs.BoolVar(&o.quiet, "quiet", false, "print nothing but errors (no summary, no progress; --json still prints)")
	fs.BoolVar(&o.sequential, "sequential", false, "the real body runs the core on its own clock, one request at a time, decode instantaneous")
	fs.BoolVar(&o.mirror, "mirror", false, "the simulator runs the core; the real body copies each of its moves, one at a time, in its order")
	fs.Float64Var(&o.speedup, "speedup", 0, "divide arrival times by `X` (workload.speedup; default: the scenario's)")
	fs.StringVar(&o.hugepages, "hugepages", "try", "DRAM pool hugepages: off, try or require")
	fs.StringVar(&o.hugeSize, "hugepage-size", "2MB", "hugepage size: 2MB or 1GB")
	fs.StringVar(&o.engine, "engine", "auto", "SSD I/O: auto (io_uring, else pread/pwrite), io_uring or pread")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if !o.real {
		return badInputf("replay: --real is required (the simulator alone is 'kvsim run')")
	}
	if len(pos) != 1 {
		return badInputf("replay: want exactly one TRACE, got %d", len(pos))
	}
	if o.blockBytes < 4096 || o.blockBytes%4096 != 0 {
		return badInputf("replay: --block-bytes %d: must be a positive multiple of 4096 (direct I/O alignment)", o.blockBytes)
	}
	if o.limit < 0 {
		return badInputf("replay: --limit must be >= 0")
	}
	if o.mirror && o.sequential {
		return badInputf("replay: --mirror and --sequential are two other modes; give one (neither: the live replay)")
	}
	speedupSet := false
	fs.Visit(func(f *flag.Flag) { speedupSet = speedupSet || f.Name == "speedup" })
	if speedupSet {
		if !(o.speedup > 0) || math.IsInf(o.speedup, 0) {
			return badInputf("replay: --speedup %g: must be a number > 0", o.speedup)
		}
		o.sets = append(o.sets, "workload.speedup="+strconv.FormatFloat(o.speedup, 'g', -1, 64))
	}
	tracePath := pos[0]
	if _, err := os.Stat(tracePath); err != nil {
		return badInputf("replay: trace: %s", lookedAt(tracePath, err))
	}
	var sc *scenario.Scenario
	if o.scenario == "" {
		sc, err = hwrun.DefaultReplayScenario(tracePath, o.sets)
	} else {
		sc, err = scenario.LoadWith(o.scenario, o.sets)
	}
	if err != nil {
		return badInput(err)
	}
	sc.Workload.Trace, sc.Workload.Gen = tracePath, nil
	if o.profile != "" {
		p, err := scenario.LoadProfile(o.profile)
		if err != nil {
			return badInput(err)
		}
		sc.ApplyProfile(p)
	}
	pi := 0
	if o.policy != "" {
		if pi = sc.PolicyIndex(o.policy); pi < 0 {
			return badInputf("replay: --policy %q: the scenario has no such [[policy]]", o.policy)
		}
	}
	// A trace through a pipe or device is read once, checked, into a copy
	// (before --dir is made: bad input leaves nothing behind).
	release, err := experiment.SpoolTrace(ctx, tracePath)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return badInputf("replay: %v", err)
	}
	defer release()
	if err := bucket.MkdirAll(o.dir); err != nil {
		return badInputf("replay: --dir: %v", err)
	}
	// Not a regular file (a named pipe would block the check of its
	// contents; a device or link would be replaced): not kvsim's.
	if st, err := os.Lstat(filepath.Join(o.dir, "replay.json")); err == nil && !st.Mode().IsRegular() {
		return badInputf("replay: %s exists and is not a regular file; it will not be replaced: move it or give another --dir", filepath.Join(o.dir, "replay.json"))
	}
	if err := checkNotInput("replay: --dir: replay.json", filepath.Join(o.dir, "replay.json"),
		[]role{{"the trace", tracePath}, {"--scenario", o.scenario}, {"--profile", o.profile}}); err != nil {
		return err
	}
	if err := results.CheckReplayPath(filepath.Join(o.dir, "replay.json")); err != nil {
		return badInput(err)
	}
	if !o.mirror && !o.sequential { // the live replay also writes these
		for _, f := range []struct {
			name string
			ours func(string) bool
		}{{"requests.csv", results.IsRequests}, {"replay.html", results.IsPage}} {
			if ok, _ := results.Replaceable(filepath.Join(o.dir, f.name), f.ours); !ok {
				return badInputf("replay: %s exists and is not a file kvsim wrote; it will not be replaced: move it or give another --dir", filepath.Join(o.dir, f.name))
			}
		}
	}
	// Progress on a terminal only: the requests done of the trace's lines
	// (a line is a request) on the real clock.
	prog := startWallProgress(stderr, "replay", 0, false)
	if !o.quiet && isTerminal(stderr) {
		total := countLines(ctx, tracePath)
		if o.limit > 0 {
			total = min(total, int64(o.limit))
		}
		prog = startWallProgress(stderr, "replay", total, true)
	}
	rep, err := hwrun.Replay(ctx, sc, pi, hwrun.ReplayOptions{Dir: o.dir, BlockBytes: o.blockBytes, Limit: o.limit,
		Verify: o.verify, Fresh: o.fresh, Sequential: o.sequential, Mirror: o.mirror, Hugepages: o.hugepages, HugepageSize: o.hugeSize,
		Engine: o.engine, Faults: replayFaults, Progress: prog, BeforeEnd: replayBeforeEnd, Left: func(l results.ReplayLeft) {
			// Said whether the replay ends or fails (SIGINT included).
			prog.finish()
			fmt.Fprintf(stderr, "kvsim: replay: tier %q: up to %d keys %s are left on %s (%s); remove them with: %s\n", l.Tier, l.Keys, l.Pattern, l.Server, l.Why, l.Remove)
		}})
	prog.finish()
	if err != nil {
		return err
	}
	var lost error
	if !o.allowLoss {
		lost = experiment.CheckLoss(rep)
	}
	b, err := results.WriteReplay(filepath.Join(o.dir, "replay.json"), rep)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if o.asJSON {
		if _, err = stdout.Write(b); err != nil {
			return err
		}
		return lost
	}
	if !o.quiet {
		printReplay(stdout, rep, filepath.Join(o.dir, "replay.json"))
	}
	return lost
}

func printReplay(w io.Writer, r *results.Replay, path string) {
	mode := "live on the wall clock (moves concurrent, steps waited out)"
	switch r.Mode {
	case "mirror":
		mode = "mirroring the simulator's moves"
	case "sequential":
		mode = "one at a time on the real clock"
	}
	fmt.Fprintf(w, "replay of scenario %s, policy %s: %d requests %s, blocks scaled to %d bytes (x%.3g)\n", r.Scenario, r.Policy, r.Requests, mode, r.BlockBytes, r.Scale)
	for _, t := range sortedKeys(r.Backends) {
		fmt.Fprintf(w, "  tier %-12s %s\n", t, r.Backends[t])
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, t := range sortedKeys(r.Stores) {
		st := r.Stores[t]
		switch st.State {
		case "reopened":
			fmt.Fprintf(w, "  store %s: reopened %s: %d blocks in %d buckets recovered, %d placed in the tier, %d dropped (no room, or a size no block has)\n",
				t, st.Dir, st.Blocks, st.Buckets, st.WarmBlocks, st.DroppedBlocks)
		case "emptied":
			fmt.Fprintf(w, "  store %s: emptied %s: %d blocks in %d buckets deleted\n", t, st.Dir, st.Blocks, st.Buckets)
		default:
			fmt.Fprintf(w, "  store %s: new, in %s\n", t, st.Dir)
		}
		for _, d := range st.Discarded {
			fmt.Fprintf(w, "  store %s: discarded on open: %s\n", t, d)
		}
	}
	width := 12
	for k := range r.Links {
		width = max(width, len(k))
	}
	fmt.Fprintf(w, "  %-*s %8s %7s %10s %9s %9s %8s %13s %9s\n", width, "link", "moves", "failed", "MiB", "p50 us", "p99 us", "GB/s", "predicted p50", "rel err")
	for _, k := range sortedKeys(r.Links) {
		l := r.Links[k]
		fmt.Fprintf(w, "  %-*s %8d %7d %10.1f %9.1f %9.1f %8.2f %13.1f %8.0f%%\n", width, k, l.Count, l.Failed, float64(l.Bytes)/(1<<20), l.P50us, l.P99us, l.GBps, l.PredictedP50us, 100*l.RelError)
	}
	var lost []string
	for _, t := range sortedKeys(r.Lost) {
		if r.Lost[t] > 0 {
			lost = append(lost, fmt.Sprintf("%s %d", t, r.Lost[t]))
		}
	}
	if len(lost) > 0 {
		fmt.Fprintf(w, "  LOST copies (I/O errors, corruption; not in the figures above): %s\n", strings.Join(lost, ", "))
		if len(r.Errors) > 0 {
			fmt.Fprintf(w, "  first error: %s\n", r.Errors[0])
		}
	}
	for _, t := range sortedKeys(r.StoreEvict) {
		if n := r.StoreEvict[t]; n > 0 {
			fmt.Fprintf(w, "  store %s: %d blocks evicted by the store itself to stay within its capacity\n", t, n)
		}
	}
	if r.Verify != nil {
		fmt.Fprintf(w, "  verify: %d checked, %d corrupt\n", r.Verify.Checked, r.Verify.Corrupt)
	}
	if r.Live != nil {
		printLive(w, r.Live)
	}
	fmt.Fprintf(w, "  wrote %s\n", path)
}

// printLive prints the live replay's measured against predicted table.
func printLive(w io.Writer, l *results.ReplayLive) {
	var c map[string]struct {
		Requests  int                                    `json:"requests"`
		Measured  struct{ Mean, P50, P90, P99 *float64 } `json:"measured_ms"`
		Predicted struct{ Mean, P50, P90, P99 *float64 } `json:"predicted_ms"`
		MAPE      *float64                               `json:"mape_pct"`
	}
	if json.Unmarshal(l.Compare, &c) != nil {
		return
	}
	f := func(x *float64) string {
		if x == nil {
			return "-"
		}
		return strconv.FormatFloat(*x, 'f', 2, 64)
	}
	fmt.Fprintf(w, "  %d steps; arrivals late by p50 %.3f / p99 %.3f / max %.3f ms; steps' ends late by p50 %.3f / p99 %.3f ms\n",
		l.Steps, l.ArrivalLagMs.P50, l.ArrivalLagMs.P99, l.ArrivalLagMs.Max, l.StepLagMs.P50, l.StepLagMs.P99)
	fmt.Fprintf(w, "  %d requests arrived late by more than 5%% of their TTFT (or 1 ms)", l.Disturbed)
	if !l.KeptUp {
		fmt.Fprintf(w, ": more than 1%%, the replay could NOT keep up with its clock; errors not reported")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-10s %8s %23s %23s %23s %23s %7s\n", "measured/", "requests", "mean ms", "p50 ms", "p90 ms", "p99 ms", "MAPE")
	for _, k := range []string{"ttft", "tpot", "e2e", "load_wait"} {
		m := c[k]
		fmt.Fprintf(w, "  %-10s %8d %11s/%-11s %11s/%-11s %11s/%-11s %11s/%-11s %6s%%\n", k, m.Requests,
			f(m.Measured.Mean), f(m.Predicted.Mean), f(m.Measured.P50), f(m.Predicted.P50),
			f(m.Measured.P90), f(m.Predicted.P90), f(m.Measured.P99), f(m.Predicted.P99), f(m.MAPE))
	}
	for _, n := range l.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}
