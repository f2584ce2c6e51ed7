// Command kvsim compares KV-cache placement policies across a memory
// hierarchy, in virtual time (run, mrc) and on real hardware (replay).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"kvsim/experiment"
	"kvsim/hw/hostmem"
	"kvsim/hw/ioengine"
)

// signalsReady runs once SIGINT and SIGTERM are kvsim's to handle: tests
// wait for it before they signal a kvsim still starting up, which the
// signal's default action would kill instead.
var signalsReady = func() {}

func main() {
	// hw reports what it works around (an io_uring that failed mid-run, a
	// refused pool peer) through the program: here, one line on stderr.
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "kvsim: "+format+"\n", args...) }
	ioengine.SetLogf(logf)
	hostmem.SetLogf(logf)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	signalsReady()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err (one line) and maps it to the process status:
// 0 success, 2 bad input (flags, files, scenarios, traces), an error's own
// ExitCode, 3 a replay that lost copies, 130 interrupted, 1 anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.Is(err, context.Canceled) {
		// The shell's convention for SIGINT (128 + 2), for SIGTERM too:
		// a script can tell "stopped" from "failed".
		fmt.Fprintln(stderr, "kvsim: interrupted")
		return 130
	}
	fmt.Fprintf(stderr, "kvsim: %v\n", err)
	var le *experiment.LossError
	if errors.As(err, &le) {
		return 3
	}
	var bi *inputError
	if errors.As(err, &bi) {
		return 2
	}
	return 1
}

// inputError marks an error caused by what the user gave us: the
// library's kind, so that its errors keep their exit status.
type inputError = experiment.InputError

// badInput wraps err so that kvsim exits with status 2.
func badInput(err error) error { return experiment.BadInput(err) }

// badInputf is fmt.Errorf for bad input.
func badInputf(format string, args ...any) error { return experiment.BadInputf(format, args...) }

type command struct {
	name  string
	brief string
	fn    func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "simulate scenarios in virtual time and write results", runRun},
		{"sweep", "simulate a scenario at several capacities of one tier", runSweep},
		{"plan", "find the cheapest tier capacities meeting an SLO (a pruned search of sweep points)", runPlan},
		{"merge", "write the index of a sweep run in shards (sweep --shard) once every shard is done", runMerge},
		{"size", "KV-cache size arithmetic for a model", runSize},
		{"gen", "write a deterministic synthetic trace (Mooncake JSONL)", runGen},
		{"mrc", "miss-ratio curves of eviction policies", runMrc},
		{"trace", "a trace's statistics (stats), injection parameters fitted to its reuse (fit), conversion (convert)", runTrace},
		{"replay", "replay a trace on real memory and storage (--real)", runReplay},
		{"serve", "serve DRAM to other machines' replays over RDMA (--rdma HOST:PORT)", runServe},
		{"calibrate", "measure this machine's links and write a hardware profile", runCalibrate},
		{"validate", "replay a real serving run's requests and compare kvsim's latencies with the measured ones", runValidate},
		{"report", "re-render HTML reports from saved results", runReport},
		{"explain", "one request's timeline or one block's journey from a run with --trace-events", runExplain},
		{"doctor", "check this machine for KV offload (hugepages, io_uring, O_DIRECT, memlock, GPU, RDMA, NVMe)", runDoctor},
		{"iobench", "measure file I/O the way the SSD tier does it", runIobench},
		{"events", "serving engines' KV-cache events: record a fleet's (record), summarise (stats), what-if lower tiers (whatif)", runEvents},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: kvsim <command> [flags] [args]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.brief)
	}
	fmt.Fprintln(w, "\nRun 'kvsim <command> -h' for a command's flags.")
}

// run is the whole program minus process plumbing, so tests can call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return badInputf("no command given")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.fn(ctx, args[1:], stdout, stderr)
		}
	}
	return badInputf("unknown command %q (try 'kvsim help')", args[0])
}
