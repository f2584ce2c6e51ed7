package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"kvsim/hw/doctor"
)

// runDoctor prints what this machine offers for KV offload (kvsim doctor).
// Absent hardware is a finding, not a failure: it exits 0 unless misused.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("doctor", "kvsim doctor [--dir DIR] [--json]\n\nChecks hugepages, transparent hugepages, io_uring, O_DIRECT in DIR, the memlock\nlimit, GPUs and the CUDA runtime, RDMA devices and NVMe controllers. Needs no root.", stderr)
	dir := fs.String("dir", ".", "store `directory` to test for O_DIRECT (the SSD tier's files go there)")
	asJSON := fs.Bool("json", false, `print JSON: {"checks": [{"name", "status", "found", "fix"}, ...]}`)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInputf("doctor: unexpected argument %q", pos[0])
	}
	if fi, err := os.Stat(*dir); err != nil {
		return badInputf("doctor: --dir: %v", err)
	} else if !fi.IsDir() {
		return badInputf("doctor: --dir %s: not a directory", *dir)
	}
	checks, err := doctor.Run(doctor.Options{Dir: *dir})
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			Checks []doctor.Check `json:"checks"`
		}{checks})
	}
	return printChecks(stdout, checks)
}

func printChecks(w io.Writer, checks []doctor.Check) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tFOUND")
	counts := map[string]int{}
	for _, c := range checks {
		counts[c.Status]++
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Status, c.Name, c.Found)
		if c.Fix != "" && c.Status != doctor.StatusOK {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var sum []string
	for _, s := range []string{doctor.StatusOK, doctor.StatusWarn, doctor.StatusFail, doctor.StatusAbsent} {
		if counts[s] > 0 {
			sum = append(sum, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(sum, ", "))
	return err
}
