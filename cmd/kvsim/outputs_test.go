package main

import (
	"context"
	"encoding/csv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"kvsim/results"
)

const quickstart = "../../scenarios/quickstart.toml"

// tempName matches the temporary files kvsim writes through: an error
// must name the user's path, never one of these.
var tempName = regexp.MustCompile(`\.tmp[0-9]|\.kvsim-probe-|\.(summary\.json|report\.html|requests\.csv|index\.html)\.[0-9]`)

// TestOutputPathsBadInput: every output path flag of every command is
// checked before any work: a path that cannot be written is bad input
// (exit 2) named as the user gave it, and nothing is simulated, measured
// or created.
func TestOutputPathsBadInput(t *testing.T) {
	root := t.TempDir()
	file := writeFile(t, root, "afile", "keep")
	dir := filepath.Join(root, "adir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(root, "nodir", "x")
	// out/quickstart is a file; out2/quickstart/summary.json and
	// out3/index.html folders; out4/quickstart/assets a file.
	mk := func(p string, isDir bool) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if isDir {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(root, "out1", "quickstart"), false)
	mk(filepath.Join(root, "out2", "quickstart", "summary.json"), true)
	mk(filepath.Join(root, "out3", "index.html"), true)
	mk(filepath.Join(root, "out4", "quickstart", "assets"), false)
	mk(filepath.Join(root, "out5", "quickstart-seed-2"), false)
	q := strings.Replace(reportReadFile(t, quickstart), `name = "quickstart"`, `name = "second"`, 1)
	second := writeFile(t, root, "second.toml", strings.ReplaceAll(q, "../traces/", mustAbs(t, "../../traces")+"/"))
	assets := filepath.Join(root, "dist")
	writeFile(t, mkdirAll(t, assets), "echarts.min.js", "var echarts = {};")
	// A results folder whose report.html is a folder.
	rep := filepath.Join(root, "rep")
	reportFixture(t, "small", rep)
	mk(filepath.Join(rep, "report.html"), true)
	// A named pipe and a symbolic link to the user's file, which a rename
	// would replace (as root, --out /dev/null replaced the device).
	fifo := filepath.Join(root, "fifo")
	mkfifo(t, fifo)
	link := filepath.Join(root, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	run := []string{"run", "--quiet", "--limit", "20"}
	for _, c := range []struct {
		args []string
		path string // the user's path, which the message must hold
	}{
		{append(run, "--out", file, quickstart), file},
		{append(run, "--out", filepath.Join(file, "sub"), quickstart), filepath.Join(file, "sub")},
		{append(run, "--out", filepath.Join(root, "out1"), quickstart), filepath.Join(root, "out1", "quickstart")},
		{append(run, "--out", filepath.Join(root, "out2"), quickstart), filepath.Join(root, "out2", "quickstart", "summary.json")},
		{append(run, "--out", filepath.Join(root, "out3"), quickstart, second), filepath.Join(root, "out3", "index.html")},
		{append(run, "--out", filepath.Join(root, "out4"), "--assets", assets, quickstart), filepath.Join(root, "out4", "quickstart", "assets")},
		{append(run, "--out", filepath.Join(root, "o5"), "--cpuprofile", dir, quickstart), dir},
		{append(run, "--out", filepath.Join(root, "o6"), "--memprofile", missing, quickstart), missing},
		{[]string{"sweep", "--out", file, "--vary", "workload.speedup", "--values", "1,2", quickstart}, file},
		{[]string{"sweep", "--out", filepath.Join(root, "out5"), "--vary", "seed", "--values", "1,2", quickstart}, filepath.Join(root, "out5", "quickstart-seed-2")},
		{[]string{"gen", "--requests", "5", "--out", dir}, dir},
		{[]string{"gen", "--requests", "5", "--out", missing}, missing},
		{[]string{"calibrate", "--dir", filepath.Join(root, "cal"), "--out", dir}, dir},
		{[]string{"calibrate", "--dir", filepath.Join(root, "cal"), "--out", missing}, missing},
		{[]string{"calibrate", "--dir", file}, file},
		{[]string{"report", rep}, filepath.Join(rep, "report.html")},
		{[]string{"iobench", "--file", dir, "--size", "1MiB"}, dir},
		{[]string{"iobench", "--file", missing, "--size", "1MiB"}, missing},
		{[]string{"iobench", "--file", os.DevNull, "--size", "1MiB"}, os.DevNull},
		{[]string{"gen", "--requests", "5", "--out", fifo}, fifo},
		{[]string{"gen", "--requests", "5", "--out", link}, link},
		{[]string{"calibrate", "--dir", filepath.Join(root, "cal"), "--out", link}, link},
		{append(run, "--out", filepath.Join(root, "o7"), "--memprofile", link, quickstart), link},
		{[]string{"mrc", "--trace", "../../traces/synthetic.jsonl", "--policies", "lru", "--sizes", "10", "--html", fifo}, fifo},
	} {
		stdout, stderr, code := runKvsim(c.args...)
		if code != 2 || !strings.Contains(stderr, c.path) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: status %d, stderr %q; want 2 and one line naming %s", c.args, code, stderr, c.path)
		}
		if tempName.MatchString(stderr) {
			t.Errorf("%v: the message names a temporary file: %s", c.args, stderr)
		}
		if stdout != "" {
			t.Errorf("%v: printed %q", c.args, stdout)
		}
	}
	// Nothing was simulated or measured: no results, no calibration folder,
	// no file where the user's was missing, and the user's file untouched.
	for _, p := range []string{filepath.Join(root, "o5", "quickstart", "summary.json"), filepath.Join(root, "o6", "quickstart", "summary.json"),
		filepath.Join(root, "out3", "quickstart", "summary.json"), filepath.Join(root, "out4", "quickstart", "summary.json"),
		filepath.Join(root, "out5", "quickstart-seed-1", "summary.json"),
		filepath.Join(root, "cal"), filepath.Join(root, "nodir")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists after a bad output path", p)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("%s changed: %q", file, b)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().IsRegular() {
		t.Errorf("%s was replaced by a file: %v", fifo, err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symbolic link: %v", link, err)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if tempName.MatchString(e.Name()) {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mkdirAll(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// holdLock takes dir's results lock as another kvsim would.
func holdLock(t *testing.T, dir string) func() {
	t.Helper()
	mkdirAll(t, dir)
	_, unlock, err := results.LockAll(context.Background(), []string{dir}, false)
	if err != nil {
		t.Fatal(err)
	}
	return unlock
}

// TestResultsFolderLocked: while another kvsim writes a results folder, a
// run, a sweep or a report of that folder fails at once (exit 2, naming
// the folder) and writes nothing; with --wait it waits, then runs.
func TestResultsFolderLocked(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "quickstart")
	unlock := holdLock(t, dir)
	_, stderr, code := runKvsim("run", "--quiet", "--limit", "20", "--out", out, quickstart)
	if code != 2 || !strings.Contains(stderr, dir) || !strings.Contains(stderr, "in use by another kvsim") {
		t.Errorf("run into a locked folder: status %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		t.Error("the second run wrote summary.json into a locked folder")
	}
	sweepDir := filepath.Join(out, "quickstart-seed-2")
	unlockSweep := holdLock(t, sweepDir)
	_, stderr, code = runKvsim("sweep", "--limit", "20", "--out", out, "--vary", "seed", "--values", "1,2", quickstart)
	if code != 2 || !strings.Contains(stderr, sweepDir) {
		t.Errorf("sweep into a locked folder: status %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "quickstart-seed-1", "summary.json")); err == nil {
		t.Error("the sweep simulated a point before finding another locked")
	}
	unlockSweep()

	// --wait: the run cannot finish while the lock is held, and does once
	// it is released.
	done := make(chan string)
	go func() {
		_, stderr, code := runKvsim("run", "--quiet", "--wait", "--limit", "20", "--out", out, quickstart)
		if code != 0 {
			done <- stderr
		}
		close(done)
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("run --wait finished while another kvsim held the folder")
	default:
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		t.Error("run --wait wrote before the lock was free")
	}
	unlock()
	if msg, ok := <-done; ok {
		t.Fatalf("run --wait: %s", msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		t.Error(err)
	}

	// report re-renders: the same lock.
	unlock = holdLock(t, dir)
	defer unlock()
	before := reportReadFile(t, filepath.Join(dir, "report.html"))
	os.Remove(filepath.Join(dir, "report.html"))
	_, stderr, code = runKvsim("report", dir)
	if code != 2 || !strings.Contains(stderr, dir) || !strings.Contains(stderr, "in use") {
		t.Errorf("report of a locked folder: status %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
		t.Error("report wrote into a locked folder")
	}
	_ = before
}

// TestConcurrentRuns: two runs of different inputs into one folder at
// once: one succeeds and the other is refused (or, if they did not
// overlap, both succeed one after the other), and the folder holds one
// run's set; with --wait both succeed, one after the other.
func TestConcurrentRuns(t *testing.T) {
	for _, wait := range []bool{false, true} {
		out := t.TempDir()
		type res struct {
			code   int
			stderr string
		}
		ch := make(chan res, 2)
		for _, seed := range []string{"seed=1", "seed=2"} {
			go func() {
				args := []string{"run", "--quiet", "--set", seed, "--out", out, quickstart}
				if wait {
					args = append(args, "--wait")
				}
				_, stderr, code := runKvsim(args...)
				ch <- res{code, stderr}
			}()
		}
		a, b := <-ch, <-ch
		if a.code > b.code {
			a, b = b, a
		}
		if a.code != 0 || b.code != 0 && (wait || b.code != 2 || !strings.Contains(b.stderr, "in use by another kvsim")) {
			t.Fatalf("--wait=%v: statuses %d and %d: %s%s", wait, a.code, b.code, a.stderr, b.stderr)
		}
		checkOneSet(t, filepath.Join(out, "quickstart"))
	}
}

// checkOneSet checks that summary.json, requests.csv and report.html of
// dir carry one run_id.
func checkOneSet(t *testing.T, dir string) string {
	t.Helper()
	s, err := results.ReadSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.RunID) != 16 {
		t.Fatalf("summary.json run_id %q", s.RunID)
	}
	f, err := os.Open(filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	hdr, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(hdr, "run_id")
	if col < 0 {
		t.Fatalf("requests.csv has no run_id column: %v", hdr)
	}
	rows := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec[col] != s.RunID {
			t.Fatalf("requests.csv row %d: run_id %q, summary.json %q", rows+1, rec[col], s.RunID)
		}
		rows++
	}
	if rows == 0 {
		t.Fatal("requests.csv has no rows")
	}
	if h := reportReadFile(t, filepath.Join(dir, "report.html")); !strings.Contains(h, `<meta name="kvsim-run-id" content="`+s.RunID+`">`) {
		t.Errorf("report.html lacks the run_id %s", s.RunID)
	}
	return s.RunID
}

// TestStaleTempsRemoved: temporary files a killed run left in the results
// folder are removed by the next run; files not of kvsim's naming, and
// anything outside the folder it locked, are left alone.
func TestStaleTempsRemoved(t *testing.T) {
	out := t.TempDir()
	dir := mkdirAll(t, filepath.Join(out, "quickstart"))
	stale := []string{".requests-123456.csv", ".requests.csv.42", ".summary.json.7", ".report.html.99", ".kvsim-probe-5"}
	keep := []string{".requests-notes.csv", ".requests-12.csv.bak", "notes.txt", ".summary.json.old", ".report.html.", "requests-3.csv"}
	for _, n := range append(slices.Clone(stale), keep...) {
		writeFile(t, dir, n, "x")
	}
	mkdirAll(t, filepath.Join(dir, ".requests-77.csv")) // a folder: not ours
	writeFile(t, mkdirAll(t, filepath.Join(dir, "assets")), ".echarts.min.js.31", "x")
	writeFile(t, out, ".requests-555.csv", "x") // outside the locked folder
	if _, stderr, code := runKvsim("run", "--quiet", "--limit", "20", "--out", out, quickstart); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, n := range append(stale, "assets/.echarts.min.js.31") {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("stale %s left", n)
		}
	}
	for _, n := range append(keep, ".requests-77.csv") {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s (not kvsim's temporary file) removed: %v", n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, ".requests-555.csv")); err != nil {
		t.Errorf("a file outside the locked folder was removed: %v", err)
	}
}

// TestRunID: every file of a run carries one run_id, a hash of the
// inputs: the same for the same inputs (even copied elsewhere), different
// when the scenario, an override, the options or the trace's content
// differ.
func TestRunID(t *testing.T) {
	root := t.TempDir()
	scen := func(dir, traceBody string) string {
		mkdirAll(t, dir)
		tr := writeFile(t, dir, "t.jsonl", traceBody)
		return writeFile(t, dir, "s.toml", scenarioTOML("s", tr, "40GiB", "256GiB", "lru", "fifo"))
	}
	body := reportReadFile(t, "../../traces/synthetic.jsonl")
	lines := strings.SplitAfter(body, "\n")[:200]
	body = strings.Join(lines, "")
	id := func(p string, extra ...string) string {
		t.Helper()
		out := t.TempDir()
		if _, stderr, code := runKvsim(append([]string{"run", "--quiet", "--out", out, p}, extra...)...); code != 0 {
			t.Fatalf("status %d: %s", code, stderr)
		}
		return checkOneSet(t, filepath.Join(out, "s"))
	}
	a := scen(filepath.Join(root, "a"), body)
	base := id(a)
	if again := id(a); again != base {
		t.Errorf("same inputs, run_ids %s and %s", base, again)
	}
	if elsewhere := id(scen(filepath.Join(root, "b", "c"), body)); elsewhere != base {
		t.Errorf("the same scenario and trace in another folder: run_id %s, want %s", elsewhere, base)
	}
	// A trace that differs in one arrival time only.
	changed := strings.Replace(body, `"timestamp": 209,`, `"timestamp": 210,`, 1)
	if changed == body {
		t.Fatal("the trace's second line changed; pick another to alter")
	}
	differ := map[string]string{
		"seed":          id(a, "--set", "seed=2"),
		"gpu":           id(a, "--set", "gpu.prefill_tokens_per_s=50000"),
		"limit":         id(a, "--limit", "100"),
		"trace content": id(scen(filepath.Join(root, "d"), changed)),
	}
	for what, got := range differ {
		if got == base {
			t.Errorf("%s changed, run_id did not (%s)", what, got)
		}
	}
}

// TestReportRefusesMixedFolder: a folder whose requests.csv or
// report.html comes from another run than its summary.json is refused
// (exit 2) and nothing is written, alone or under an index.
func TestReportRefusesMixedFolder(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for dir, seed := range map[string]string{a: "seed=1", b: "seed=2"} {
		if _, stderr, code := runKvsim("run", "--quiet", "--limit", "50", "--set", seed, "--out", dir, quickstart); code != 0 {
			t.Fatalf("status %d: %s", code, stderr)
		}
	}
	if _, stderr, code := runKvsim("report", "--quiet", filepath.Join(a, "quickstart")); code != 0 {
		t.Fatalf("report of a consistent folder: status %d: %s", code, stderr)
	}
	mixed := filepath.Join(a, "quickstart")
	csvB := reportReadFile(t, filepath.Join(b, "quickstart", "requests.csv"))
	if err := os.WriteFile(filepath.Join(mixed, "requests.csv"), []byte(csvB), 0o644); err != nil {
		t.Fatal(err)
	}
	page := reportReadFile(t, filepath.Join(mixed, "report.html"))
	for _, dir := range []string{mixed, a} {
		_, stderr, code := runKvsim("report", dir)
		if code != 2 || !strings.Contains(stderr, filepath.Join(mixed, "requests.csv")) || !strings.Contains(stderr, "two runs") {
			t.Errorf("report %s: status %d, %q; want 2 naming the mixed requests.csv", dir, code, stderr)
		}
	}
	if reportReadFile(t, filepath.Join(mixed, "report.html")) != page {
		t.Error("report rewrote report.html of a mixed folder")
	}
	if _, err := os.Stat(filepath.Join(a, "index.html")); err == nil {
		t.Error("report wrote an index over a mixed folder")
	}
	// The same for a report.html of another run beside a consistent pair
	// (what a run killed between its renames left before the set was
	// written in order): the page is named and left as it was.
	reqB := reportReadFile(t, filepath.Join(b, "quickstart", "requests.csv"))
	sumB := reportReadFile(t, filepath.Join(b, "quickstart", "summary.json"))
	for f, body := range map[string]string{"requests.csv": reqB, "summary.json": sumB, "report.html": page} {
		if err := os.WriteFile(filepath.Join(mixed, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{mixed, a} {
		_, stderr, code := runKvsim("report", dir)
		if code != 2 || !strings.Contains(stderr, filepath.Join(mixed, "report.html")) || !strings.Contains(stderr, "two runs") {
			t.Errorf("report %s: status %d, %q; want 2 naming the report.html of another run", dir, code, stderr)
		}
	}
	if reportReadFile(t, filepath.Join(mixed, "report.html")) != page {
		t.Error("report rewrote the report.html of another run")
	}
	// Results of an older kvsim (no run_id at all) still render.
	old := filepath.Join(root, "old")
	reportFixture(t, "small", old)
	if _, stderr, code := runKvsim("report", "--quiet", old); code != 0 {
		t.Errorf("results without run_id: status %d: %s", code, stderr)
	}
}

// TestSweepQuiet: --quiet prints nothing and still writes every point and
// the index.
func TestSweepQuiet(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := runKvsim("sweep", "--quiet", "--limit", "20", "--out", out, "--vary", "seed", "--values", "1,2", quickstart)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("status %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, p := range []string{"index.html", "quickstart-seed-1/summary.json", "quickstart-seed-2/report.html"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Error(err)
		}
	}
	// One value twice would write one folder twice.
	if _, stderr, code := runKvsim("sweep", "--quiet", "--limit", "20", "--out", out, "--vary", "seed", "--values", "1,2,1", quickstart); code != 2 ||
		!strings.Contains(stderr, `values "1" and "1" both write `+filepath.Join(out, "quickstart-seed-1")) {
		t.Errorf("a repeated value: status %d, %q", code, stderr)
	}
}

// TestReportSweepOrder: kvsim report of a sweep's folder orders the swept
// values by value (sizes by bytes, numbers numerically), not by folder
// name, in the index table and its charts.
func TestReportSweepOrder(t *testing.T) {
	out := t.TempDir()
	if _, stderr, code := runKvsim("sweep", "--quiet", "--limit", "20", "--out", out, "--tier", "host", "--capacities", "128GiB,32GiB,1TiB,64GiB",
		quickstart); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, args := range [][]string{nil, {"report", "--quiet", out}} {
		if args != nil {
			os.Remove(filepath.Join(out, "index.html"))
			if _, stderr, code := runKvsim(args...); code != 0 {
				t.Fatalf("report: status %d: %s", code, stderr)
			}
		}
		h := reportReadFile(t, filepath.Join(out, "index.html"))
		if !strings.Contains(h, `["32GiB","64GiB","128GiB","1TiB"]`) {
			t.Errorf("%v: the sweep charts' axis is not in size order", args)
		}
		last := -1
		for _, v := range []string{"32GiB", "64GiB", "128GiB", "1TiB"} {
			i := strings.Index(h, `href="quickstart-host-`+v+`/report.html"`)
			if i < last {
				t.Errorf("%v: %s out of order in the index table", args, v)
			}
			last = i
		}
	}
}

// TestIndexLocked: DIR/index.html, which every run of several scenarios,
// sweep and report into DIR writes, is written under DIR's own lock: while
// another kvsim holds it the page waits (and the run with it), then is
// written; and the temporary files a killed writer left in DIR and
// DIR/assets are removed then, anything else left alone.
func TestIndexLocked(t *testing.T) {
	out := t.TempDir()
	stale := []string{".index.html.123", filepath.Join("assets", ".echarts.min.js.77")}
	keep := []string{".index.html.bak", "index.html.old", "notes.txt"}
	mkdirAll(t, filepath.Join(out, "assets"))
	for _, n := range append(slices.Clone(stale), keep...) {
		writeFile(t, out, n, "x")
	}
	unlock := holdLock(t, out)
	done := make(chan string)
	go func() {
		_, stderr, code := runKvsim("run", "--quiet", "--limit", "20", "--out", out, "--set", "seed=1", quickstart, "../../scenarios/hbm_only.toml")
		if code != 0 {
			done <- stderr
		}
		close(done)
	}()
	time.Sleep(2 * time.Second) // the two scenarios simulate, then wait for the index
	select {
	case msg := <-done:
		t.Fatalf("the run finished while another kvsim held %s: %s", out, msg)
	default:
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err == nil {
		t.Fatal("index.html written while another kvsim held the folder")
	}
	unlock()
	if msg, ok := <-done; ok {
		t.Fatalf("run: %s", msg)
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Error(err)
	}
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(out, n)); err == nil {
			t.Errorf("stale %s left", n)
		}
	}
	for _, n := range keep {
		if _, err := os.Stat(filepath.Join(out, n)); err != nil {
			t.Errorf("%s (not kvsim's temporary file) removed: %v", n, err)
		}
	}
}
