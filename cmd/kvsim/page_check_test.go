package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkPage, shared by plan, mrc and validate: one bad-input line naming
// the command and flag for a foreign page, a page that is an input, and
// --assets without ECharts; a new page in a writable folder passes.
func TestCheckPage(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "notes.html")
	if err := os.WriteFile(foreign, []byte("<p>mine</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "plan.html")
	for _, c := range []struct {
		path, assets string
		ins          []role
		want         string
	}{
		{foreign, "", nil, "plan: --html"},
		{page, "", []role{{"the trace", page}}, "plan: --html"},
		{page, dir, nil, "plan: --assets"},
	} {
		err := checkPage("plan", c.path, c.assets, c.ins)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err, &strings.Builder{}) != 2 {
			t.Errorf("%s (assets %q): %v, want bad input naming %q", c.path, c.assets, err, c.want)
		}
	}
	if err := checkPage("plan", page, "", nil); err != nil {
		t.Errorf("a new page: %v", err)
	}
	if err := checkAssetsFlag("mrc", "", dir); err == nil || !strings.Contains(err.Error(), "mrc: --assets is for the --html page") {
		t.Errorf("--assets alone: %v", err)
	}
}
