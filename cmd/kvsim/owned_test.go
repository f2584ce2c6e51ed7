package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/experiment"
	"kvsim/results"
)

// smallRun writes a one-request trace and a scenario over it into dir,
// and returns the scenario's path and the trace's.
func smallRun(t *testing.T, dir, name string) (scen, trace string) {
	t.Helper()
	trace = writeFile(t, dir, name+".jsonl", `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}`+"\n")
	return writeFile(t, dir, name+".toml", scenarioTOML(name, trace, "1GiB", "", "lru")), trace
}

// TestOutputsNeverReplaceForeign: an output path holding a file kvsim did
// not write, or naming one of the command's inputs or its other outputs,
// is refused before any work (exit 2, one line naming the flag and path),
// and the file is left as it was; a file kvsim wrote is replaced.
func TestOutputsNeverReplaceForeign(t *testing.T) {
	root := t.TempDir()
	scen, trace := smallRun(t, root, "s")
	mine := func(name string) string { return writeFile(t, root, name, "a user's file\n") }
	foreign := mine("notes.txt")
	out := filepath.Join(root, "out")
	// Results folders whose files are not kvsim's.
	folder := func(name, file string) string {
		d := filepath.Join(root, name)
		writeFile(t, mkdirAll(t, filepath.Join(d, "s")), file, "a user's file\n")
		return filepath.Join(d, "s", file)
	}
	fSum, fReq, fPage := folder("o1", "summary.json"), folder("o2", "requests.csv"), folder("o3", "report.html")
	fAssets := folder("o4", "assets")
	os.Remove(fAssets)
	fAssets = writeFile(t, mkdirAll(t, fAssets), "echarts.min.js", "a user's file\n")
	dist := mkdirAll(t, filepath.Join(root, "dist"))
	writeFile(t, dist, "echarts.min.js", "var echarts = {};")
	scen2, _ := smallRun(t, root, "t")
	fIndex := writeFile(t, mkdirAll(t, filepath.Join(root, "o5")), "index.html", "<html>my index</html>\n")
	// A saved results folder whose page, and a parent whose index, are not kvsim's.
	rep := filepath.Join(root, "rep", "small")
	reportFixture(t, "small", rep)
	rPage := writeFile(t, rep, "report.html", "<html>my page</html>\n")
	rep2 := filepath.Join(root, "rep2")
	reportFixture(t, "small", filepath.Join(rep2, "small"))
	rIndex := writeFile(t, rep2, "index.html", "<html>my index</html>\n")
	// A binary trace, to be converted onto itself.
	kvtc := filepath.Join(root, "x.kvtc")
	if _, stderr, code := runKvsim("trace", "convert", trace, kvtc); code != 0 {
		t.Fatalf("trace convert: %d %s", code, stderr)
	}
	kvtcBytes := reportReadFile(t, kvtc)
	mkdirAll(t, filepath.Join(root, "o6", "s"))
	mkdirAll(t, filepath.Join(root, "cal"))
	run := []string{"run", "--quiet"}
	for _, c := range []struct {
		args []string
		path string // the file that must stay as it was
		says string // and the message must say
	}{
		{append(run, "--out", out, "--memprofile", scen, scen), scen, "run: --memprofile " + scen + ": is the scenario"},
		{append(run, "--out", out, "--cpuprofile", trace, scen), trace, "run: --cpuprofile " + trace + ": is the trace"},
		{append(run, "--out", out, "--cpuprofile", foreign, scen), foreign, "run: --cpuprofile " + foreign + ": exists and was not written by kvsim"},
		{append(run, "--out", out, "--memprofile", foreign, scen), foreign, "run: --memprofile " + foreign + ": exists and was not written by kvsim"},
		{append(run, "--out", out, "--cpuprofile", filepath.Join(root, "p"), "--memprofile", filepath.Join(root, "p"), scen), "", "is --memprofile"},
		{append(run, "--out", filepath.Join(root, "o6"), "--cpuprofile", filepath.Join(root, "o6", "s", "report.html"), scen), "", "is a results file of this run"},
		{append(run, "--out", filepath.Join(root, "o1"), scen), fSum, fSum + " exists and was not written by kvsim"},
		{append(run, "--out", filepath.Join(root, "o2"), scen), fReq, fReq + " exists and was not written by kvsim"},
		{append(run, "--out", filepath.Join(root, "o3"), scen), fPage, fPage + " exists and was not written by kvsim"},
		{append(run, "--out", filepath.Join(root, "o4"), "--assets", dist, scen), fAssets, fAssets + ": exists and was not written by kvsim"},
		{append(run, "--out", filepath.Join(root, "o5"), scen, scen2), fIndex, fIndex + ": exists and was not written by kvsim"},
		{[]string{"sweep", "--quiet", "--out", filepath.Join(root, "o5"), "--vary", "seed", "--values", "1,2", scen}, fIndex, fIndex + ": exists and was not written by kvsim"},
		{[]string{"report", "--quiet", rep}, rPage, rPage + ": exists and was not written by kvsim"},
		{[]string{"report", "--quiet", rep2}, rIndex, rIndex + ": exists and was not written by kvsim"},
		{[]string{"gen", "--requests", "5", "--out", trace}, trace, "gen: --out " + trace + ": exists"},
		{[]string{"mrc", "--trace", trace, "--policies", "lru", "--sizes", "1", "--html", foreign}, foreign, "mrc: --html " + foreign + ": exists and was not written by kvsim"},
		{[]string{"mrc", "--trace", trace, "--policies", "lru", "--sizes", "1", "--html", trace}, trace, "mrc: --html " + trace + ": is --trace"},
		{[]string{"calibrate", "--dir", filepath.Join(root, "cal"), "--out", foreign}, foreign, "calibrate: --out " + foreign + ": exists and was not written by kvsim"},
		{[]string{"calibrate", "--dir", filepath.Join(root, "cal"), "--out", filepath.Join(root, "cal", "iobench.dat")}, "", "is a scratch file calibrate writes"},
		{[]string{"trace", "convert", "--force", kvtc, kvtc}, kvtc, "is IN"},
	} {
		smallRun(t, root, "s") // as it was, whatever a case did to it
		var before string
		if c.path != "" {
			before = reportReadFile(t, c.path)
		}
		stdout, stderr, code := runKvsim(c.args...)
		if code != 2 || !strings.Contains(stderr, c.says) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stdout != "" {
			t.Errorf("%v: status %d, stdout %q, stderr %q; want 2 and one line saying %q", c.args, code, stdout, stderr, c.says)
		}
		if c.path != "" && reportReadFile(t, c.path) != before {
			t.Errorf("%v: %s changed", c.args, c.path)
		}
	}
	if reportReadFile(t, kvtc) != kvtcBytes {
		t.Error("the binary trace changed")
	}
	// Nothing was simulated or measured.
	for _, p := range []string{filepath.Join(out, "s", "summary.json"), filepath.Join(root, "o1", "s", "requests.csv"),
		filepath.Join(root, "o5", "s", "summary.json"), filepath.Join(root, "cal", "profile.toml"), filepath.Join(root, "p")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists after a refused output", p)
		}
	}

	// What kvsim wrote, or an empty file, is replaced; gen replaces an
	// existing trace only with --force.
	prof, html, cal := filepath.Join(root, "cpu.prof"), filepath.Join(root, "curve.html"), filepath.Join(root, "c.toml")
	for i := 0; i < 2; i++ {
		writeFile(t, root, "empty.jsonl", "")
		for _, args := range [][]string{
			append(run, "--out", out, "--cpuprofile", prof, "--memprofile", filepath.Join(root, "mem.prof"), scen),
			{"mrc", "--trace", trace, "--policies", "lru", "--sizes", "1", "--html", html},
			{"gen", "--requests", "5", "--out", filepath.Join(root, "empty.jsonl")},
			{"gen", "--requests", "5", "--force", "--out", filepath.Join(root, "g.jsonl")},
		} {
			if _, stderr, code := runKvsim(args...); code != 0 {
				t.Errorf("pass %d: %v: status %d: %s", i, args, code, stderr)
			}
		}
	}
	if _, stderr, code := runKvsim("gen", "--requests", "5", "--out", filepath.Join(root, "g.jsonl")); code != 2 || !strings.Contains(stderr, "pass --force") {
		t.Errorf("gen over its own earlier trace without --force: status %d: %s", code, stderr)
	}
	// A profile calibrate wrote is replaceable, by its first line.
	writeFile(t, root, "c.toml", "# kvsim hardware profile, written by kvsim calibrate for 65536-byte blocks.\n")
	if err := experiment.CheckReplace("calibrate: --out", cal, results.IsProfile, ""); err != nil {
		t.Errorf("calibrate's own profile refused: %v", err)
	}
}

// TestProfileNotTruncatedInPlace: a profile is written to a new file and
// renamed over the old one, so another name of the old file (a hard link)
// keeps its bytes; the old code truncated the file in place.
func TestProfileNotTruncatedInPlace(t *testing.T) {
	root := t.TempDir()
	scen, _ := smallRun(t, root, "s")
	keep := filepath.Join(root, "keep.prof")
	if _, stderr, code := runKvsim("run", "--quiet", "--out", filepath.Join(root, "a"), "--cpuprofile", keep, scen); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	before := reportReadFile(t, keep)
	link := filepath.Join(root, "link.prof")
	if err := os.Link(keep, link); err != nil {
		t.Skip("no hard links here:", err)
	}
	if _, stderr, code := runKvsim("run", "--quiet", "--out", filepath.Join(root, "b"), "--cpuprofile", link, scen); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if reportReadFile(t, keep) != before {
		t.Error("the profile was rewritten in place: the other name of the old file changed")
	}
	if !results.IsPprof(link) {
		t.Error("no profile at the new path")
	}
}

// TestResultSetStatesAfterKill builds each state a kill can leave in a
// results folder being rewritten by run B over run A (results.WriteSet's
// steps), plus the state the old order left (B's data beside A's page),
// and checks every reader: kvsim report renders a consistent set (a
// missing page too) and refuses a mixed one, naming the odd file; kvsim
// run warns of a mixed folder and replaces it with one consistent set.
func TestResultSetStatesAfterKill(t *testing.T) {
	root := t.TempDir()
	scen, _ := smallRun(t, root, "s")
	src := map[string]string{}
	for run, seed := range map[string]string{"A": "seed=1", "B": "seed=2"} {
		out := filepath.Join(root, run)
		if _, stderr, code := runKvsim("run", "--quiet", "--set", seed, "--out", out, scen); code != 0 {
			t.Fatalf("status %d: %s", code, stderr)
		}
		src[run] = filepath.Join(out, "s")
	}
	if checkOneSet(t, src["A"]) == checkOneSet(t, src["B"]) {
		t.Fatal("runs A and B share a run_id")
	}
	for _, c := range []struct {
		name              string
		summary, req, pge string // the run each file comes from, "" missing
		mixed             string // the file report names, "" for a consistent set
	}{
		{"before the commit", "A", "A", "A", ""},
		{"old page removed", "A", "A", "", ""},
		{"requests.csv renamed", "A", "B", "", "requests.csv"},
		{"summary.json renamed", "B", "B", "", ""},
		{"done", "B", "B", "B", ""},
		{"the old order's window", "B", "B", "A", "report.html"},
	} {
		mk := func() string {
			d := mkdirAll(t, filepath.Join(t.TempDir(), "s"))
			for f, run := range map[string]string{"summary.json": c.summary, "requests.csv": c.req, "report.html": c.pge} {
				if run != "" {
					writeFile(t, d, f, reportReadFile(t, filepath.Join(src[run], f)))
				}
			}
			return d
		}
		d := mk()
		_, stderr, code := runKvsim("report", "--quiet", d)
		switch {
		case c.mixed == "" && code != 0:
			t.Errorf("%s: report of a consistent set: status %d: %s", c.name, code, stderr)
		case c.mixed == "":
			checkOneSet(t, d)
		case code != 2 || !strings.Contains(stderr, filepath.Join(d, c.mixed)) || !strings.Contains(stderr, "two runs"):
			t.Errorf("%s: report: status %d, %q; want 2 naming %s", c.name, code, stderr, c.mixed)
		}
		d = mk()
		_, stderr, code = runKvsim("run", "--quiet", "--set", "seed=3", "--out", filepath.Dir(d), scen)
		if code != 0 {
			t.Fatalf("%s: run over it: status %d: %s", c.name, code, stderr)
		}
		if warned := strings.Contains(stderr, "come from different runs"); warned != (c.mixed != "") || warned && !strings.Contains(stderr, d) {
			t.Errorf("%s: run's stderr %q; want a warning naming the folder only for a mixed one", c.name, stderr)
		}
		checkOneSet(t, d)
	}
}
