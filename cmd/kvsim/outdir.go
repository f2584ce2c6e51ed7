package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"kvsim/experiment"
	"kvsim/report"
	"kvsim/results"
)

// Output paths are checked before any work starts, so that a bad one costs
// nothing and is reported as bad input (exit 2) with the user's own path,
// never the name of a temporary file.

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
	if err := results.ProbeWritable(dir); err != nil {
		return badInputf("%s %s: cannot write in folder %s: %v", what, path, dir, err)
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

// checkPage checks, before any work, an --html page and its --assets (""
// for none) for the command cmd: the page can be written whole, is none of
// ins nor the assets' ECharts, replaces only a page kvsim made, and the
// assets pass checkAssets. Plan, mrc and validate share it.
func checkPage(cmd, path, assets string, ins []role) error {
	what := cmd + ": --html"
	if err := checkOutFile(what, path); err != nil {
		return err
	}
	if assets != "" {
		ins = append(ins, role{"--assets'", filepath.Join(assets, report.EChartsFile)})
	}
	if err := checkNotInput(what, path, ins); err != nil {
		return err
	}
	if err := experiment.CheckReplace(what, path, results.IsPage, "kvsim replaces only a page it made; move it or give another file"); err != nil {
		return err
	}
	return checkAssets(cmd, path, assets)
}

// checkAssets checks --assets ("" for none) for the page at path: the
// folder holds ECharts and the page's folder can take a copy of it.
func checkAssets(cmd, path, assets string) error {
	if assets == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(assets, report.EChartsFile)); err != nil {
		return badInputf("%s: --assets: %s: not found (give ECharts' dist folder, e.g. node_modules/echarts/dist)", cmd, filepath.Join(assets, report.EChartsFile))
	}
	return experiment.CheckAssetsDir(cmd+": --html "+path, filepath.Dir(path), assets)
}

// checkAssetsFlag refuses --assets without the --html page it is for.
func checkAssetsFlag(cmd, html, assets string) error {
	if assets != "" && html == "" {
		return badInputf("%s: --assets is for the --html page; add --html FILE or drop --assets", cmd)
	}
	return nil
}
