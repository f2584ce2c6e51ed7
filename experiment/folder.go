package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"kvsim/report"
	"kvsim/results"
	"kvsim/scenario"
)

// Results are the results folders one run or sweep writes under Out:
// Out/<scenario>/ for each scenario, checked, made and locked before any
// simulation, and Out/index.html. Its methods write complete folders, the
// same as kvsim run's, under the same guarantees (results.Folder).
type Results struct {
	o       Options
	folders map[string]*results.Folder // by scenario name
	unlock  func()
}

// OpenResults checks and makes o.Out and o.Out/<name> for each name,
// locks the scenario folders (waiting with o.Wait) and checks what they
// hold: a set file kvsim did not write is refused; files of different
// runs are told to o.Warn before they are replaced. index says whether
// o.Out/index.html will be written too (checked now). Close releases them.
func OpenResults(ctx context.Context, names []string, index bool, o Options) (*Results, error) {
	what := o.outFlag()
	dirs, err := prepareResultDirs(what, o.Out, names, index, o.Assets)
	if err != nil {
		return nil, err
	}
	folders, unlock, err := results.LockAll(ctx, dirs, o.Wait)
	if err != nil {
		return nil, lockErr(ctx, err)
	}
	r := &Results{o: o, folders: map[string]*results.Folder{}, unlock: unlock}
	for _, f := range folders {
		if err := f.CheckOurs(); err != nil {
			unlock()
			return nil, BadInputf("%s: %v; it will not be replaced: move it or give another --out", what, err)
		}
		if m := f.Mixed(); m != "" && o.Warn != nil {
			o.Warn(fmt.Sprintf("%s: its files come from different runs (%s): a run stopped while writing them; this run replaces them all", f.Dir, m))
		}
	}
	for i, n := range names {
		r.folders[n] = folders[i]
	}
	return r, nil
}

// Close unlocks the folders.
func (r *Results) Close() { r.unlock() }

// Run runs sc (one of the names given to OpenResults) as Run does and
// writes its folder; o's folder options (Out, Assets, Wait...) are
// OpenResults', the rest are Run's.
func (r *Results) Run(ctx context.Context, sc *scenario.Scenario, o Options) (*results.Summary, error) {
	f := r.folders[sc.Name]
	if f == nil {
		return nil, fmt.Errorf("run: scenario %s: its folder was not opened", sc.Name)
	}
	return run(ctx, sc, o, f, r.o.Assets)
}

// lockErr is a lock's error as bad input (another kvsim holds the folder,
// or it cannot be locked), ctx's error as it is.
func lockErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	return BadInput(err)
}

// outFlag is what messages call Out.
func (o Options) outFlag() string {
	if o.OutFlag == "" {
		return "--out"
	}
	return o.OutFlag
}

// renderPage renders sum's report.html, its requests read from
// requestsCSV, copying ECharts into dir/assets first when assets is set.
// It fails on bad input (requests.csv unreadable, or of another run), or
// with ctx's error.
func renderPage(ctx context.Context, dir, requestsCSV string, sum *results.Summary, assets string) ([]byte, error) {
	if _, err := PageOptions(dir, assets); err != nil {
		return nil, err
	}
	return renderScenario(ctx, requestsCSV, sum, assets)
}

// renderScenario renders sum's report.html into memory (renderPage
// without the copy of ECharts).
func renderScenario(ctx context.Context, requestsCSV string, sum *results.Summary, assets string) ([]byte, error) {
	var o report.Options
	if assets != "" {
		o.AssetsHost = results.AssetsDir + "/"
	}
	var b bytes.Buffer
	if err := report.ScenarioWithRequestsContext(ctx, &b, sum, requestsCSV, o); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, BadInput(err)
	}
	return b.Bytes(), nil
}

// WriteIndex writes Out/index.html comparing sums.
func (r *Results) WriteIndex(ctx context.Context, sums []*results.Summary) error {
	return writeIndex(ctx, r.o.Out, sums, r.o.Assets)
}

// writeIndex writes dir/index.html comparing the scenarios ss, whose
// reports are in dir/<scenario>/. Every run, sweep or report into dir
// writes that page (and dir/assets/), so it is written under dir's own
// lock, waited for (it is held only while a page is written), which also
// removes the temporary files a killed writer left there.
func writeIndex(ctx context.Context, dir string, ss []*results.Summary, assets string) error {
	f, err := results.Lock(ctx, dir, true)
	if err != nil {
		return lockErr(ctx, err)
	}
	defer f.Unlock()
	// Checked before the work too; again here, under the lock.
	p := filepath.Join(dir, results.IndexFile)
	if err := CheckReplace("report:", p, results.IsPage, "move it or give another --out"); err != nil {
		return err
	}
	o, err := PageOptions(dir, assets)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := report.Index(&b, SweepOrder(ss), o); err != nil {
		return err
	}
	if err := f.WriteFile(results.IndexFile, b.Bytes()); err != nil {
		return fmt.Errorf("report: %s: %w", p, PathErr(err))
	}
	return nil
}
