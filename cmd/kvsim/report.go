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

	"kvsim/experiment"
	"kvsim/report"
	"kvsim/results"
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
	type job struct {
		dir   string   // parent folder for an index; scenario folder otherwise
		index bool     // dir gets index.html
		scens []string // scenario folders
		sums  []*results.Summary
		pages [][]byte // each scenario folder's report.html
	}
	// Find the scenario folders and lock them, so that no run writes
	// them while they are read; then read and render every page, so that
	// bad input (a mixed folder too) writes nothing.
	var jobs []*job
	var locks []string
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			return badInputf("report: %v", err)
		}
		if !st.IsDir() {
			return badInputf("report: %s: not a folder", dir)
		}
		j := &job{dir: dir}
		if hasSummary(dir) {
			j.scens = []string{dir}
		} else {
			j.index = true
			ents, err := os.ReadDir(dir) // sorted by name: a stable index
			if err != nil {
				return badInputf("report: %v", err)
			}
			for _, e := range ents {
				if sub := filepath.Join(dir, e.Name()); e.IsDir() && hasSummary(sub) {
					j.scens = append(j.scens, sub)
				}
			}
			if len(j.scens) == 0 {
				return badInputf("report: %s: no summary.json in it or in its subfolders", dir)
			}
			if err := checkNotDirs("report", dir, "index.html"); err != nil {
				return err
			}
			if err := checkReplace("report:", filepath.Join(dir, "index.html"), results.IsPage, "move it, or report on each folder alone"); err != nil {
				return err
			}
			if err := checkAssetsDir("report", dir, *assets); err != nil {
				return err
			}
		}
		for _, d := range j.scens {
			if err := checkNotDirs("report", d, "report.html"); err != nil {
				return err
			}
			if err := checkReplace("report:", filepath.Join(d, "report.html"), results.IsPage, "move it to render the report"); err != nil {
				return err
			}
			if err := checkAssetsDir("report", d, *assets); err != nil {
				return err
			}
		}
		locks = append(locks, j.scens...)
		jobs = append(jobs, j)
	}
	unlock, err := lockDirs(ctx, locks, wait)
	if err != nil {
		return err
	}
	defer unlock()
	for _, j := range jobs {
		for _, d := range j.scens {
			if err := ctx.Err(); err != nil {
				return err
			}
			s, err := results.ReadSummary(filepath.Join(d, "summary.json"))
			if err != nil {
				return badInput(err)
			}
			// A page of another run is not replaced: it may be the only
			// record of that run (a run killed while writing leaves no
			// such page, only a missing one).
			if p := filepath.Join(d, "report.html"); results.IsPage(p) && results.PageRunID(p) != s.RunID {
				return badInputf("report: %s: run_id %s, but summary.json's is %s: %v; move it away to render a new one, or run kvsim run again",
					p, orNone(results.PageRunID(p)), orNone(s.RunID), report.ErrMixedRun)
			}
			page, err := renderScenarioReport(ctx, filepath.Join(d, "requests.csv"), s, *assets)
			if err != nil {
				return err
			}
			j.sums, j.pages = append(j.sums, s), append(j.pages, page)
		}
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
		for i, d := range j.scens {
			if err := writeReportPage(d, j.pages[i], *assets); err != nil {
				return err
			}
			wrote(filepath.Join(d, "report.html"))
		}
		if j.index {
			if err := writeIndex(ctx, j.dir, j.sums, *assets); err != nil {
				return err
			}
			wrote(filepath.Join(j.dir, "index.html"))
		}
	}
	return nil
}

// hasSummary says whether dir holds a summary.json.
func hasSummary(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	return !errors.Is(err, fs.ErrNotExist)
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

// renderScenarioReport renders the report.html of s, whose requests are
// in requestsCSV, into memory; it fails only on bad input (requests.csv
// unreadable, or from another run than s), or with ctx's error.
func renderScenarioReport(ctx context.Context, requestsCSV string, s *results.Summary, assets string) ([]byte, error) {
	var o report.Options
	if assets != "" {
		o.AssetsHost = "assets/"
	}
	var b bytes.Buffer
	if err := report.ScenarioWithRequestsContext(ctx, &b, s, requestsCSV, o); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, badInput(err)
	}
	return b.Bytes(), nil
}

// writeReportPage writes a rendered dir/report.html, with ECharts copied
// beside it when assets is set.
func writeReportPage(dir string, page []byte, assets string) error {
	if _, err := pageOptions(dir, assets); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, "report.html"), page); err != nil {
		return fmt.Errorf("report: %s: %w", filepath.Join(dir, "report.html"), experiment.PathErr(err))
	}
	return nil
}

// writeIndex writes outDir/index.html comparing the scenarios ss, whose
// reports are in outDir/<scenario>/. Every run, sweep or report into
// outDir writes that page (and outDir/assets/), so it is written under
// outDir's own lock, waited for (it is held only while a page is
// written), which also lets the temporary files a killed writer left
// there be removed.
func writeIndex(ctx context.Context, outDir string, ss []*results.Summary, assets string) error {
	f, err := lockDir(ctx, outDir, true)
	if err != nil {
		return err
	}
	defer func() {
		unlockFile(f)
		f.Close()
	}()
	removeStaleTemps(outDir)
	// Checked before the work too; again here, under the lock.
	if err := checkReplace("report:", filepath.Join(outDir, "index.html"), results.IsPage, "move it or give another --out"); err != nil {
		return err
	}
	o, err := pageOptions(outDir, assets)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := report.Index(&b, experiment.SweepOrder(ss), o); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(outDir, "index.html"), b.Bytes()); err != nil {
		return fmt.Errorf("report: %s: %w", filepath.Join(outDir, "index.html"), experiment.PathErr(err))
	}
	return nil
}

// orNone is a run_id as messages show it.
func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}
