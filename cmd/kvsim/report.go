package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"kvsim/experiment"
	"kvsim/report"
)

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", "kvsim report [--assets DIR] [--wait] DIR...\n\n"+
		"Re-renders HTML reports from saved results, without simulating: a DIR holding\n"+
		"summary.json gets report.html; otherwise each subfolder holding summary.json gets\n"+
		"its report.html and DIR gets index.html comparing them.", stderr)
	assets := fs.String("assets", "", "ECharts `DIR` (its dist folder, holding echarts.min.js) to copy next to each page, so reports need no network")
	quiet := fs.Bool("quiet", false, "print nothing but errors")
	var wait bool
	addWaitFlag(fs, &wait)
	dirs, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return badInputf("report: no results folder given (usage: kvsim report [--assets DIR] DIR...)")
	}
	if *assets != "" {
		if _, err := os.Stat(filepath.Join(*assets, report.EChartsFile)); err != nil {
			return badInputf("report: --assets: %s: not found (give ECharts' dist folder, e.g. node_modules/echarts/dist)",
				filepath.Join(*assets, report.EChartsFile))
		}
	}
	return experiment.Rerender(ctx, dirs, experiment.Options{Assets: *assets, Wait: wait}, func(p string) {
		if !*quiet {
			fmt.Fprintln(stdout, "wrote", p)
		}
	})
}
