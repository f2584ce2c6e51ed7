package experiment

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"kvsim/report"
	"kvsim/results"
)

// Rerender renders the pages of saved results again, without simulating,
// as kvsim report does: a dir holding summary.json gets its report.html;
// any other gets each subfolder's holding one, and its own index.html
// comparing them. Every folder is locked (waiting with o.Wait) and every
// page rendered before any is written, so bad input (a folder mixing two
// runs too) writes nothing. o.Assets is copied beside each page; wrote,
// if set, hears each page written.
func Rerender(ctx context.Context, dirs []string, o Options, wrote func(path string)) error {
	type job struct {
		dir   string   // parent folder for an index; scenario folder otherwise
		index bool     // dir gets index.html
		scens []string // scenario folders
		sums  []*results.Summary
		pages [][]byte // each scenario folder's report.html
	}
	var jobs []*job
	var locks []string
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			return BadInputf("report: %v", err)
		}
		if !st.IsDir() {
			return BadInputf("report: %s: not a folder", dir)
		}
		j := &job{dir: dir}
		if hasSummary(dir) {
			j.scens = []string{dir}
		} else {
			j.index = true
			ents, err := os.ReadDir(dir) // sorted by name: a stable index
			if err != nil {
				return BadInputf("report: %v", err)
			}
			for _, e := range ents {
				if sub := filepath.Join(dir, e.Name()); e.IsDir() && hasSummary(sub) {
					j.scens = append(j.scens, sub)
				}
			}
			if len(j.scens) == 0 {
				return BadInputf("report: %s: no summary.json in it or in its subfolders", dir)
			}
			if err := checkPagePath("report", "report:", dir, results.IndexFile, o.Assets, "move it, or report on each folder alone"); err != nil {
				return err
			}
		}
		for _, d := range j.scens {
			if err := checkPagePath("report", "report:", d, results.PageFile, o.Assets, "move it to render the report"); err != nil {
				return err
			}
		}
		locks = append(locks, j.scens...)
		jobs = append(jobs, j)
	}
	// Locked so that no run writes them while they are read.
	folders, unlock, err := results.LockAll(ctx, locks, o.Wait)
	if err != nil {
		return lockErr(ctx, err)
	}
	defer unlock()
	byDir := map[string]*results.Folder{}
	for i, d := range locks {
		byDir[d] = folders[i]
	}
	for _, j := range jobs {
		for _, d := range j.scens {
			if err := ctx.Err(); err != nil {
				return err
			}
			s, err := results.ReadSummary(filepath.Join(d, results.SummaryFile))
			if err != nil {
				return BadInput(err)
			}
			// A page of another run is not replaced: it may be the only
			// record of that run (a run killed while writing leaves no
			// such page, only a missing one).
			if p := filepath.Join(d, results.PageFile); results.IsPage(p) && results.PageRunID(p) != s.RunID {
				return BadInputf("report: %s: run_id %s, but summary.json's is %s: %v; move it away to render a new one, or run kvsim run again",
					p, orNone(results.PageRunID(p)), orNone(s.RunID), report.ErrMixedRun)
			}
			page, err := renderScenario(ctx, filepath.Join(d, results.RequestsFile), s, o.Assets)
			if err != nil {
				return err
			}
			j.sums, j.pages = append(j.sums, s), append(j.pages, page)
		}
	}
	if wrote == nil {
		wrote = func(string) {}
	}
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i, d := range j.scens {
			if _, err := PageOptions(d, o.Assets); err != nil {
				return err
			}
			p := filepath.Join(d, results.PageFile)
			if err := byDir[d].WriteFile(results.PageFile, j.pages[i]); err != nil {
				return fmt.Errorf("report: %s: %w", p, PathErr(err))
			}
			wrote(p)
		}
		if j.index {
			if err := writeIndex(ctx, j.dir, j.sums, o.Assets); err != nil {
				return err
			}
			wrote(filepath.Join(j.dir, results.IndexFile))
		}
	}
	return nil
}

// hasSummary says whether dir holds a summary.json.
func hasSummary(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, results.SummaryFile))
	return !errors.Is(err, fs.ErrNotExist)
}

// orNone is a run_id as messages show it.
func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}
