package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"kvsim/internal/atomicfile"
	"kvsim/results"
)

// A sharded sweep runs its points on several machines that share one
// results folder: shard I of N (0-based, as SLURM_ARRAY_TASK_ID from
// --array=0-(N-1) and JOB_COMPLETION_INDEX are) runs the points k, in the
// order of the sweep's values, with k mod N = I. Each shard locks only its
// points' folders, so shards never wait for one another; a point whose
// folder already holds this run's complete set is not run again. No shard
// writes index.html: Merge does, once every point is done, from the
// manifest every shard keeps in the folder.

// ManifestFile is the sweep's manifest in its results folder: the points,
// in order, and the run_id each must carry.
const ManifestFile = results.ManifestFile

const manifestFormat = "kvsim-sweep/1"

// A Manifest lists a sharded sweep's points for Merge.
type Manifest struct {
	Format string          `json:"format"`
	Key    string          `json:"key"`
	Points []ManifestPoint `json:"points"`
}

// A ManifestPoint is one point of a sharded sweep.
type ManifestPoint struct {
	Name  string `json:"name"` // its folder under the results folder
	Value string `json:"value"`
	RunID string `json:"run_id"`
}

// ShardPoints are the indices of the points shard i of n runs.
func ShardPoints(points, i, n int) []int {
	var ks []int
	for k := i; k < points; k += n {
		ks = append(ks, k)
	}
	return ks
}

// RunShard runs shard i of n of the sweep into o.Out (which it needs):
// the points ShardPoints gives, each skipped when its folder already
// holds this run's complete set. sums and reused are by point, in the
// shard's order; done is called for each point run or reused.
func (s *Sweep) RunShard(ctx context.Context, o Options, i, n int, done func(k int, sum *results.Summary) error) (sums []*results.Summary, reused []bool, err error) {
	if o.Out == "" {
		return nil, nil, fmt.Errorf("sweep: a shard needs a results folder")
	}
	if n < 1 || i < 0 || i >= n {
		return nil, nil, BadInputf("sweep: shard %d of %d: want 0 <= I < N", i, n)
	}
	ks := ShardPoints(len(s.Points), i, n)
	var names []string
	for _, k := range ks {
		names = append(names, s.Points[k].Name)
	}
	r, err := OpenResults(ctx, names, false, o)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	if err := checkEventsAll(o, names); err != nil {
		return nil, nil, err
	}
	// Before any run_id: a piped trace is hashed from its copy.
	release, err := SpoolScenarios(ctx, s.Points...)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	ids := make([]string, len(s.Points))
	for _, k := range ks {
		if ids[k], err = s.pointRunID(k, o); err != nil {
			return nil, nil, err
		}
	}
	if err := s.keepManifest(ctx, o, ids); err != nil {
		return nil, nil, err
	}
	for _, k := range ks {
		sc := s.Points[k]
		o.Sweep = &results.SweepPoint{Key: s.Key, Value: s.Values[k]}
		dir := filepath.Join(o.Out, sc.Name)
		sum, ok := readDone(dir, ids[k])
		if ok && o.TraceEvents > 0 && results.EventsRunID(filepath.Join(dir, results.EventsFile)) != ids[k] {
			ok = false // done without its events.bin: run again, for the log
		}
		if !ok {
			if sum, err = r.Run(ctx, sc, o); err != nil {
				return nil, nil, err
			}
		}
		if done != nil {
			if err := done(k, sum); err != nil {
				return nil, nil, err
			}
		}
		sums, reused = append(sums, sum), append(reused, ok)
	}
	return sums, reused, nil
}

// pointRunID is the run_id point k's results carry when run with o.
func (s *Sweep) pointRunID(k int, o Options) (string, error) {
	sc := s.Points[k]
	return runID(sc, TraceOptions(sc, o.SkipBadLines, o.Limit), &results.SweepPoint{Key: s.Key, Value: s.Values[k]})
}

// readDone returns the summary of the results folder dir when it holds a
// complete set of run id: WriteSet renames requests.csv, summary.json and
// report.html in that order, after removing the old report.html, so a
// summary.json and a report.html both of id mean all three are this
// run's.
func readDone(dir, id string) (*results.Summary, bool) {
	sum, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
	if err != nil || sum.RunID != id || results.PageRunID(filepath.Join(dir, results.PageFile)) != id ||
		!results.IsRequests(filepath.Join(dir, results.RequestsFile)) {
		return nil, false
	}
	return sum, true
}

// keepManifest makes Out's manifest this sweep's, under Out's own lock
// (taken after the points' folders, in the order the unsharded sweep
// takes them): kept when it lists the same points and agrees on the
// run_ids this shard knows (known[k] != ""), else written anew with every
// point's run_id, so that only the first shard to arrive hashes the other
// points' traces.
func (s *Sweep) keepManifest(ctx context.Context, o Options, known []string) error {
	f, err := results.Lock(ctx, o.Out, true)
	if err != nil {
		return lockErr(ctx, err)
	}
	defer f.Unlock()
	p := filepath.Join(o.Out, ManifestFile)
	old, err := ReadManifest(o.Out)
	if err == nil && old.Key == s.Key && len(old.Points) == len(s.Points) {
		same := true
		for k, pt := range old.Points {
			same = same && pt.Name == s.Points[k].Name && pt.Value == s.Values[k] && (known[k] == "" || known[k] == pt.RunID)
		}
		if same {
			return nil
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if ok, _ := results.Replaceable(p, func(string) bool { return false }); !ok {
			return BadInputf("%s %s: %v; it will not be replaced: move it or give another --out", o.outFlag(), p, err)
		}
	}
	m := Manifest{Format: manifestFormat, Key: s.Key}
	for k, sc := range s.Points {
		id := known[k]
		if id == "" {
			if id, err = s.pointRunID(k, o); err != nil {
				return err
			}
		}
		m.Points = append(m.Points, ManifestPoint{Name: sc.Name, Value: s.Values[k], RunID: id})
	}
	b, err := results.MarshalJSON(&m)
	if err != nil {
		return err
	}
	if err := f.WriteFile(ManifestFile, b); err != nil {
		return fmt.Errorf("sweep: %s: %w", p, PathErr(err))
	}
	return nil
}

// ReadManifest reads dir's sweep manifest; its error wraps fs.ErrNotExist
// when there is none.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Format != manifestFormat {
		return nil, fmt.Errorf("%s: not a kvsim sweep manifest (%s)", p, manifestFormat)
	}
	return &m, nil
}

// An IncompleteError is a merge of a sweep some of whose points are not
// done: their folders are absent, of another run, or unfinished.
type IncompleteError struct {
	Dir     string
	Missing []string // the points' folder names
	Of      int
}

func (e *IncompleteError) Error() string {
	list := e.Missing
	if len(list) > 5 {
		list = append(slices.Clone(list[:5]), fmt.Sprintf("and %d more", len(list)-5))
	}
	return fmt.Sprintf("merge: %s: %d of %d points are not done (%s): run their shards (again), then merge", e.Dir, len(e.Missing), e.Of, strings.Join(list, ", "))
}

// Merge writes dir/index.html for the sharded sweep whose shards wrote
// into dir, the page the unsharded sweep writes, once every point of its
// manifest holds its complete set (else an *IncompleteError, and nothing
// is written). The points' folders are locked while they are read (o.Wait
// waits for a shard still writing one); assets is as for kvsim sweep.
func Merge(ctx context.Context, dir string, o Options) ([]*results.Summary, error) {
	m, err := readManifestInput(dir)
	if err != nil {
		return nil, err
	}
	if err := checkPagePath("merge:", "merge:", dir, results.IndexFile, o.Assets, "move it"); err != nil {
		return nil, err
	}
	if err := m.check(dir); err != nil {
		return nil, err
	}
	var dirs []string
	for _, p := range m.Points {
		dirs = append(dirs, filepath.Join(dir, p.Name))
	}
	var present []string
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			present = append(present, d)
		}
	}
	_, unlock, err := results.LockAll(ctx, present, o.Wait)
	if err != nil {
		return nil, lockErr(ctx, err)
	}
	defer unlock()
	var sums []*results.Summary
	inc := &IncompleteError{Dir: dir, Of: len(m.Points)}
	for i, p := range m.Points {
		sum, ok := readDone(dirs[i], p.RunID)
		if !ok {
			inc.Missing = append(inc.Missing, p.Name)
		}
		sums = append(sums, sum)
	}
	if len(inc.Missing) > 0 {
		return nil, inc
	}
	if err := writeIndex(ctx, dir, sums, o.Assets); err != nil {
		return nil, err
	}
	return sums, nil
}

// readManifestInput is ReadManifest for merge: a missing or foreign
// manifest is bad input.
func readManifestInput(dir string) (*Manifest, error) {
	m, err := ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, BadInputf("merge: %s: no sharded sweep there (no %s): run kvsim sweep --shard I/N --out %s first", dir, ManifestFile, dir)
	}
	if err != nil {
		return nil, BadInputf("merge: %v", err)
	}
	return m, nil
}

// check refuses a manifest (in dir) whose point folders are not names.
func (m *Manifest) check(dir string) error {
	for _, p := range m.Points {
		if p.Name == "" || p.Name != filepath.Base(p.Name) || p.Name == "." || p.Name == ".." {
			return BadInputf("merge: %s: point folder %q is not a name", filepath.Join(dir, ManifestFile), p.Name)
		}
	}
	return nil
}

// Collect assembles into dest a sweep whose shards wrote into separate
// folders (dirs, each one shard's --out, their manifests the same sweep's):
// each point dest does not already hold done is copied, with its copy of
// ECharts, from a folder where it is done, as one set (results.CopySet);
// then dest gets the manifest and is merged (Merge). A point done nowhere
// is left out and named by Merge's *IncompleteError.
func Collect(ctx context.Context, dest string, dirs []string, o Options) ([]*results.Summary, error) {
	var m *Manifest
	for _, d := range dirs {
		dm, err := readManifestInput(d)
		if err != nil {
			return nil, err
		}
		if err := dm.check(d); err != nil {
			return nil, err
		}
		if m == nil {
			m = dm
		} else if dm.Key != m.Key || !slices.Equal(dm.Points, m.Points) {
			return nil, BadInputf("merge: %s and %s hold different sweeps (their %s differ): merge one sweep's shards at a time", dirs[0], d, ManifestFile)
		}
	}
	what := "merge: --into"
	if err := PrepareDir(what, dest); err != nil {
		return nil, err
	}
	for _, p := range m.Points {
		if err := collectPoint(ctx, what, filepath.Join(dest, p.Name), p, dirs, o.Wait); err != nil {
			return nil, err
		}
	}
	if err := putManifest(ctx, what, dest, m); err != nil {
		return nil, err
	}
	return Merge(ctx, dest, o)
}

// collectPoint copies point p into the folder dst from the first of dirs
// that holds it done, unless dst does; dst's lock is held throughout, each
// source's while it is read.
func collectPoint(ctx context.Context, what, dst string, p ManifestPoint, dirs []string, wait bool) error {
	if err := PrepareDir(what, dst); err != nil {
		return err
	}
	f, err := results.Lock(ctx, dst, wait)
	if err != nil {
		return lockErr(ctx, err)
	}
	defer f.Unlock()
	if _, ok := readDone(dst, p.RunID); ok {
		return nil
	}
	dstInfo, _ := os.Stat(dst)
	for _, d := range dirs {
		src := filepath.Join(d, p.Name)
		st, err := os.Stat(src)
		if err != nil || !st.IsDir() || os.SameFile(st, dstInfo) {
			continue
		}
		sf, err := results.Lock(ctx, src, wait)
		if err != nil {
			return lockErr(ctx, err)
		}
		_, ok := readDone(src, p.RunID)
		if ok {
			err = copyPoint(what, src, dst, p.RunID)
		}
		sf.Unlock()
		if ok || err != nil {
			return err
		}
	}
	return nil
}

// copyPoint copies a done point's folder: its copy of ECharts first (the
// page needs it), then its set, then its events.bin when it is this run's
// (kvsim sweep --trace-events), after the set as a run writes it.
func copyPoint(what, src, dst, id string) error {
	assets := filepath.Join(src, results.AssetsDir)
	if _, err := os.Stat(filepath.Join(assets, results.EChartsFile)); err == nil {
		if err := CheckAssetsDir(what, dst, assets); err != nil {
			return err
		}
		if _, err := PageOptions(dst, assets); err != nil {
			return err
		}
	}
	if err := results.CopySet(src, dst); err != nil {
		if errors.Is(err, results.ErrNotOurs) {
			return BadInputf("%s %v; it will not be replaced: move it or give another --into", what, err)
		}
		return fmt.Errorf("merge: %w", PathErr(err))
	}
	ev := filepath.Join(src, results.EventsFile)
	if results.EventsRunID(ev) != id {
		return nil
	}
	out := filepath.Join(dst, results.EventsFile)
	if ok, _ := results.Replaceable(out, results.IsEvents); !ok {
		return BadInputf("%s %s %v; it will not be replaced: move it or give another --into", what, out, results.ErrNotOurs)
	}
	b, err := os.ReadFile(ev)
	if err == nil {
		err = atomicfile.Write(out, b)
	}
	if err != nil {
		return fmt.Errorf("merge: %w", PathErr(err))
	}
	return nil
}

// putManifest makes m dir's manifest, under dir's lock, replacing only a
// manifest (or an empty file).
func putManifest(ctx context.Context, what, dir string, m *Manifest) error {
	f, err := results.Lock(ctx, dir, true)
	if err != nil {
		return lockErr(ctx, err)
	}
	defer f.Unlock()
	p := filepath.Join(dir, ManifestFile)
	old, err := ReadManifest(dir)
	if err == nil && old.Key == m.Key && slices.Equal(old.Points, m.Points) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if ok, _ := results.Replaceable(p, func(string) bool { return false }); !ok {
			return BadInputf("%s %s: %v; it will not be replaced: move it or give another --into", what, p, err)
		}
	}
	b, err := results.MarshalJSON(m)
	if err != nil {
		return err
	}
	if err := f.WriteFile(ManifestFile, b); err != nil {
		return fmt.Errorf("merge: %s: %w", p, PathErr(err))
	}
	return nil
}
