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
	"slices"
	"strings"
	"time"

	"kvsim/experiment"
	"kvsim/results"
)

// Output paths are checked before any work starts, so that a bad one costs
// nothing and is reported as bad input (exit 2) with the user's own path,
// never the name of a temporary file.

// probeWritable creates and removes a file in dir: the only check of
// write permission that holds for every user, root included.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, probePrefix+"*")
	if err != nil {
		return experiment.PathErr(err)
	}
	f.Close()
	// Another kvsim cleaning the folder may have removed it already.
	if err := os.Remove(f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return experiment.PathErr(err)
	}
	return nil
}

// prepareOutDir makes dir (with its parents) and checks that it is a
// folder kvsim can write in; what names the flag, as "run: --out".
func prepareOutDir(what, dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return badInputf("%s %s: exists and is not a folder", what, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return badInputf("%s %s: cannot make the folder: %v", what, dir, experiment.PathErr(err))
	}
	if err := probeWritable(dir); err != nil {
		return badInputf("%s %s: cannot write in the folder: %v", what, dir, err)
	}
	return nil
}

// checkOutFile checks, without writing it, that path can be written whole
// (through a temporary file in its folder and a rename): its folder exists
// and is writable, and path is absent or a regular file.
func checkOutFile(what, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return badInputf("%s %s: is a folder; give a file name", what, path)
	}
	// The rename that puts the new file in place would replace a device,
	// pipe or socket (as root, /dev/null itself) or a symbolic link.
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return badInputf("%s %s: exists and is not a regular file (a device, pipe, socket or symbolic link), which kvsim's new file would replace; give a file name", what, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return badInputf("%s %s: folder %s does not exist", what, path, dir)
	case err != nil:
		return badInputf("%s %s: %v", what, path, experiment.PathErr(err))
	case !st.IsDir():
		return badInputf("%s %s: %s is not a folder", what, path, dir)
	}
	if err := probeWritable(dir); err != nil {
		return badInputf("%s %s: cannot write in folder %s: %v", what, path, dir, err)
	}
	return nil
}

// checkReplace refuses to let a new file of kvsim's replace one kvsim did
// not write: path must be absent, empty (nothing to lose), or recognised
// by ours. how says what to do instead.
func checkReplace(what, path string, ours func(string) bool, how string) error {
	if ok, _ := results.Replaceable(path, ours); !ok {
		return badInputf("%s %s: exists and was not written by kvsim; it will not be replaced: %s", what, path, how)
	}
	return nil
}

// A role is one path a command reads or writes, with what the user
// calls it ("the scenario", "--cpuprofile").
type role struct{ what, path string }

// samePath says whether a and b name one file: the same absolute path, or
// (both existing) the same file by any name.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == ab {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// checkNotInput refuses an output path (what names its flag) that is one
// of the command's inputs or of its other outputs: no flag, --force
// included, lets an output replace what the command reads or writes
// elsewhere.
func checkNotInput(what, path string, others []role) error {
	for _, o := range others {
		if o.path != "" && samePath(path, o.path) {
			return badInputf("%s %s: is %s %s; give another path", what, path, o.what, o.path)
		}
	}
	return nil
}

// checkResultSets checks the results folders a run or sweep is about to
// write (locked): a summary.json, requests.csv or report.html kvsim did
// not write is refused, and a folder whose files come from different
// runs (a run killed while writing) is named on stderr before the run
// replaces them.
func checkResultSets(what string, dirs []string, stderr io.Writer) error {
	for _, d := range dirs {
		if err := results.CheckSetOurs(d); err != nil {
			return badInputf("%s: %v; it will not be replaced: move it or give another --out", what, err)
		}
		if m := results.MixedSet(d); m != "" {
			fmt.Fprintf(stderr, "kvsim: warning: %s: its files come from different runs (%s): a run stopped while writing them; this run replaces them all\n", d, m)
		}
	}
	return nil
}

// checkNotDirs checks that none of the files kvsim is about to replace in
// dir is a folder (a rename onto one fails only after all the work).
func checkNotDirs(what, dir string, names ...string) error {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return badInputf("%s: %s is a folder; kvsim writes a file there", what, p)
		}
	}
	return nil
}

// Results folders (DIR/<scenario>/) are written by one kvsim at a time: a
// run, a sweep point or a report takes an exclusive lock on lockName inside
// the folder for as long as it writes there. The file stays (removing a
// lock file races with the next taker); it holds nothing.
const lockName = ".kvsim.lock"

// probePrefix names probeWritable's file.
const probePrefix = ".kvsim-probe-"

// errBusy is returned (wrapped) when another kvsim holds a folder's lock.
var errBusy = errors.New("in use by another kvsim")

// lockPoll is how often --wait retries a held lock.
const lockPoll = 100 * time.Millisecond

// lockDirs takes the lock of every folder in dirs (they must exist), in
// one order for every process so that two waiting kvsims cannot deadlock,
// then removes kvsim's stale temporary files from each. Without wait a held
// lock fails at once (bad input: exit 2); with wait it is retried until
// free or ctx ends. unlock releases them all.
func lockDirs(ctx context.Context, dirs []string, wait bool) (unlock func(), err error) {
	type key struct{ abs, dir string }
	var ks []key
	for _, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return nil, badInputf("%s: %v", d, err)
		}
		ks = append(ks, key{a, d})
	}
	slices.SortFunc(ks, func(a, b key) int { return strings.Compare(a.abs, b.abs) })
	ks = slices.CompactFunc(ks, func(a, b key) bool { return a.abs == b.abs })
	var held []*os.File
	unlock = func() {
		for _, f := range held {
			unlockFile(f)
			f.Close()
		}
		held = nil
	}
	for _, k := range ks {
		f, err := lockDir(ctx, k.dir, wait)
		if err != nil {
			unlock()
			return nil, err
		}
		held = append(held, f)
		removeStaleTemps(k.dir)
	}
	return unlock, nil
}

func lockDir(ctx context.Context, dir string, wait bool) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, badInputf("%s: cannot lock the folder: %v", dir, experiment.PathErr(err))
	}
	for {
		err := tryLockFile(f)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, errBusy) {
			f.Close()
			return nil, badInputf("%s: cannot lock the folder: %v", dir, err)
		}
		if !wait {
			f.Close()
			return nil, badInputf("%s: %w (a run, sweep or report writing there); wait for it to finish, or pass --wait", dir, errBusy)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// staleTemp matches the temporary files kvsim itself makes in a results
// folder (os.CreateTemp puts decimal digits where the pattern has "*"): a
// policy's rows (.requests-*.csv), a file written whole before its rename
// (.summary.json.*, .requests.csv.*, .report.html.*, .index.html.*) and
// probeWritable's.
// A run killed mid-write leaves them; nothing else may be removed.
func staleTemp(name string) bool {
	for _, p := range [...][2]string{{".requests-", ".csv"}, {".requests.csv.", ""}, {".summary.json.", ""},
		{".report.html.", ""}, {".index.html.", ""}, {probePrefix, ""}} {
		if rest, ok := strings.CutPrefix(name, p[0]); ok {
			if digits, ok := strings.CutSuffix(rest, p[1]); ok && allDigits(digits) {
				return true
			}
		}
	}
	return false
}

// staleAsset matches CopyAssets' temporary file in DIR/assets.
func staleAsset(name string) bool {
	rest, ok := strings.CutPrefix(name, ".echarts.min.js.")
	return ok && allDigits(rest)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// removeStaleTemps removes, from a folder whose lock this process holds,
// the regular files of kvsim's own temporary naming (and of its assets/).
func removeStaleTemps(dir string) {
	clean := func(d string, match func(string) bool) {
		ents, err := os.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range ents {
			if e.Type().IsRegular() && match(e.Name()) {
				os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
	clean(dir, staleTemp)
	clean(filepath.Join(dir, "assets"), staleAsset)
}

// scenarioFiles are the files a run writes in DIR/<scenario>/.
var scenarioFiles = []string{"summary.json", "requests.csv", "report.html"}

// checkAssetsDir checks, when --assets is given, that dir/assets can
// take a copy of ECharts: absent, or a folder whose echarts.min.js is not.
func checkAssetsDir(what, dir, assets string) error {
	if assets == "" {
		return nil
	}
	p := filepath.Join(dir, "assets")
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return badInputf("%s: %s is not a folder; kvsim copies ECharts there (--assets)", what, p)
	}
	if err := checkNotDirs(what, p, "echarts.min.js"); err != nil {
		return err
	}
	// A copy of ECharts (of any version, or the very file given) is
	// replaced by the one given; anything else there is not kvsim's.
	src, err := os.ReadFile(filepath.Join(assets, "echarts.min.js"))
	ours := func(p string) bool {
		b, rerr := os.ReadFile(p)
		return results.IsECharts(p) || err == nil && rerr == nil && bytes.Equal(b, src)
	}
	return checkReplace(what+":", filepath.Join(p, "echarts.min.js"), ours, "move it, or drop --assets")
}

// prepareResultDirs checks and makes out and out/<name> for each name,
// before any simulation: the folders must be writable and the files to be
// replaced must not be folders. index says whether out/index.html will be
// written too; assets is the --assets value. what names the flag, as
// "run: --out".
func prepareResultDirs(what, out string, names []string, index bool, assets string) ([]string, error) {
	if err := prepareOutDir(what, out); err != nil {
		return nil, err
	}
	if index {
		if err := checkNotDirs(what, out, "index.html"); err != nil {
			return nil, err
		}
		if err := checkReplace(what, filepath.Join(out, "index.html"), results.IsPage, "move it or give another --out"); err != nil {
			return nil, err
		}
		if err := checkAssetsDir(what, out, assets); err != nil {
			return nil, err
		}
	}
	var dirs []string
	for _, n := range names {
		d := filepath.Join(out, n)
		if err := prepareOutDir(what, d); err != nil {
			return nil, err
		}
		if err := checkNotDirs(what, d, scenarioFiles...); err != nil {
			return nil, err
		}
		if err := checkAssetsDir(what, d, assets); err != nil {
			return nil, err
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}
