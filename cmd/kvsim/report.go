package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"kvsim/report"
	"kvsim/results"
)

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", "kvsim report [--assets DIR] DIR...\n\n"+
		"Re-renders HTML reports from saved results, without simulating: a DIR holding\n"+
		"summary.json gets report.html; otherwise each subfolder holding summary.json gets\n"+
		"its report.html and DIR gets index.html comparing them.", stderr)
	assets := fs.String("assets", "", "ECharts `DIR` (its dist folder, holding echarts.min.js) to copy next to each page, so reports need no network")
	quiet := fs.Bool("quiet", false, "print nothing but errors")
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
	// Read every summary first so that bad input writes nothing.
	type job struct {
		dir    string // parent folder for an index; scenario folder otherwise
		index  bool
		scens  []string // scenario folders
		sums   []*results.Summary
		single *results.Summary
	}
	var jobs []job
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			return badInputf("report: %v", err)
		}
		if !st.IsDir() {
			return badInputf("report: %s: not a folder", dir)
		}
		if s, ok, err := readSummaryIn(dir); err != nil {
			return err
		} else if ok {
			jobs = append(jobs, job{dir: dir, single: s})
			continue
		}
		ents, err := os.ReadDir(dir) // sorted by name: a stable index
		if err != nil {
			return badInput(err)
		}
		j := job{dir: dir, index: true}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			s, ok, err := readSummaryIn(sub)
			if err != nil {
				return err
			}
			if ok {
				j.scens = append(j.scens, sub)
				j.sums = append(j.sums, s)
			}
		}
		if len(j.sums) == 0 {
			return badInputf("report: %s: no summary.json in it or in its subfolders", dir)
		}
		jobs = append(jobs, j)
	}
	wrote := func(p string) {
		if !*quiet {
			fmt.Fprintln(stdout, "wrote", p)
		}
	}
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !j.index {
			if err := writeScenarioReport(j.dir, j.single, *assets); err != nil {
				return err
			}
			wrote(filepath.Join(j.dir, "report.html"))
			continue
		}
		for i, d := range j.scens {
			if err := writeScenarioReport(d, j.sums[i], *assets); err != nil {
				return err
			}
			wrote(filepath.Join(d, "report.html"))
		}
		if err := writeIndex(j.dir, j.sums, *assets); err != nil {
			return err
		}
		wrote(filepath.Join(j.dir, "index.html"))
	}
	return nil
}

// readSummaryIn reads dir/summary.json; ok is false when there is none.
func readSummaryIn(dir string) (s *results.Summary, ok bool, err error) {
	p := filepath.Join(dir, "summary.json")
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	s, err = results.ReadSummary(p)
	if err != nil {
		return nil, false, badInput(err)
	}
	return s, true, nil
}

// pageOptions copies ECharts into dir/assets when assets names a dist
// folder, so the page works offline; else pages load it online.
func pageOptions(dir, assets string) (report.Options, error) {
	if assets == "" {
		return report.Options{}, nil
	}
	if err := report.CopyAssets(assets, filepath.Join(dir, "assets")); err != nil {
		return report.Options{}, fmt.Errorf("report: %w", err)
	}
	return report.Options{AssetsHost: "assets/"}, nil
}

// writeScenarioReport writes dir/report.html for the scenario whose
// results are in dir (its requests.csv, when there, gives the TTFT CDF).
// assets is the --assets value or "".
func writeScenarioReport(dir string, s *results.Summary, assets string) error {
	o, err := pageOptions(dir, assets)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	// Rendering into memory fails only on bad input (requests.csv).
	if err := report.ScenarioWithRequests(&b, s, filepath.Join(dir, "requests.csv"), o); err != nil {
		return badInput(err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, "report.html"), b.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// writeIndex writes outDir/index.html comparing the scenarios ss, whose
// reports are in outDir/<scenario>/.
func writeIndex(outDir string, ss []*results.Summary, assets string) error {
	o, err := pageOptions(outDir, assets)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := report.Index(&b, ss, o); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(outDir, "index.html"), b.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
