package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"kvsim/experiment"
	"kvsim/report"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/validate"
)

const validateUsage = "kvsim validate --scenario FILE [--format bench|vllm|csv] [--policy NAME] [--set KEY=VALUE]... [--json FILE] [--html FILE [--assets DIR]] [--max-mean-error PCT] [--max-mape PCT] [--quiet] RECORDS"

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", validateUsage, stderr)
	scPath := fs.String("scenario", "", "the hardware and engine: a scenario `FILE` (its [workload] is replaced by the records)")
	format := fs.String("format", "", "the records' `FORMAT`: "+strings.Join(validate.Formats(), ", ")+" (default: from the name: a folder or .jsonl is bench, .json vllm, .csv csv)")
	pol := fs.String("policy", "", "the scenario's [[policy]] `NAME` to run (default: the first)")
	jsonOut := fs.String("json", "", "write the comparison, per request included, as JSON to `FILE`")
	htmlOut := fs.String("html", "", "write the comparison as an HTML page to `FILE` (CDFs and predicted-against-measured scatters)")
	assets := fs.String("assets", "", "with --html: local ECharts 5 dist `DIR`; echarts.min.js is copied next to FILE")
	maxMean := fs.Float64("max-mean-error", 0, "exit 1 if the mean TTFT, TPOT or E2E is off by more than `PCT` percent (0: never)")
	maxMAPE := fs.Float64("max-mape", 0, "exit 1 if the per-request E2E MAPE is above `PCT` percent (0: never)")
	quiet := fs.Bool("quiet", false, "print no table (warnings and errors only)")
	var sets setFlags
	addSetFlag(fs, &sets)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return badInputf("validate: no records given (usage: %s)", validateUsage)
	case len(pos) > 1:
		return badInputf("validate: one set of records at a time, got %d: %s", len(pos), strings.Join(pos, " "))
	case *scPath == "":
		return badInputf("validate: --scenario: required (the hardware to replay the records on)")
	case *maxMean < 0 || math.IsNaN(*maxMean) || math.IsInf(*maxMean, 0):
		return badInputf("validate: --max-mean-error: want a percentage >= 0, got %g", *maxMean)
	case *maxMAPE < 0 || math.IsNaN(*maxMAPE) || math.IsInf(*maxMAPE, 0):
		return badInputf("validate: --max-mape: want a percentage >= 0, got %g", *maxMAPE)
	case *assets != "" && *htmlOut == "":
		return badInputf("validate: --assets is for the --html page; add --html FILE or drop --assets")
	}
	recPath := pos[0]
	if *format == "" {
		if *format, err = validate.Detect(recPath); err != nil {
			return err
		}
	}
	// Outputs are checked before any work: none may be an input or the
	// other output, or a file kvsim did not write.
	ins := []role{{"--scenario", *scPath}, {"the records", recPath}}
	if st, err := os.Stat(recPath); err == nil && st.IsDir() {
		ins = append(ins, role{"the records", filepath.Join(recPath, "requests.jsonl")}, role{"the records' meta", filepath.Join(recPath, "meta.json")})
	} else if *format == "bench" {
		ins = append(ins, role{"the records' meta", filepath.Join(filepath.Dir(recPath), "meta.json")})
	}
	if *jsonOut != "" {
		jsIns := append(slices.Clone(ins), role{"--html", *htmlOut})
		if *assets != "" {
			jsIns = append(jsIns, role{"--assets'", filepath.Join(*assets, report.EChartsFile)})
		}
		if err := checkOutFile("validate: --json", *jsonOut); err != nil {
			return err
		}
		if err := checkNotInput("validate: --json", *jsonOut, jsIns); err != nil {
			return err
		}
		if err := experiment.CheckReplace("validate: --json", *jsonOut, validate.IsResult, "kvsim replaces only a file validate made; move it or give another file"); err != nil {
			return err
		}
	}
	if *htmlOut != "" {
		if err := checkPage("validate", *htmlOut, *assets, append(ins, role{"--json", *jsonOut})); err != nil {
			return err
		}
	}
	sc, err := scenario.LoadWith(*scPath, sets)
	if err != nil {
		return badInput(err)
	}
	rs, err := validate.Load(ctx, recPath, *format)
	if err != nil {
		return err
	}
	res, err := validate.Run(ctx, sc, rs, validate.Options{Policy: *pol})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "kvsim: warning: %s\n", w)
	}
	if !*quiet {
		printValidation(stdout, res)
	}
	if *jsonOut != "" {
		b, err := res.Marshal()
		if err != nil {
			return fmt.Errorf("validate: %w", err)
		}
		if err := results.WriteFileAtomic(*jsonOut, b); err != nil {
			return fmt.Errorf("validate: --json: %w", err)
		}
		if !*quiet {
			fmt.Fprintf(stdout, "wrote %s\n", *jsonOut)
		}
	}
	if *htmlOut != "" {
		o, err := experiment.PageOptions(filepath.Dir(*htmlOut), *assets)
		if err != nil {
			return badInput(err)
		}
		b, err := res.Page(o)
		if err != nil {
			return fmt.Errorf("validate: --html: %w", err)
		}
		if err := results.WriteFileAtomic(*htmlOut, b); err != nil {
			return fmt.Errorf("validate: --html: %w", err)
		}
		if !*quiet {
			fmt.Fprintf(stdout, "wrote %s\n", *htmlOut)
		}
	}
	return threshold(res, *maxMean, *maxMAPE)
}

// threshold turns an error past the user's bar into exit 1, for CI; the
// comparison itself always succeeds.
func threshold(r *validate.Result, maxMean, maxMAPE float64) error {
	if maxMean > 0 {
		for _, m := range r.Metrics() {
			e := float64(m.M.MeanErrorPct)
			if math.IsNaN(e) || math.Abs(e) > maxMean {
				return fmt.Errorf("validate: mean %s is off by %+.1f%%, more than --max-mean-error %g%%", m.Name, e, maxMean)
			}
		}
	}
	if e := float64(r.E2E.MAPEPct); maxMAPE > 0 && (math.IsNaN(e) || e > maxMAPE) {
		return fmt.Errorf("validate: per-request E2E MAPE is %.1f%%, more than --max-mape %g%%", e, maxMAPE)
	}
	return nil
}

func printValidation(w io.Writer, r *validate.Result) {
	fmt.Fprintf(w, "validate %s against %s (%s, %d requests", r.Scenario, r.Records.Path, r.Records.Format, r.Records.Requests)
	if r.Records.Failed > 0 {
		fmt.Fprintf(w, ", %d failed and left out", r.Records.Failed)
	}
	if r.Rejected > 0 {
		fmt.Fprintf(w, ", %d rejected by kvsim", r.Rejected)
	}
	fmt.Fprintf(w, "); policy %s, %d preemptions in kvsim\n%s\n", r.Policy, r.Preemptions, r.EngineText())
	head, rows := r.Table()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}
