package main

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"kvsim/internal/testenv"
)

// reportCLI runs kvsim in-process: stdout, stderr, exit status.
func reportCLI(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := exitCode(run(context.Background(), args, &out, &errb), &errb)
	return out.String(), errb.String(), code
}

// reportFixture copies report/testdata/NAME (summary.json, requests.csv)
// to dst.
func reportFixture(t *testing.T, name, dst string) {
	t.Helper()
	src := filepath.Join("..", "..", "report", "testdata", name)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func reportReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReportCommand(t *testing.T) {
	root := t.TempDir()
	reportFixture(t, "small", filepath.Join(root, "small"))
	reportFixture(t, "other", filepath.Join(root, "other"))
	dist := t.TempDir()
	if err := os.WriteFile(filepath.Join(dist, "echarts.min.js"), []byte("/* stand-in */"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A scenario folder: only its report.
	out, stderr, code := reportCLI("report", filepath.Join(root, "small"))
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	page := reportReadFile(t, filepath.Join(root, "small", "report.html"))
	if !strings.Contains(out, filepath.Join(root, "small", "report.html")) || !strings.Contains(page, "https://") {
		t.Errorf("no report written, or it does not load ECharts online without --assets:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(root, "index.html")); err == nil {
		t.Error("index.html written for a scenario folder")
	}

	// A results folder: every scenario's report plus the index, offline.
	_, stderr, code = reportCLI("report", "--quiet", "--assets", dist, root)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, p := range []string{"index.html", "assets/echarts.min.js", "small/report.html", "small/assets/echarts.min.js",
		"other/report.html", "other/assets/echarts.min.js"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("missing %s: %v", p, err)
		}
	}
	page = reportReadFile(t, filepath.Join(root, "small", "report.html"))
	if !strings.Contains(page, `<script src="assets/echarts.min.js">`) || strings.Contains(page, "https://") {
		t.Error("with --assets the report must load ECharts from assets/ only")
	}
	if !strings.Contains(page, "kvsim_ttft_cdf") {
		t.Error("requests.csv next to summary.json did not give a TTFT CDF")
	}
	index := reportReadFile(t, filepath.Join(root, "index.html"))
	for _, want := range []string{`href="small/report.html"`, `href="other/report.html"`, `<script src="assets/echarts.min.js">`} {
		if !strings.Contains(index, want) {
			t.Errorf("index.html lacks %s", want)
		}
	}

	// Re-rendering gives the same bytes.
	if _, stderr, code = reportCLI("report", "--quiet", "--assets", dist, root); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if again := reportReadFile(t, filepath.Join(root, "small", "report.html")); again != page {
		t.Error("a second render differs")
	}
	// Saved results of the batched engine re-render with their TPOT CDF,
	// batch composition and preemptions (the series travel in summary.json).
	reportFixture(t, "batched", filepath.Join(root, "batched"))
	if _, stderr, code = reportCLI("report", "--quiet", filepath.Join(root, "batched")); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	page = reportReadFile(t, filepath.Join(root, "batched", "report.html"))
	for _, id := range []string{"tpot_cdf", "batch_prefill", "batch_decode", "preemptions"} {
		if !strings.Contains(page, `id="kvsim_`+id+`"`) {
			t.Errorf("batched report lacks chart %s", id)
		}
	}
	if _, _, code := reportCLI("report", "-h"); code != 0 {
		t.Errorf("report -h: status %d", code)
	}
}

func TestReportBadInput(t *testing.T) {
	root := t.TempDir()
	reportFixture(t, "small", filepath.Join(root, "good"))
	bad := filepath.Join(root, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "summary.json"), []byte(`{"scenario": `), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string // in the one-line error
	}{
		{[]string{root}, filepath.Join(bad, "summary.json")},
		{[]string{bad}, filepath.Join(bad, "summary.json")},
		{[]string{filepath.Join(root, "nope")}, filepath.Join(root, "nope")},
		{[]string{empty}, "no summary.json"},
		{[]string{"--assets", empty, filepath.Join(root, "good")}, filepath.Join(empty, "echarts.min.js")},
		{nil, "no results folder"},
		{[]string{"--bogus", root}, "bogus"},
	} {
		_, stderr, code := reportCLI(append([]string{"report"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("report %v: status %d, stderr %q; want 2 and one line naming %q", c.args, code, stderr, c.want)
		}
	}
	// The bad folder stopped everything before any page was written.
	if _, err := os.Stat(filepath.Join(root, "good", "report.html")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a report was written although another summary was corrupt")
	}
	if _, err := os.Stat(filepath.Join(root, "index.html")); !errors.Is(err, os.ErrNotExist) {
		t.Error("index.html written although a summary was corrupt")
	}
}

// reportNeed skips the test when optional software is missing, unless
// KVSIM_REQUIRE_ALL (CI) makes that a failure.
func reportNeed(t *testing.T, format string, args ...any) {
	t.Helper()
	testenv.Missing(t, format, args...)
}

func chromiumPath() string {
	if p := os.Getenv("KVSIM_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return ""
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

func echartsDist() string {
	if d := os.Getenv("KVSIM_ECHARTS_DIST"); d != "" {
		return d
	}
	d, _ := filepath.Abs(filepath.Join("..", "..", "node_modules", "echarts", "dist"))
	return d
}

// chromiumRun runs Chromium on a local page with no network and returns
// what it printed.
func chromiumRun(t *testing.T, chromium string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, extra...)
	cmd := exec.CommandContext(ctx, chromium, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		e := errb.String()
		if len(e) > 2000 {
			e = e[len(e)-2000:]
		}
		t.Fatalf("%s %v: %v\n%s", chromium, extra, err, e)
	}
	return out.String()
}

// tipProbe, added before </body>, opens every chart's tooltip on its
// second point and copies the text to the chart element, so the dumped
// DOM shows whether the formatters ran.
const tipProbe = `<script>
document.querySelectorAll(".item").forEach(function (el) {
	try {
		echarts.getInstanceByDom(el).dispatchAction({type: "showTip", seriesIndex: 0, dataIndex: 1});
		el.setAttribute("data-kvsim-tip", el.textContent);
	} catch (e) {
		el.setAttribute("data-kvsim-tip-error", String(e));
	}
});
</script>
</body>`

var (
	chartsAttr = regexp.MustCompile(`data-kvsim-charts="(\d+)"`)
	tipAttr    = regexp.MustCompile(`data-kvsim-tip="([^"]*)"`)
	noECharts  = regexp.MustCompile(`<html[^>]* data-kvsim-no-echarts=`) // set when the banner shows
)

// checkDrawn loads page (with the tooltip probe) in Chromium and checks
// that every chart drew, with no script error; it returns the chart count.
func checkDrawn(t *testing.T, chromium, page string) int {
	t.Helper()
	html := reportReadFile(t, page)
	want := strings.Count(html, `class="item"`)
	probe := filepath.Join(filepath.Dir(page), ".probe-"+filepath.Base(page)) // same folder: same assets/
	if err := os.WriteFile(probe, []byte(strings.Replace(html, "</body>", tipProbe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probe)
	dom := chromiumRun(t, chromium, "--dump-dom", "file://"+probe)
	if i := strings.Index(dom, `data-kvsim-error="`); i >= 0 {
		t.Fatalf("%s: script error: %.300s", page, dom[i:])
	}
	if noECharts.MatchString(dom) || !strings.Contains(dom, `<div id="kvsim-no-echarts" hidden="">`) {
		t.Errorf("%s: ECharts loaded, yet the no-ECharts banner shows (or is missing)", page)
	}
	m := chartsAttr.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("%s: the page did not load (no data-kvsim-charts in the DOM)", page)
	}
	if n, _ := strconv.Atoi(m[1]); n != want || want == 0 {
		t.Fatalf("%s: page says %s charts, has %d chart elements", page, m[1], want)
	}
	if n := strings.Count(dom, "<canvas"); n != want {
		t.Errorf("%s: %d <canvas> elements, want one per chart (%d): ECharts did not draw", page, n, want)
	}
	if i := strings.Index(dom, `data-kvsim-tip-error="`); i >= 0 {
		t.Errorf("%s: a tooltip failed: %.200s", page, dom[i:])
	}
	tips := tipAttr.FindAllStringSubmatch(dom, -1)
	if len(tips) != want {
		t.Errorf("%s: %d tooltips shown, want %d", page, len(tips), want)
	}
	for _, tip := range tips {
		if !regexp.MustCompile(`: [0-9]`).MatchString(tip[1]) || strings.Contains(tip[1], "NaN") || strings.Contains(tip[1], "undefined") {
			t.Errorf("%s: tooltip %q lacks a value", page, tip[1])
		}
	}
	return want
}

// TestReportInBrowser renders the quickstart report offline and checks
// in headless Chromium that every chart draws, then screenshots it.
func TestReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	chromium := chromiumPath()
	if chromium == "" {
		reportNeed(t, "chromium not found (Debian: apt-get install chromium; or set KVSIM_CHROMIUM)")
	}
	dist := echartsDist()
	if _, err := os.Stat(filepath.Join(dist, "echarts.min.js")); err != nil {
		reportNeed(t, "ECharts 5 not found: %v (npm install --no-save echarts@5 at the repository root, or set KVSIM_ECHARTS_DIST to its dist folder)", err)
	}
	out := t.TempDir()
	if _, stderr, code := reportCLI("run", "--quiet", "--limit", "300", "--out", out, filepath.Join("..", "..", "scenarios", "quickstart.toml")); code != 0 {
		t.Fatalf("kvsim run: status %d: %s", code, stderr)
	}
	if _, stderr, code := reportCLI("report", "--quiet", "--assets", dist, out); code != 0 {
		t.Fatalf("kvsim report: status %d: %s", code, stderr)
	}
	page := filepath.Join(out, "quickstart", "report.html")
	n := checkDrawn(t, chromium, page)
	if n < 8 {
		t.Errorf("quickstart report has %d charts, want at least 8", n)
	}
	checkDrawn(t, chromium, filepath.Join(out, "index.html"))
	// The batched engine's charts (TPOT, E2E, batch composition,
	// preemptions) draw, from the report package's fixture.
	bat := filepath.Join(t.TempDir(), "batched")
	reportFixture(t, "batched", bat)
	if _, stderr, code := reportCLI("report", "--quiet", "--assets", dist, bat); code != 0 {
		t.Fatalf("kvsim report: status %d: %s", code, stderr)
	}
	html := reportReadFile(t, filepath.Join(bat, "report.html"))
	for _, id := range []string{"tpot_cdf", "tpot_quantiles", "e2e_quantiles", "batch_prefill", "batch_decode", "preemptions"} {
		if !strings.Contains(html, `id="kvsim_`+id+`"`) {
			t.Errorf("the batched fixture's report lacks chart %s", id)
		}
	}
	checkDrawn(t, chromium, filepath.Join(bat, "report.html"))
	// A sweep's index (its across-the-values charts) and a report with a
	// shared tier's pipe draw too.
	sw := t.TempDir()
	if _, stderr, code := reportCLI("sweep", "--limit", "200", "--assets", dist, "--out", sw, "--vary", "workload.speedup", "--values", "0.5,1",
		filepath.Join("..", "..", "scenarios", "ssd_contention.toml")); code != 0 {
		t.Fatalf("kvsim sweep: status %d: %s", code, stderr)
	}
	if html := reportReadFile(t, filepath.Join(sw, "index.html")); !strings.Contains(html, "across the sweep of workload.speedup") {
		t.Error("the sweep's index has no sweep charts")
	}
	checkDrawn(t, chromium, filepath.Join(sw, "index.html"))
	checkDrawn(t, chromium, filepath.Join(sw, "ssd_contention-workload.speedup-1", "report.html"))

	// Without ECharts (the page moved without its assets/ folder, or
	// offline with the default online script) the page says so.
	bare := t.TempDir()
	if err := os.WriteFile(filepath.Join(bare, "report.html"), []byte(reportReadFile(t, page)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromiumRun(t, chromium, "--dump-dom", "file://"+filepath.Join(bare, "report.html"))
	if !noECharts.MatchString(dom) || !strings.Contains(dom, `<div id="kvsim-no-echarts">`) ||
		strings.Contains(dom, "<canvas") {
		t.Errorf("a page without ECharts does not show the banner:\n%.600s", dom)
	}

	dir := os.Getenv("KVSIM_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot, err := filepath.Abs(filepath.Join(dir, "report-quickstart.png"))
	if err != nil {
		t.Fatal(err)
	}
	chromiumRun(t, chromium, "--screenshot="+shot, "--window-size=1400,900", "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", shot, err)
	}
	// A drawn report has many colours; a blank or error page a handful.
	colours := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if b.Dx() != 1400 || b.Dy() != 900 || len(colours) < 50 {
		t.Errorf("%s: %dx%d with %d colours: not a drawn report", shot, b.Dx(), b.Dy(), len(colours))
	}
	t.Logf("screenshot: %s", shot)
}

// TestReportRerenderSame: kvsim report re-renders from saved results the
// page kvsim run wrote from memory, byte for byte: TPOT, E2E, the SLO and
// the batch series all travel in summary.json and requests.csv.
func TestReportRerenderSame(t *testing.T) {
	out := t.TempDir()
	if _, stderr, code := reportCLI("run", "--quiet", "--limit", "200", "--out", out, "--set", "slo.ttft_ms=100", "--set", "slo.tpot_ms=20",
		filepath.Join("..", "..", "scenarios", "quickstart.toml")); code != 0 {
		t.Fatalf("kvsim run: status %d: %s", code, stderr)
	}
	page := filepath.Join(out, "quickstart", "report.html")
	ran := reportReadFile(t, page)
	for _, want := range []string{"kvsim_tpot_cdf", "kvsim_tpot_quantiles", "kvsim_batch_decode", "<th>SLO met</th>"} {
		if !strings.Contains(ran, want) {
			t.Errorf("kvsim run's report lacks %s", want)
		}
	}
	if _, stderr, code := reportCLI("report", "--quiet", filepath.Join(out, "quickstart")); code != 0 {
		t.Fatalf("kvsim report: status %d: %s", code, stderr)
	}
	if again := reportReadFile(t, page); again != ran {
		t.Error("kvsim report's page differs from kvsim run's")
	}
}

// TestReportRerenderSameCluster: kvsim report re-renders a cluster run's
// page, per-instance view included (and a pooled cluster's NIC charts and
// split of the pool's hits), byte for byte from the saved files.
func TestReportRerenderSameCluster(t *testing.T) {
	for _, tc := range []struct {
		name string
		more []string
	}{
		{"cluster_routers", nil},
		{"cluster_pool", []string{"kvsim_nic_send", "kvsim_nic_recv", "<th>from pool (other node)</th>", "Pool: tier &#34;pool&#34; is shared by the nodes"}},
	} {
		out := t.TempDir()
		if _, stderr, code := reportCLI("run", "--quiet", "--limit", "60", "--out", out,
			filepath.Join("..", "..", "scenarios", tc.name+".toml")); code != 0 {
			t.Fatalf("%s: kvsim run: status %d: %s", tc.name, code, stderr)
		}
		page := filepath.Join(out, tc.name, "report.html")
		ran := reportReadFile(t, page)
		for _, want := range append([]string{"kvsim_instance_requests", "kvsim_instance_hit_ratio", "<th>best-prefix share</th>",
			"<p><b>Policy lru, per instance</b></p>", "<p><b>Policy s3fifo, per instance</b></p>"}, tc.more...) {
			if !strings.Contains(ran, want) {
				t.Errorf("%s: kvsim run's report lacks %s", tc.name, want)
			}
		}
		if err := os.Remove(page); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := reportCLI("report", "--quiet", filepath.Join(out, tc.name)); code != 0 {
			t.Fatalf("%s: kvsim report: status %d: %s", tc.name, code, stderr)
		}
		if again := reportReadFile(t, page); again != ran {
			t.Errorf("%s: kvsim report's page differs from kvsim run's", tc.name)
		}
	}
}
