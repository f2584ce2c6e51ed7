package experiment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"kvsim/report"
	"kvsim/results"
)

// Output paths are checked before any work starts, so that a bad one costs
// nothing and is reported as bad input with the user's own path, never
// the name of a temporary file. what names the path in messages, as
// "run: --out".

// PrepareDir makes dir (with its parents) and checks that it is a folder
// kvsim can write in.
func PrepareDir(what, dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return BadInputf("%s %s: exists and is not a folder", what, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return BadInputf("%s %s: cannot make the folder: %v", what, dir, PathErr(err))
	}
	if err := results.ProbeWritable(dir); err != nil {
		return BadInputf("%s %s: cannot write in the folder: %v", what, dir, err)
	}
	return nil
}

// CheckReplace refuses to let a new file of kvsim's replace one kvsim did
// not write: path must be absent, empty (nothing to lose), or recognised
// by ours. how says what to do instead.
func CheckReplace(what, path string, ours func(string) bool, how string) error {
	if ok, _ := results.Replaceable(path, ours); !ok {
		return BadInputf("%s %s: exists and was not written by kvsim; it will not be replaced: %s", what, path, how)
	}
	return nil
}

// checkNotDirs checks that none of the files kvsim is about to replace in
// dir is a folder (a rename onto one fails only after all the work).
func checkNotDirs(what, dir string, names ...string) error {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return BadInputf("%s: %s is a folder; kvsim writes a file there", what, p)
		}
	}
	return nil
}

// CheckAssetsDir checks, when assets (an ECharts dist folder) is given,
// that dir/assets can take a copy of ECharts: absent, or a folder whose
// echarts.min.js is not.
func CheckAssetsDir(what, dir, assets string) error {
	if assets == "" {
		return nil
	}
	p := filepath.Join(dir, results.AssetsDir)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return BadInputf("%s: %s is not a folder; kvsim copies ECharts there (--assets)", what, p)
	}
	if err := checkNotDirs(what, p, results.EChartsFile); err != nil {
		return err
	}
	// A copy of ECharts (of any version, or the very file given) is
	// replaced by the one given; anything else there is not kvsim's.
	src, err := os.ReadFile(filepath.Join(assets, results.EChartsFile))
	ours := func(p string) bool {
		b, rerr := os.ReadFile(p)
		return results.IsECharts(p) || err == nil && rerr == nil && bytes.Equal(b, src)
	}
	return CheckReplace(what+":", filepath.Join(p, results.EChartsFile), ours, "move it, or drop --assets")
}

// PageOptions copies ECharts into dir/assets when assets names a dist
// folder, so the page works offline; else pages load it online.
func PageOptions(dir, assets string) (report.Options, error) {
	if assets == "" {
		return report.Options{}, nil
	}
	if err := report.CopyAssets(assets, filepath.Join(dir, results.AssetsDir)); err != nil {
		return report.Options{}, fmt.Errorf("report: %w", err)
	}
	return report.Options{AssetsHost: results.AssetsDir + "/"}, nil
}

// checkPagePath checks that page name can be written in dir: not a
// folder, absent or kvsim's own (how says what to do otherwise), and
// with its assets/ able to take ECharts when assets is set. what and
// whatReplace name the path in messages.
func checkPagePath(what, whatReplace, dir, name, assets, how string) error {
	if err := checkNotDirs(what, dir, name); err != nil {
		return err
	}
	if err := CheckReplace(whatReplace, filepath.Join(dir, name), results.IsPage, how); err != nil {
		return err
	}
	return CheckAssetsDir(what, dir, assets)
}

// prepareResultDirs checks and makes out and out/<name> for each name,
// before any simulation: the folders must be writable and the files to be
// replaced must not be folders. index says whether out/index.html will be
// written too; assets is the ECharts folder to copy, if any.
func prepareResultDirs(what, out string, names []string, index bool, assets string) ([]string, error) {
	if err := PrepareDir(what, out); err != nil {
		return nil, err
	}
	if index {
		if err := checkPagePath(what, what, out, results.IndexFile, assets, "move it or give another --out"); err != nil {
			return nil, err
		}
	}
	var dirs []string
	for _, n := range names {
		d := filepath.Join(out, n)
		if err := PrepareDir(what, d); err != nil {
			return nil, err
		}
		if err := checkNotDirs(what, d, results.SetFiles...); err != nil {
			return nil, err
		}
		if err := CheckAssetsDir(what, d, assets); err != nil {
			return nil, err
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}
