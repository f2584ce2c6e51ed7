package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"kvsim/internal/golden"
	"kvsim/results"
)

func load(t *testing.T, name string) *results.Summary {
	t.Helper()
	s, err := results.ReadSummary(filepath.Join("testdata", name, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lats(t *testing.T, name string, s *results.Summary) *latencies {
	t.Helper()
	m, err := readLatencies(context.Background(), filepath.Join("testdata", name, "requests.csv"), s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var testCurves = []Curve{
	{Policy: "lru", SizeBlocks: []int{10, 100, 1000}, MissRatio: []float64{0.9, 0.5, 0.125}},
	{Policy: "s3fifo", SizeBlocks: []int{10, 100, 1000}, MissRatio: []float64{0.875, 0.4375, 0.1}},
}

// goldenCharts compares the charts' data with testdata/NAME.golden.
func goldenCharts(t *testing.T, name string, cs []chart) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "->" and "≤" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(cs); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", name+".golden"), buf.Bytes())
}

func TestGoldenScenario(t *testing.T) {
	s := load(t, "small")
	goldenCharts(t, "scenario", scenarioCharts(s, lats(t, "small", s)))
}

// TestGoldenBatched pins the charts of the batched engine's metrics (TPOT,
// E2E, batch composition, preemptions) on a hand-written fixture.
func TestGoldenBatched(t *testing.T) {
	s := load(t, "batched")
	goldenCharts(t, "batched", scenarioCharts(s, lats(t, "batched", s)))
}

func TestGoldenIndex(t *testing.T) {
	goldenCharts(t, "index", indexCharts([]*results.Summary{load(t, "small"), load(t, "other")}))
}

func TestGoldenMRC(t *testing.T) {
	goldenCharts(t, "mrc", []chart{mrcChart("Miss-ratio curves: fixture", testCurves)})
}

// The numbers the golden file pins, checked by hand once.
func TestHitChartAddsUp(t *testing.T) {
	c := hitChart(load(t, "small"))
	names := []string{}
	for _, s := range c.Series {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "hbm,dram,recomputed" {
		t.Fatalf("series %v, want tiers in hierarchy order then recomputed", names)
	}
	for i, pol := range c.Categories {
		sum := 0.0
		for _, s := range c.Series {
			sum += s.Values[i]
		}
		if math.Abs(sum-100) > 1e-9 {
			t.Errorf("%s: stacks to %v %%, want 100", pol, sum)
		}
	}
	if got := c.Series[0].Values[0]; got != 22.5 { // lru: 9 of 40 from hbm
		t.Errorf("lru hbm share %v, want 22.5", got)
	}
	if got := c.Series[2].Detail[1]; got != 28 { // fifo: 40 - 7 - 5
		t.Errorf("fifo recomputed blocks %v, want 28", got)
	}
}

func TestCDF(t *testing.T) {
	x, y := cdf([]float64{3, 1, 2}, 500)
	if want := []float64{1, 2, 3}; !equal(x, want) {
		t.Errorf("x %v, want %v", x, want)
	}
	if y[2] != 100 {
		t.Errorf("last y %v, want 100", y[2])
	}
	v := make([]float64, 12345)
	for i := range v {
		v[i] = float64((i * 7919) % 12345) // a permutation of 0..12344
	}
	x, y = cdf(v, 500)
	if len(x) != 500 || len(y) != 500 {
		t.Fatalf("%d points, want 500", len(x))
	}
	if x[0] != minLogTTFTms || x[499] != 12344 || y[499] != 100 {
		t.Errorf("ends (%v,%v) (%v,%v): want the min (clamped for the log axis) and the max at 100%%", x[0], y[0], x[499], y[499])
	}
	for i := 1; i < len(x); i++ {
		if x[i] < x[i-1] || y[i] <= y[i-1] {
			t.Fatalf("not increasing at %d", i)
		}
	}
	x2, _ := cdf(v, 500)
	if !equal(x, x2) {
		t.Error("two downsamplings differ")
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRejectedLeftOutOfCDF(t *testing.T) {
	s := load(t, "small")
	m := lats(t, "small", s).TTFT
	if len(m["lru"]) != 3 || len(m["fifo"]) != 4 {
		t.Errorf("TTFTs per policy lru %d fifo %d, want 3 and 4 (one lru request rejected)", len(m["lru"]), len(m["fifo"]))
	}
	if _, ok := ttftCDFChart(s, nil); ok {
		t.Error("a CDF without requests.csv")
	}
	var b bytes.Buffer
	if err := Scenario(&b, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "kvsim_ttft_cdf") || !strings.Contains(b.String(), "No requests.csv") {
		t.Error("Scenario without requests.csv should leave the CDF out and say so")
	}
}

var idPat = regexp.MustCompile(`^[a-z0-9_]+$`)

// Every chart is labelled, and its tooltip text survives go-echarts'
// JSON round trip (no quotes or backslashes).
func TestChartsLabelled(t *testing.T) {
	s := load(t, "small")
	b := load(t, "batched")
	cl := load(t, "cluster")
	all := [][]chart{scenarioCharts(s, lats(t, "small", s)), scenarioCharts(b, lats(t, "batched", b)), scenarioCharts(cl, nil),
		indexCharts([]*results.Summary{s, b}),
		indexCharts([]*results.Summary{s, load(t, "other")}), {mrcChart("t", testCurves)}}
	for _, cs := range all {
		seen := map[string]bool{}
		for _, c := range cs {
			if !idPat.MatchString(c.ID) || seen[c.ID] {
				t.Errorf("chart id %q: must be unique and [a-z0-9_]", c.ID)
			}
			seen[c.ID] = true
			if c.Title == "" || c.XName == "" || c.YName == "" || len(c.Series) == 0 {
				t.Errorf("%s: title %q, axes %q/%q, %d series", c.ID, c.Title, c.XName, c.YName, len(c.Series))
			}
			if !strings.Contains(c.XName+c.YName, "(") && c.Kind != kindBar && c.Kind != kindHBar {
				t.Errorf("%s: no unit in the axis names %q / %q", c.ID, c.XName, c.YName)
			}
			for _, u := range []string{c.Unit, c.XUnit, c.DetailUnit} {
				if jsSafe.Replace(u) != u {
					t.Errorf("%s: unit %q holds a quote or backslash", c.ID, u)
				}
			}
		}
	}
}

func renderPage(t *testing.T, f func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := f(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestDeterministic(t *testing.T) {
	dir := filepath.Join("testdata", "small")
	a := renderPage(t, func(b *bytes.Buffer) error { return ScenarioFromDir(b, dir, Options{}) })
	for range 5 { // map order differs from run to run
		if b := renderPage(t, func(b *bytes.Buffer) error { return ScenarioFromDir(b, dir, Options{}) }); a != b {
			t.Fatal("two renders of the same results differ")
		}
	}
	ss := []*results.Summary{load(t, "small"), load(t, "other")}
	x := renderPage(t, func(b *bytes.Buffer) error { return Index(b, ss, Options{}) })
	if y := renderPage(t, func(b *bytes.Buffer) error { return Index(b, ss, Options{}) }); x != y {
		t.Fatal("two renders of the same index differ")
	}
}

// The page holds one chart element and one init script per chart, with
// our IDs, animation off and a tooltip formatter.
func TestPageStructure(t *testing.T) {
	s := load(t, "small")
	cs := scenarioCharts(s, lats(t, "small", s))
	h := renderPage(t, func(b *bytes.Buffer) error { return ScenarioFromDir(b, filepath.Join("testdata", "small"), Options{}) })
	if n := strings.Count(h, `class="item"`); n != len(cs) {
		t.Errorf("%d chart elements, want %d", n, len(cs))
	}
	if !strings.Contains(h, `data-kvsim-charts="`+itoa(int64(len(cs)))+`"`) {
		t.Error("no data-kvsim-charts attribute with the chart count")
	}
	for _, c := range cs {
		if !strings.Contains(h, `id="kvsim_`+c.ID+`"`) || !strings.Contains(h, "goecharts_kvsim_"+c.ID+".setOption") {
			t.Errorf("chart %s: element or script missing", c.ID)
		}
	}
	opts := strings.Split(h, "let option_kvsim_")[1:]
	if len(opts) != len(cs) {
		t.Errorf("%d chart options, want %d", len(opts), len(cs))
	}
	for _, o := range opts {
		if o, _, _ = strings.Cut(o, "\n"); !strings.Contains(o, `"animation":false`) {
			t.Errorf("animation on in %.40s", o)
		}
	}
	if n := strings.Count(h, `"formatter":function`); n != len(cs) {
		t.Errorf("%d tooltip formatters, want %d", n, len(cs))
	}
	if strings.Contains(h, "__f__") || strings.Contains(h, "let option_kvsim_hit_ratio = ;") {
		t.Error("a chart option did not render")
	}
	for _, want := range []string{"kvsim report: scenario small", "hand-written test fixture", "4 requests, 40 block accesses", "37.50 %"} {
		if !strings.Contains(h, want) {
			t.Errorf("header lacks %q", want)
		}
	}
}

func TestAssets(t *testing.T) {
	s := load(t, "other")
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, `<script src="` + DefaultAssetsHost + `echarts.min.js"></script>`},
		{Options{AssetsHost: "assets/"}, `<script src="assets/echarts.min.js"></script>`},
		{Options{AssetsHost: "../assets"}, `<script src="../assets/echarts.min.js"></script>`},
	} {
		h := renderPage(t, func(b *bytes.Buffer) error { return Scenario(b, s, c.o) })
		if !strings.Contains(h, c.want) {
			t.Errorf("%+v: page lacks %s", c.o, c.want)
		}
	}
	h := renderPage(t, func(b *bytes.Buffer) error {
		return Scenario(b, s, Options{Inline: []byte(`var echarts = {}; var s = "</script><!--";`)})
	})
	if strings.Contains(h, "<script src=") || !strings.Contains(h, `var echarts = {}; var s = "<\/script><\!--";`) {
		t.Error("inlined script not embedded, or able to close its <script> element")
	}
}

// Names from user files cannot break out of the page's scripts or markup.
func TestHostileNames(t *testing.T) {
	s := load(t, "other")
	s.Scenario = `x</script><script>alert(1)</script>`
	s.Policies[0].Name = `<img src=x onerror=alert(2)>'"\`
	h := renderPage(t, func(b *bytes.Buffer) error { return Scenario(b, s, Options{}) })
	cs := scenarioCharts(s, nil)
	// Ours: the error hook, ECharts, the banner's check, one per chart.
	if n, want := strings.Count(h, "</script>"), 3+len(cs); n != want {
		t.Errorf("%d </script> tags, want %d", n, want)
	}
	markup := regexp.MustCompile(`(?s)<script[^>]*>.*?</script>`).ReplaceAllString(h, "")
	if strings.Contains(markup, "<img src=x") {
		t.Error("a policy name became markup")
	}
}

// go-echarts drops a chart's whole option on a JSON error (NaN): we must
// not hand it one.
func TestNonFinite(t *testing.T) {
	s := load(t, "other")
	s.Policies[0].TTFTms.P99 = math.NaN()
	s.Policies[0].HitRatio = math.Inf(1)
	h := renderPage(t, func(b *bytes.Buffer) error { return Scenario(b, s, Options{}) })
	if strings.Contains(h, "= ;") || strings.Contains(h, "NaN") {
		t.Error("a non-finite value broke a chart option")
	}
	h = renderPage(t, func(b *bytes.Buffer) error { return Index(b, []*results.Summary{s}, Options{}) })
	if strings.Contains(h, "= ;") {
		t.Error("a non-finite value broke an index chart option")
	}
}

func TestBadRequestsCSV(t *testing.T) {
	s := load(t, "small")
	dir := t.TempDir()
	for name, body := range map[string]string{
		"bad value":  "policy,ttft_ms,rejected\nlru,1.5,false\nlru,abc,false\n",
		"no column":  "policy,seq\nlru,1\n",
		"ragged row": "policy,ttft_ms\nlru,1,2\n",
		"empty":      "",
	} {
		p := filepath.Join(dir, "requests.csv")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		err := ScenarioWithRequests(&bytes.Buffer{}, s, p, Options{})
		if err == nil || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming %s", name, err, p)
		}
	}
	if err := ScenarioWithRequests(&bytes.Buffer{}, s, filepath.Join(dir, "none.csv"), Options{}); err != nil {
		t.Errorf("missing requests.csv: %v, want the CDF left out", err)
	}
	if err := ScenarioFromDir(&bytes.Buffer{}, dir, Options{}); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("no summary.json: error %v, want it named", err)
	}
}

// TestRunIDChecked: requests.csv whose run_id is not summary.json's (on
// any row, or absent on one side only) is refused; the page carries the
// run_id as a <meta>.
func TestRunIDChecked(t *testing.T) {
	s := load(t, "small")
	s.RunID = "0123456789abcdef"
	dir := t.TempDir()
	p := filepath.Join(dir, "requests.csv")
	for name, c := range map[string]struct {
		id, body string
		ok       bool
	}{
		"same":            {s.RunID, "policy,ttft_ms,rejected,run_id\nlru,1.5,false,0123456789abcdef\nlru,2,false,0123456789abcdef\n", true},
		"other row":       {s.RunID, "policy,ttft_ms,rejected,run_id\nlru,1.5,false,0123456789abcdef\nlru,2,false,fedcba9876543210\n", false},
		"csv lacks it":    {s.RunID, "policy,ttft_ms,rejected\nlru,1.5,false\n", false},
		"summary lacks":   {"", "policy,ttft_ms,rejected,run_id\nlru,1.5,false,0123456789abcdef\n", false},
		"neither has one": {"", "policy,ttft_ms,rejected\nlru,1.5,false\n", true},
	} {
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		s.RunID = c.id
		var b bytes.Buffer
		err := ScenarioWithRequests(&b, s, p, Options{})
		if c.ok != (err == nil) || err != nil && (!errors.Is(err, ErrMixedRun) || !strings.Contains(err.Error(), p)) {
			t.Errorf("%s: error %v", name, err)
		}
		meta := `<meta name="kvsim-run-id" content="` + c.id + `">`
		if c.ok && strings.Contains(b.String(), meta) != (c.id != "") {
			t.Errorf("%s: <meta> for run_id %q wrong", name, c.id)
		}
	}
}

// TestNoEChartsBanner: every page carries a hidden banner, revealed by a
// check that runs after ECharts' script, saying how to get reports offline
// (the browser test checks that it shows and hides).
func TestNoEChartsBanner(t *testing.T) {
	s := load(t, "other")
	for _, o := range []Options{{}, {AssetsHost: "assets/"}} {
		h := renderPage(t, func(b *bytes.Buffer) error { return Scenario(b, s, o) })
		banner := strings.Index(h, `<div id="kvsim-no-echarts" hidden>`)
		check := strings.Index(h, `if (typeof echarts === "undefined")`)
		src := strings.Index(h, `<script src=`)
		if banner < 0 || check < banner || src < 0 || src > banner || check > strings.Index(h, `class="item"`) {
			t.Errorf("%+v: banner, its check and ECharts' script missing or out of order", o)
		}
		for _, want := range []string{"--assets DIR", "scripts/fetch-echarts.sh", "echarts.min.js"} {
			if !strings.Contains(h[banner:check], want) {
				t.Errorf("%+v: the banner does not say %q", o, want)
			}
		}
	}
}

func TestCopyAssets(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "assets")
	err := CopyAssets(src, dst)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(src, "echarts.min.js")) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("missing file: error %v, want one line naming it", err)
	}
	if err := os.WriteFile(filepath.Join(src, "echarts.min.js"), []byte("/* echarts */"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second copy finds it there already
		if err := CopyAssets(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "echarts.min.js")); err != nil || string(b) != "/* echarts */" {
		t.Fatalf("copied %q, %v", b, err)
	}
}

func TestMRCPage(t *testing.T) {
	h := renderPage(t, func(b *bytes.Buffer) error { return MRC(b, "Miss-ratio curves", testCurves, Options{}) })
	if !strings.Contains(h, `"type":"log"`) || !strings.Contains(h, "kvsim_mrc") {
		t.Error("MRC page: no log-scale size axis or no chart")
	}
}

// TestSharedTierPipe: a shared tier's pipe gets a utilisation chart of its
// own but no bar in bytes per link (its bytes are its links').
func TestSharedTierPipe(t *testing.T) {
	s := load(t, "small")
	if len(s.Series) == 0 {
		t.Fatal("the small summary has no time series")
	}
	for i := range s.Series {
		s.Series[i].LinkUtil["dram (shared)"] = make([]float64, len(s.Series[i].TimesS))
	}
	for _, sr := range bytesChart(s).Series {
		if strings.Contains(sr.Name, "shared") {
			t.Errorf("bytes chart has a bar for %q", sr.Name)
		}
	}
	var titles []string
	for _, c := range timeCharts(s) {
		titles = append(titles, c.Title)
	}
	if !slices.Contains(titles, "Utilisation of tier dram's shared pipe") {
		t.Errorf("time charts %q lack the shared pipe", titles)
	}
}

// TestSweepCharts: the points of one sweep get per-policy charts across the
// swept values, in sweep order; summaries of other origins get none.
func TestSweepCharts(t *testing.T) {
	var ss []*results.Summary
	for i, v := range []string{"0.5", "1", "2"} {
		s := load(t, "small")
		s.Sweep = &results.SweepPoint{Key: "workload.speedup", Value: v}
		for j := range s.Policies {
			s.Policies[j].TTFTms.P99 = float64(100 * (i + 1) * (j + 1))
		}
		ss = append(ss, s)
	}
	cs := sweepCharts(ss)
	if len(cs) != 3 || cs[0].ID != "sweep_ttft_p99" || strings.Join(cs[0].Categories, ",") != "0.5,1,2" {
		t.Fatalf("charts %+v", cs)
	}
	if cs[0].Title != "TTFT p99 across the sweep of workload.speedup" || len(cs[0].Series) != len(ss[0].Policies) {
		t.Errorf("chart %q with %d series", cs[0].Title, len(cs[0].Series))
	}
	if got := cs[0].Series[1].Values; !equal(got, []float64{200, 400, 600}) {
		t.Errorf("second policy's p99 %v", got)
	}
	if ids := indexCharts(ss); ids[0].ID != "sweep_ttft_p99" || ids[len(ids)-1].ID != "index_ttft_p99" {
		t.Errorf("index charts start %s, end %s", ids[0].ID, ids[len(ids)-1].ID)
	}
	ss[1].Sweep.Key = "seed"
	if cs := sweepCharts(ss); cs != nil {
		t.Errorf("mixed keys drew %d charts", len(cs))
	}
	ss[1].Sweep = nil
	if cs := sweepCharts(ss); cs != nil {
		t.Errorf("a point outside the sweep drew %d charts", len(cs))
	}
}

// TestNoneCompleted: a run where no request completed (every one rejected
// here) has null latencies in summary.json; the report says so and shows
// "-", never 0 and never a broken chart.
func TestNoneCompleted(t *testing.T) {
	s := load(t, "small")
	for i := range s.Policies {
		p := &s.Policies[i]
		p.Rejected, p.Requests, p.TTFTms, p.QueueMs = s.Trace.Requests, 0, nil, nil
	}
	dir := t.TempDir()
	if err := results.WriteSummary(filepath.Join(dir, "summary.json"), s); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "summary.json")); !strings.Contains(string(b), `"ttft_ms": null`) {
		t.Fatal("summary.json has no null TTFT")
	}
	csv := "policy,seq,arrival_ms,ttft_ms,rejected\n" + s.Policies[0].Name + ",0,0,0,true\n"
	if err := os.WriteFile(filepath.Join(dir, "requests.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	h := renderPage(t, func(b *bytes.Buffer) error { return ScenarioFromDir(b, dir, Options{}) })
	want := fmt.Sprintf("No requests completed: all %d requests were rejected: each needs more HBM", s.Trace.Requests)
	if !strings.Contains(h, want) || strings.Contains(h, "NaN") || strings.Contains(h, "= ;") {
		t.Errorf("report lacks %q or has a broken value", want)
	}
	if !regexp.MustCompile(`<td class="n">-</td>`).MatchString(h) {
		t.Error("no latency cell shown as -")
	}
	read, err := results.ReadSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	h = renderPage(t, func(b *bytes.Buffer) error { return Index(b, []*results.Summary{read, load(t, "other")}, Options{}) })
	if !strings.Contains(h, "no requests completed: all") || strings.Contains(h, "NaN") {
		t.Error("index page does not say which scenario completed nothing")
	}
}

func chartIDs(cs []chart) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestMetricCharts: a run with TPOT, E2E, batch series and an SLO gets the
// TPOT CDF beside the TTFT CDF (requests with 2 or more output tokens
// only), TPOT and E2E quantiles, batch composition and preemptions over
// time, and the table's new columns; the page holds every chart.
func TestMetricCharts(t *testing.T) {
	s := load(t, "batched")
	lat := lats(t, "batched", s)
	// lru: seq 2 has one output token, seq 3 was rejected.
	if !equal(lat.TPOT["lru"], []float64{5, 6.333333}) || !equal(lat.TPOT["fifo"], []float64{4, 3, 8, 0.333333}) || !lat.HasTPOT {
		t.Errorf("TPOTs %v", lat.TPOT)
	}
	cs := scenarioCharts(s, lat)
	ids := strings.Join(chartIDs(cs), ",")
	for _, want := range []string{"hit_ratio,recomputed,ttft_cdf,tpot_cdf,ttft_quantiles,tpot_quantiles,e2e_quantiles,bytes_moved",
		"running,batch_prefill,batch_decode,preemptions"} {
		if !strings.Contains(ids, want) {
			t.Errorf("charts %s lack %s in that order", ids, want)
		}
	}
	for _, c := range cs {
		switch c.ID {
		case "tpot_cdf":
			if x := c.Series[0].X; c.Series[0].Name != "lru" || !equal(x, []float64{5, 6.33333}) {
				t.Errorf("TPOT CDF of lru: %+v", c.Series[0])
			}
		case "e2e_quantiles":
			if v := c.Series[2].Values; !equal(v, []float64{21, 30.25}) {
				t.Errorf("E2E p99 %v", v)
			}
		case "preemptions":
			if c.Series[0].Name != "lru" || !equal(c.Series[1].Y, []float64{0, 0, 2}) {
				t.Errorf("preemptions %+v", c.Series)
			}
		case "batch_prefill":
			if !equal(c.Series[0].Y, []float64{320, 96, 0}) {
				t.Errorf("lru prefill tokens per step %v", c.Series[0].Y)
			}
		}
	}
	h := renderPage(t, func(b *bytes.Buffer) error {
		return ScenarioFromDir(b, filepath.Join("testdata", "batched"), Options{})
	})
	for _, c := range cs {
		if !strings.Contains(h, `id="kvsim_`+c.ID+`"`) {
			t.Errorf("page lacks chart %s", c.ID)
		}
	}
	for _, want := range []string{"<th>TPOT p50 ms</th>", "<th>E2E p99 ms</th>", "<th>preemptions</th>", "<th>SLO met</th>",
		`<td class="n">25.00 %</td>`, `<td class="n">75.00 %</td>`, "SLO: TTFT ≤ 3 ms and TPOT ≤ 6 ms",
		`<td class="n">5.00</td>`, `<td class="n">2.6</td>`} { // lru TPOT p50, lru output tok/s
		if !strings.Contains(h, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(h, "tpot_ms column") {
		t.Error("a note about a missing tpot_ms column on results that have one")
	}

	// Nothing preempted, and the simple engine's zero batch series: those
	// charts are left out rather than drawn flat.
	for i := range s.Series {
		x := &s.Series[i]
		x.Preemptions = make([]int64, len(x.TimesS))
		x.PrefillTokens = make([]float64, len(x.TimesS))
		x.DecodeSeqs = make([]float64, len(x.TimesS))
	}
	ids = strings.Join(chartIDs(scenarioCharts(s, lat)), ",")
	if strings.Contains(ids, "batch_") || strings.Contains(ids, "preemptions") {
		t.Errorf("all-zero series drawn: %s", ids)
	}

	h = renderPage(t, func(b *bytes.Buffer) error { return Index(b, []*results.Summary{load(t, "small"), s}, Options{}) })
	if !strings.Contains(h, "Scenario batched: SLO: TTFT ≤ 3 ms") || !strings.Contains(h, "<th>SLO met</th>") {
		t.Error("index page: no SLO fact or column")
	}
	// The index compares TPOT p99 when some scenario has it.
	if ids := chartIDs(indexCharts([]*results.Summary{load(t, "small"), s})); ids[len(ids)-1] != "index_tpot_p99" {
		t.Errorf("index charts %v", ids)
	}
}

// TestOlderResults: results of a kvsim before TPOT (small: no tpot_ms
// column, no TPOT, E2E, batch series or SLO in summary.json) render as
// before, with "-" for the new latencies, no SLO column and a note on the
// missing TPOT CDF.
func TestOlderResults(t *testing.T) {
	s := load(t, "small")
	ids := strings.Join(chartIDs(scenarioCharts(s, lats(t, "small", s))), ",")
	for _, no := range []string{"tpot", "e2e", "batch_", "preemptions"} {
		if strings.Contains(ids, no) {
			t.Errorf("charts %s include %s", ids, no)
		}
	}
	if ids := chartIDs(indexCharts([]*results.Summary{s, load(t, "other")})); slices.Contains(ids, "index_tpot_p99") {
		t.Errorf("index charts %v include TPOT p99", ids)
	}
	h := renderPage(t, func(b *bytes.Buffer) error { return ScenarioFromDir(b, filepath.Join("testdata", "small"), Options{}) })
	if !strings.Contains(h, "requests.csv has no tpot_ms column") || strings.Contains(h, "SLO met") {
		t.Error("older results: no note on the TPOT CDF, or an SLO column")
	}
	// lru: TTFT p50..p99, then TPOT p50 and p99, E2E p99 as "-".
	if !strings.Contains(h, `<td class="n">4.5</td><td class="n">-</td><td class="n">-</td><td class="n">-</td>`) {
		t.Error("older results: TPOT and E2E cells not shown as -")
	}
}

// TestGoldenCluster pins the charts of a two-instance cluster run (a
// fixture whose per-instance figures were set by hand).
func TestGoldenCluster(t *testing.T) {
	s := load(t, "cluster")
	goldenCharts(t, "cluster", scenarioCharts(s, lats(t, "cluster", s)))
}

// TestClusterCharts checks the per-instance charts of the cluster fixture
// against figures worked out by hand from its summary.json.
func TestClusterCharts(t *testing.T) {
	s := load(t, "cluster")
	cs := scenarioCharts(s, lats(t, "cluster", s))
	if ids := strings.Join(chartIDs(cs), ","); !strings.HasPrefix(ids, "hit_ratio,recomputed,instance_requests,instance_hit_ratio,ttft_cdf") {
		t.Fatalf("charts %s: want the per-instance pair after recomputed tokens", ids)
	}
	req, hit := cs[2], cs[3]
	if strings.Join(req.Categories, ",") != "0,1" || len(req.Series) != 2 || req.Series[0].Name != "lru" || req.Series[1].Name != "s3fifo" {
		t.Fatalf("requests chart: categories %v, series %+v", req.Categories, req.Series)
	}
	// lru routed 5 and 7 of 12, s3fifo 3 and 9.
	for i, want := range [][2][]float64{{{5, 7}, {41.6667, 58.3333}}, {{3, 9}, {25, 75}}} {
		if sr := req.Series[i]; !equal(sr.Values, want[0]) || !equal(sr.Detail, want[1]) {
			t.Errorf("%s: routed %v (%v %%), want %v (%v %%)", sr.Name, sr.Values, sr.Detail, want[0], want[1])
		}
	}
	if got := strings.Join(hit.Categories, ","); got != "lru / 0,lru / 1,s3fifo / 0,s3fifo / 1" || !hit.Stack {
		t.Fatalf("hit chart categories %s, stacked %v", got, hit.Stack)
	}
	// Each instance's hit ratio split in proportion to its hits by tier:
	// lru/0 0.25 of 8+2 hits, lru/1 0.5 of 12+3, s3fifo/0 0.2 of 6,
	// s3fifo/1 0.8 of 10+5+5.
	want := map[string][]float64{
		"hbm":        {20, 40, 20, 40},
		"host":       {5, 0, 0, 20},
		"ssd":        {0, 10, 0, 20},
		"recomputed": {75, 50, 80, 20},
	}
	if len(hit.Series) != len(want) {
		t.Fatalf("%d series, want %d", len(hit.Series), len(want))
	}
	for _, sr := range hit.Series {
		if !equal(sr.Values, want[sr.Name]) {
			t.Errorf("%s: %v %%, want %v", sr.Name, sr.Values, want[sr.Name])
		}
	}
	if d := hit.Series[2].Detail; !equal(d, []float64{0, 3, 0, 5}) {
		t.Errorf("ssd hit blocks %v, want 0 3 0 5", d)
	}

	h := renderPage(t, func(b *bytes.Buffer) error {
		return ScenarioFromDir(b, filepath.Join("testdata", "cluster"), Options{})
	})
	for _, want := range []string{
		"<th>router</th><th>best-prefix share</th><th>routed max/min</th></tr>",
		`<td>cache_aware</td><td class="n">90.00 %</td><td class="n">1.40</td></tr>`, // lru: 7/5
		`<td>cache_aware</td><td class="n">75.00 %</td><td class="n">3.00</td></tr>`, // s3fifo: 9/3
		"Cluster: 2 instances.",
		"<p><b>Policy lru, per instance</b></p>",
		"<p><b>Policy s3fifo, per instance</b></p>",
		"<tr><th>instance</th><th>routed</th><th>finished</th><th>rejected</th><th>hit ratio</th><th>from hbm</th><th>from host</th><th>from ssd</th><th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>queue p99 ms</th><th>GPU busy</th></tr>",
		// lru/1: routed 7, 7 finished, 50 % hits: 40 from hbm, 10 from ssd.
		`<tr><td class="n">1</td><td class="n">7</td><td class="n">7</td><td class="n">0</td><td class="n">50.00 %</td><td class="n">40.00 %</td><td class="n">0.00 %</td><td class="n">10.00 %</td><td class="n">51.0</td><td class="n">126.1</td><td class="n">0.0</td><td class="n">96.76 %</td></tr>`,
		// s3fifo/1: queue p99 4 ms, no GPU busy share.
		`<td class="n">4.0</td><td class="n">-</td></tr>`,
	} {
		if !strings.Contains(h, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, c := range cs {
		if !strings.Contains(h, `id="kvsim_`+c.ID+`"`) {
			t.Errorf("page lacks chart %s", c.ID)
		}
	}
}

// TestClusterImbalance: an instance the router never chose makes the
// imbalance infinite, and a run where no request had a cached prefix has
// no best-prefix share.
func TestClusterImbalance(t *testing.T) {
	s := load(t, "cluster")
	p := &s.Policies[0]
	p.Router.Decisions = []int64{12, 0}
	p.Router.WithPrefix = 0
	c := routerCells(p, 2)
	if c[1].Text != "-" || c[2].Text != "∞" {
		t.Errorf("cells %+v, want - and ∞", c)
	}
	p.Router.Decisions = []int64{0, 0}
	if c := routerCells(p, 2); c[2].Text != "-" {
		t.Errorf("nothing routed: imbalance %q, want -", c[2].Text)
	}
}

// TestNotClusterUnchanged: a run without [cluster] gets no per-instance
// chart, table or router column.
func TestNotClusterUnchanged(t *testing.T) {
	for _, name := range []string{"small", "batched", "other"} {
		s := load(t, name)
		if n := clusterSize(s); n != 0 {
			t.Fatalf("%s: cluster of %d", name, n)
		}
		for _, id := range chartIDs(scenarioCharts(s, nil)) {
			if strings.HasPrefix(id, "instance_") {
				t.Errorf("%s: chart %s", name, id)
			}
		}
		p := scenarioPage(s, nil)
		if len(p.More) != 0 || slices.Contains(p.Table.Head, "router") {
			t.Errorf("%s: %d instance tables, head %v", name, len(p.More), p.Table.Head)
		}
	}
}

// TestGoldenPool pins the charts of a two-instance cluster over a pooled
// tier, one prefill and one decode instance (figures set by hand).
func TestGoldenPool(t *testing.T) {
	s := load(t, "pool")
	goldenCharts(t, "pool", scenarioCharts(s, lats(t, "pool", s)))
}

// TestPoolCharts: with a pooled tier the per-instance hits split the pool
// by the node holding the copy, a NIC chart pair follows the per-instance
// pair, and the page names each instance's role and the pool's use; all
// from summary.json, checked against the fixture's hand-set figures.
func TestPoolCharts(t *testing.T) {
	s := load(t, "pool")
	cs := scenarioCharts(s, lats(t, "pool", s))
	if ids := strings.Join(chartIDs(cs), ","); !strings.HasPrefix(ids, "hit_ratio,recomputed,instance_requests,instance_hit_ratio,nic_send,nic_recv,ttft_cdf") {
		t.Fatalf("charts %s: want the NIC pair after the per-instance pair", ids)
	}
	hit, send, recv := cs[3], cs[4], cs[5]
	// lru/0 of 40 accesses: 8 hbm, 2 host, 2 + 4 pool, 24 recomputed;
	// lru/1 of 50: 10, 0, 5 + 5, 30; s3fifo/0 of 20: 4, 0, 0 + 4, 12;
	// s3fifo/1 of 30: 6, 3, 3 + 3, 15.
	want := map[string][]float64{
		"hbm":               {20, 20, 20, 20},
		"host":              {5, 0, 0, 10},
		"pool (this node)":  {5, 10, 0, 10},
		"pool (other node)": {10, 10, 20, 10},
		"recomputed":        {60, 60, 60, 50},
	}
	if hit.Title != "Hit ratio per instance by source" || len(hit.Series) != len(want) {
		t.Fatalf("hit chart %q with %d series, want %d", hit.Title, len(hit.Series), len(want))
	}
	for _, sr := range hit.Series {
		if !equal(sr.Values, want[sr.Name]) {
			t.Errorf("%s: %v %%, want %v", sr.Name, sr.Values, want[sr.Name])
		}
	}
	if d := hit.Series[3].Detail; !equal(d, []float64{4, 5, 4, 3}) {
		t.Errorf("remote pool blocks %v, want 4 5 4 3", d)
	}
	for _, c := range []struct {
		ch       chart
		busy, gb [2][]float64 // lru, s3fifo
	}{
		{send, [2][]float64{{25, 6.25}, {12.5, 0}}, [2][]float64{{4, 1}, {2, 0}}},
		{recv, [2][]float64{{6.25, 25}, {0, 12.5}}, [2][]float64{{1, 4}, {0, 2}}},
	} {
		if strings.Join(c.ch.Categories, ",") != "0,1" || len(c.ch.Series) != 2 {
			t.Fatalf("%s: categories %v, %d series", c.ch.ID, c.ch.Categories, len(c.ch.Series))
		}
		for i, sr := range c.ch.Series {
			if sr.Name != s.Policies[i].Name || !equal(sr.Values, c.busy[i]) || !equal(sr.Detail, c.gb[i]) {
				t.Errorf("%s: %s busy %v %% (%v GB), want %v (%v)", c.ch.ID, sr.Name, sr.Values, sr.Detail, c.busy[i], c.gb[i])
			}
		}
	}

	h := renderPage(t, func(b *bytes.Buffer) error {
		return ScenarioFromDir(b, filepath.Join("testdata", "pool"), Options{})
	})
	for _, want := range []string{
		`Pool: tier &#34;pool&#34; is shared by the nodes, 32.0 GiB in all (16.0 GiB from each). lru peaked at 8.0 GiB, 9 of its 16 hits read a copy on another node (over both NICs); s3fifo peaked at 2.0 GiB, 7 of its 10 hits read a copy on another node (over both NICs).`,
		"<tr><th>instance</th><th>role</th><th>routed</th><th>finished</th><th>rejected</th><th>hit ratio</th><th>from hbm</th><th>from host</th><th>from pool (this node)</th><th>from pool (other node)</th><th>TTFT p50 ms</th>",
		// lru/0: 40 % hits: 20 hbm, 5 host, 5 pool here, 10 pool remote.
		`<tr><td class="n">0</td><td>prefill</td>`,
		`<td class="n">40.00 %</td><td class="n">20.00 %</td><td class="n">5.00 %</td><td class="n">5.00 %</td><td class="n">10.00 %</td>`,
		`<tr><td class="n">1</td><td>decode</td>`,
		`id="kvsim_nic_send"`, `id="kvsim_nic_recv"`,
	} {
		if !strings.Contains(h, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// Without a pool or roles the cluster fixture keeps its columns and
	// draws no NIC chart (TestClusterCharts pins them).
	if ids := strings.Join(chartIDs(scenarioCharts(load(t, "cluster"), nil)), ","); strings.Contains(ids, "nic_") {
		t.Errorf("cluster without a pool: charts %s", ids)
	}
}
