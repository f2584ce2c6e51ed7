package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"kvsim/experiment"
	"kvsim/results"
	"kvsim/scenario"
)

// TestLibraryFolderSameAsRun: a Go program calling experiment gets the
// folders kvsim run and kvsim sweep write: the same files, byte for byte
// (summary.json but for its wall-clock figures), and kvsim report
// re-renders the library's page into kvsim run's.
func TestLibraryFolderSameAsRun(t *testing.T) {
	lib, cli := t.TempDir(), t.TempDir()
	sc, err := scenario.Load(quickstart)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := experiment.Run(context.Background(), sc, experiment.Options{Out: lib, Limit: 200, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runKvsim("run", "--quiet", "--limit", "200", "--out", cli, quickstart); code != 0 {
		t.Fatalf("kvsim run: status %d: %s", code, stderr)
	}
	sameFolders(t, filepath.Join(lib, sc.Name), filepath.Join(cli, sc.Name))
	if _, stderr, code := runKvsim("report", "--quiet", filepath.Join(lib, sc.Name)); code != 0 {
		t.Fatalf("kvsim report: status %d: %s", code, stderr)
	}
	sameFolders(t, filepath.Join(lib, sc.Name), filepath.Join(cli, sc.Name))

	sw, err := experiment.LoadSweep(quickstart, nil, "seed", "seed", []string{"1", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw.Run(context.Background(), experiment.Options{Out: lib, Limit: 100, Workers: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runKvsim("sweep", "--quiet", "--limit", "100", "--out", cli, "--vary", "seed", "--values", "1,2", quickstart); code != 0 {
		t.Fatalf("kvsim sweep: status %d: %s", code, stderr)
	}
	for _, p := range sw.Points {
		sameFolders(t, filepath.Join(lib, p.Name), filepath.Join(cli, p.Name))
	}
	a, b := reportReadFile(t, filepath.Join(lib, results.IndexFile)), reportReadFile(t, filepath.Join(cli, results.IndexFile))
	if a != b {
		t.Error("the library's index.html differs from kvsim sweep's")
	}
}

// sameFolders checks that two results folders hold the same files.
func sameFolders(t *testing.T, a, b string) {
	t.Helper()
	for _, n := range []string{results.RequestsFile, results.PageFile} {
		x, y := reportReadFile(t, filepath.Join(a, n)), reportReadFile(t, filepath.Join(b, n))
		if x != y {
			t.Errorf("%s: the library's differs from kvsim's", n)
		}
	}
	var sums [2][]byte
	for i, d := range []string{a, b} {
		s, err := results.ReadSummary(filepath.Join(d, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		s.Run = results.Run{}
		if sums[i], err = results.MarshalJSON(s); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(sums[0], sums[1]) {
		t.Errorf("summary.json: the library's differs from kvsim's:\n%s\n%s", sums[0], sums[1])
	}
	for _, d := range []string{a, b} {
		ents, _ := os.ReadDir(d)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if len(names) != 4 { // the set and the lock
			t.Errorf("%s holds %v", d, names)
		}
	}
}
