// Package report renders a run's results (summary.json, requests.csv) as
// self-describing HTML pages of ECharts charts, through go-echarts.
//
// Pages are deterministic: the same inputs give byte-identical HTML, so
// reports can be diffed and screenshots compared.
package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"kvsim/results"
)

// DefaultAssetsHost is go-echarts' online home of echarts.min.js.
const DefaultAssetsHost = "https://go-echarts.github.io/go-echarts-assets/assets/"

// EChartsFile is the script every page loads.
const EChartsFile = results.EChartsFile

// Options says where a page gets ECharts from.
type Options struct {
	// AssetsHost is where the page loads echarts.min.js from: "" means
	// DefaultAssetsHost (needs the network); otherwise a URL prefix ending
	// in "/" (e.g. "assets/") whose folder holds echarts.min.js.
	AssetsHost string
	// Inline, when non-nil, is echarts.min.js itself, put into the page
	// instead of loading a separate file.
	Inline []byte
}

// Scenario writes one scenario's report. It has no per-request data, so
// the TTFT and TPOT CDFs are left out: use ScenarioFromDir or
// ScenarioWithRequests.
func Scenario(w io.Writer, s *results.Summary, o Options) error {
	return writePage(w, scenarioPage(s, nil), o)
}

// ScenarioFromDir writes the report of the results folder dir
// (dir/summary.json, and dir/requests.csv when present).
func ScenarioFromDir(w io.Writer, dir string, o Options) error {
	s, err := results.ReadSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		return err
	}
	return ScenarioWithRequests(w, s, filepath.Join(dir, "requests.csv"), o)
}

// ScenarioWithRequests writes s's report with the TTFT and TPOT CDFs
// drawn from requestsCSV; a missing file only leaves the CDFs out.
func ScenarioWithRequests(w io.Writer, s *results.Summary, requestsCSV string, o Options) error {
	return ScenarioWithRequestsContext(context.Background(), w, s, requestsCSV, o)
}

// ScenarioWithRequestsContext is ScenarioWithRequests that stops reading
// requestsCSV (gigabytes for a long run) once ctx is cancelled, checked
// every 4096 rows, and returns ctx's error with nothing written to w.
func ScenarioWithRequestsContext(ctx context.Context, w io.Writer, s *results.Summary, requestsCSV string, o Options) error {
	lat, err := readLatencies(ctx, requestsCSV, s)
	if err != nil {
		return err
	}
	return writePage(w, scenarioPage(s, lat), o)
}

// Index writes a page comparing every scenario x policy of a results
// folder; it links to <scenario>/report.html.
func Index(w io.Writer, ss []*results.Summary, o Options) error {
	return writePage(w, indexPage(ss), o)
}

// MRC writes a page of miss-ratio curves.
func MRC(w io.Writer, title string, curves []Curve, o Options) error {
	p := &page{Title: title, Heading: title, Charts: []chart{mrcChart(title, curves)}}
	return writePage(w, p, o)
}

// CopyAssets copies srcDir/echarts.min.js into dstDir (made if needed).
func CopyAssets(srcDir, dstDir string) error {
	src := filepath.Join(srcDir, EChartsFile)
	b, err := os.ReadFile(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: not found (the assets folder must be ECharts' dist folder, holding %s)", src, EChartsFile)
		}
		return err
	}
	if len(b) == 0 {
		return fmt.Errorf("%s: empty file", src)
	}
	if err := os.MkdirAll(dstDir, 0o755); err != nil {
		return err
	}
	dst := filepath.Join(dstDir, EChartsFile)
	if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, b) {
		return nil // already there: leave its timestamp alone
	}
	return results.WriteFileAtomic(dst, b)
}

// ErrMixedRun is returned (wrapped) when requests.csv and summary.json
// come from different runs: their run_ids differ.
var ErrMixedRun = errors.New("the folder mixes files of two runs")

// latencies are each policy's per-request latencies (ms) from
// requests.csv: rejected requests are left out, and TPOT holds only
// requests with one (2 or more output tokens).
type latencies struct {
	TTFT, TPOT map[string][]float64
	HasTPOT    bool // the file has a tpot_ms column (older kvsims wrote none)
}

// readLatencies loads requests.csv; nil when the file does not exist. Its
// rows' run_id must be the summary's (both absent in results of older
// kvsims).
func readLatencies(ctx context.Context, path string, s *results.Summary) (*latencies, error) {
	rr, err := results.OpenRequests(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rr.Close()
	mixed := func(id string) error {
		if id == "" {
			id = "none"
		}
		want := s.RunID
		if want == "" {
			want = "none"
		}
		return fmt.Errorf("%s: run_id %s, but summary.json's is %s: %w; run kvsim run again for a consistent set",
			path, id, want, ErrMixedRun)
	}
	if rr.HasRunID != (s.RunID != "") {
		return nil, mixed("")
	}
	known := map[string]bool{}
	for _, p := range s.Policies {
		known[p.Name] = true
	}
	out := &latencies{TTFT: map[string][]float64{}, TPOT: map[string][]float64{}, HasTPOT: rr.HasTPOT}
	var q results.Request
	for i := 1; ; i++ {
		if i&4095 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err := rr.Next(&q)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if rr.HasRunID && q.RunID != s.RunID {
			return nil, mixed(q.RunID)
		}
		if q.Rejected {
			continue
		}
		if known[q.Policy] {
			out.TTFT[q.Policy] = append(out.TTFT[q.Policy], float64(q.TTFTNs)/1e6)
			if q.TPOTNs >= 0 {
				out.TPOT[q.Policy] = append(out.TPOT[q.Policy], float64(q.TPOTNs)/1e6)
			}
		}
	}
	return out, nil
}

// page is what the HTML template shows around the charts.
type page struct {
	RunID   string // the results' run_id, as a <meta>; "" for none
	Title   string
	Heading string
	Pre     string   // preformatted description
	Facts   []string // one line each under the description
	Table   *table   // optional summary table
	More    []*table // tables under it, each with a caption (a cluster's instances)
	Notes   []string // small print above the charts
	Charts  []chart
}

type table struct {
	Caption string
	Head    []string
	Rows    [][]cell
}

type cell struct {
	Text string
	Link string // relative URL, or ""
	Num  bool   // right-aligned
}

func num(s string) cell { return cell{Text: s, Num: true} }

func fixed(x float64, dec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(x, 'f', dec, 64)
}

func f2(x float64) string  { return fixed(x, 2) }
func f1(x float64) string  { return fixed(x, 1) }
func pct(x float64) string { return fixed(100*x, 2) + " %" }
func itoa(x int64) string  { return strconv.FormatInt(x, 10) }

func movedGiB(p *results.Policy) string {
	var b int64
	for _, v := range p.BytesMoved {
		b += v
	}
	return f2(float64(b) / (1 << 30))
}

var policyHead = []string{"hit ratio", "block-hit ratio", "TTFT p50 ms", "p90", "p99", "TPOT p50 ms", "p99",
	"E2E p99 ms", "queue p99 ms", "output tok/s", "preemptions", "recomputed tokens", "moved GiB", "written down GiB", "rejected"}

// sloHead is the column added when some summary has an [slo].
const sloHead = "SLO met"

func anySLO(ss ...*results.Summary) bool {
	for _, s := range ss {
		if s.SLO != nil {
			return true
		}
	}
	return false
}

// sloCell is a policy's SLO attainment: "-" without an [slo].
func sloCell(p *results.Policy) cell {
	if p.SLOAttainment == nil {
		return num("-")
	}
	return num(pct(*p.SLOAttainment))
}

// writtenGiB is what went down the hierarchy (demotions, write-through):
// the write traffic a policy costs the lower tiers.
func writtenGiB(p *results.Policy) string {
	return f2(float64(p.BytesByPurpose["demote"]+p.BytesByPurpose["write_through"]) / (1 << 30))
}

func policyCells(p *results.Policy, slo bool) []cell {
	ttft, queue, tpot, e2e := p.TTFTms.OrNaN(), p.QueueMs.OrNaN(), p.TPOTms.OrNaN(), p.E2Ems.OrNaN()
	out := []cell{num(pct(p.HitRatio)), num(pct(p.BlockHitRatio)), num(ms1(ttft.P50)), num(ms1(ttft.P90)),
		num(ms1(ttft.P99)), num(ms2(tpot.P50)), num(ms2(tpot.P99)), num(ms1(e2e.P99)), num(ms1(queue.P99)),
		num(f1(p.OutputTokensPerS)), num(itoa(p.Preemptions)), num(itoa(p.RecomputedTokens)), num(movedGiB(p)),
		num(writtenGiB(p)), num(itoa(p.Rejected))}
	if slo {
		out = append(out, sloCell(p))
	}
	return out
}

func head(first []string, slo bool) []string {
	h := append(first, policyHead...)
	if slo {
		h = append(h, sloHead)
	}
	return h
}

// ms1 is a latency cell: "-" where no request completed.
func ms1(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return f1(x)
}

// ms2 is a TPOT cell: a few ms, so one more decimal.
func ms2(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return f2(x)
}

// sloFact says what the SLO columns measure.
func sloFact(s *results.Summary) string {
	var parts []string
	if s.SLO.TTFTms > 0 {
		parts = append(parts, "TTFT ≤ "+strconv.FormatFloat(s.SLO.TTFTms, 'g', -1, 64)+" ms")
	}
	if s.SLO.TPOTms > 0 {
		parts = append(parts, "TPOT ≤ "+strconv.FormatFloat(s.SLO.TPOTms, 'g', -1, 64)+" ms")
	}
	return "SLO: " + strings.Join(parts, " and ") +
		"; SLO met is the share of requests meeting it (rejected ones miss it; a request with one output token has no TPOT and meets that half)."
}

func scenarioPage(s *results.Summary, lat *latencies) *page {
	t := s.Trace
	p := &page{RunID: s.RunID, Title: "kvsim: " + s.Scenario, Heading: "kvsim report: scenario " + s.Scenario, Pre: s.Description}
	if p.Pre == "" {
		p.Pre = "scenario " + s.Scenario
	}
	if why := s.NoneCompleted(); why != "" {
		p.Facts = append(p.Facts, "No requests completed: "+why+". Latencies are shown as -.")
	}
	p.Facts = append(p.Facts,
		fmt.Sprintf("Trace: %d requests, %d block accesses, %d distinct blocks, %d input tokens over %.1f s of arrivals.",
			t.Requests, t.BlockAccesses, t.DistinctBlocks, t.InputTokens, t.DurationS),
		fmt.Sprintf("Model: %d-token blocks of %.1f MiB (%d KiB per token). Seed %d.",
			s.Model.BlockTokens, float64(s.Model.BytesPerBlock)/(1<<20), s.Model.BytesPerToken>>10, s.Seed))
	if s.CostUSD > 0 {
		p.Facts = append(p.Facts, fmt.Sprintf("Hierarchy cost: $%.0f (capacity x cost per GB, summed over tiers).", s.CostUSD))
	}
	if t.SkippedLines > 0 {
		p.Facts = append(p.Facts, fmt.Sprintf("%d malformed trace lines were skipped.", t.SkippedLines))
	}
	slo := anySLO(s)
	if slo {
		p.Facts = append(p.Facts, sloFact(s))
	}
	p.Table = &table{Head: head([]string{"policy", "eviction"}, slo)}
	n := clusterSize(s)
	if n > 0 {
		p.Facts = append(p.Facts, clusterFact(s, n))
		if f := poolFact(s); f != "" {
			p.Facts = append(p.Facts, f)
		}
		p.Table.Head = append(p.Table.Head, routerHead...)
	}
	for i := range s.Policies {
		pol := &s.Policies[i]
		row := append([]cell{{Text: pol.Name}, {Text: pol.Eviction}}, policyCells(pol, slo)...)
		if n > 0 {
			row = append(row, routerCells(pol, n)...)
			p.More = append(p.More, instanceTable(s, pol, n))
		}
		p.Table.Rows = append(p.Table.Rows, row)
	}
	switch {
	case lat == nil:
		p.Notes = append(p.Notes, "No requests.csv next to summary.json: the TTFT and TPOT CDFs are left out.")
	case !lat.HasTPOT:
		p.Notes = append(p.Notes, "requests.csv has no tpot_ms column (an older kvsim wrote it): the TPOT CDF is left out.")
	}
	p.Charts = scenarioCharts(s, lat)
	return p
}

// routerHead is the comparison table's columns for a cluster's router.
var routerHead = []string{"router", "best-prefix share", "routed max/min"}

func clusterFact(s *results.Summary, n int) string {
	return fmt.Sprintf("Cluster: %d instances. Best-prefix share: of the routed requests some instance held a cached prefix of, "+
		"the share sent to an instance holding the longest. Routed max/min: the most requests routed to one instance over the fewest "+
		"(1.00 is an even spread).", n)
}

// routerCells are a policy's router name, best-prefix share and
// imbalance (most requests routed to one instance over the fewest).
func routerCells(p *results.Policy, n int) []cell {
	name, best := "-", "-"
	if p.Router != nil {
		name, best = p.Router.Name, pct(p.Router.BestPrefixShare)
		if p.Router.WithPrefix == 0 {
			best = "-" // no request had a cached prefix anywhere: no share
		}
	}
	lo, hi := routed(p, 0), routed(p, 0)
	for i := 1; i < n; i++ {
		lo, hi = min(lo, routed(p, i)), max(hi, routed(p, i))
	}
	imb := "-"
	switch {
	case lo > 0:
		imb = f2(float64(hi) / float64(lo))
	case hi > 0:
		imb = "∞" // an instance got nothing
	}
	return []cell{{Text: name}, num(best), num(imb)}
}

// instanceTable is a policy's figures per instance of a cluster run.
func instanceTable(s *results.Summary, p *results.Policy, n int) *table {
	srcs := instanceSources(s)
	roles := false // disaggregated: say which instances prefill
	for _, in := range p.Instances {
		roles = roles || in.Role != ""
	}
	t := &table{Caption: "Policy " + p.Name + ", per instance", Head: []string{"instance"}}
	if roles {
		t.Head = append(t.Head, "role")
	}
	t.Head = append(t.Head, "routed", "finished", "rejected", "hit ratio")
	for _, src := range srcs {
		t.Head = append(t.Head, "from "+src.name)
	}
	t.Head = append(t.Head, "TTFT p50 ms", "TTFT p99 ms", "queue p99 ms", "GPU busy")
	for i := range n {
		row := []cell{num(strconv.Itoa(i))}
		if i >= len(p.Instances) {
			if roles {
				row = append(row, cell{Text: "-"})
			}
			row = append(row, num(itoa(routed(p, i))))
			for range len(t.Head) - len(row) {
				row = append(row, num("-"))
			}
			t.Rows = append(t.Rows, row)
			continue
		}
		in := &p.Instances[i]
		if roles {
			row = append(row, cell{Text: in.Role})
		}
		row = append(row, num(itoa(routed(p, i))), num(itoa(in.Requests)), num(itoa(in.Rejected)), num(pct(in.HitRatio)))
		for _, src := range srcs {
			row = append(row, num(pct(sourceShare(in, src))))
		}
		ttft, queue := in.TTFTms.OrNaN(), in.QueueMs.OrNaN()
		busy := "-" // the simple engine has no steps
		if in.GPUBusyShare != nil {
			busy = pct(*in.GPUBusyShare)
		}
		row = append(row, num(ms1(ttft.P50)), num(ms1(ttft.P99)), num(ms1(queue.P99)), num(busy))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// poolFact describes the pooled tier and each policy's use of it; "" when
// the run has none.
func poolFact(s *results.Summary) string {
	var parts []string
	for _, p := range s.Policies {
		if pl := p.Pool; pl != nil {
			parts = append(parts, fmt.Sprintf("%s peaked at %s, %d of its %d hits read a copy on another node (over both NICs)",
				p.Name, fmtGiB(pl.PeakUsedBytes), pl.RemoteHits, p.Hits[pl.Tier]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	var pl *results.Pool
	for i := range s.Policies {
		if pl = s.Policies[i].Pool; pl != nil {
			break
		}
	}
	return fmt.Sprintf("Pool: tier %q is shared by the nodes, %s in all (%s from each). %s.",
		pl.Tier, fmtGiB(pl.CapacityBytes), fmtGiB(pl.ShareBytes), strings.Join(parts, "; "))
}

func fmtGiB(b int64) string { return f1(float64(b)/(1<<30)) + " GiB" }

func indexPage(ss []*results.Summary) *page {
	p := &page{Title: "kvsim results", Heading: fmt.Sprintf("kvsim results: %d scenarios", len(ss))}
	slo := anySLO(ss...)
	p.Table = &table{Head: head([]string{"scenario", "policy", "requests"}, slo)}
	for _, s := range ss {
		link := url.PathEscape(s.Scenario) + "/report.html"
		for i := range s.Policies {
			pol := &s.Policies[i]
			row := []cell{{Text: s.Scenario, Link: link}, {Text: pol.Name}, num(itoa(pol.Requests))}
			p.Table.Rows = append(p.Table.Rows, append(row, policyCells(pol, slo)...))
		}
	}
	for _, s := range ss {
		if first, _, _ := strings.Cut(s.Description, "\n"); first != "" {
			p.Facts = append(p.Facts, first)
		}
		if why := s.NoneCompleted(); why != "" {
			p.Facts = append(p.Facts, "Scenario "+s.Scenario+": no requests completed: "+why+".")
		}
		if s.SLO != nil {
			p.Facts = append(p.Facts, "Scenario "+s.Scenario+": "+sloFact(s))
		}
	}
	p.Charts = indexCharts(ss)
	return p
}

// pageTpl: the error hook comes first so that headless checks can tell a
// failed script (e.g. ECharts not found) from a page that drew. ECharts'
// <script> in <head> has run or failed by the time <body> starts, so the
// check under the banner knows whether it loaded; without it the charts
// would stay empty boxes with nothing said.
var pageTpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en" data-kvsim-charts="{{len .Charts}}">
<head>
<meta charset="utf-8">
<meta name="generator" content="kvsim">
{{with .RunID}}<meta name="kvsim-run-id" content="{{.}}">
{{end -}}
<title>{{.Title}}</title>
<script>
window.onerror = function (msg, src, line, col) {
	document.documentElement.setAttribute("data-kvsim-error", String(msg) + " (" + src + ":" + line + ":" + col + ")");
};
</script>
{{if .Inline}}<script>{{.Inline}}</script>{{else}}<script src="{{.Src}}"></script>{{end}}
<style>
body { font-family: system-ui, sans-serif; margin: 16px 24px; color: #222; }
h1 { font-size: 22px; margin: 0 0 8px; }
pre { background: #f6f8fa; padding: 8px 12px; font-size: 12px; line-height: 1.35; overflow-x: auto; margin: 0 0 6px; }
p { margin: 4px 0; font-size: 13px; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 2px 8px; }
th { background: #f0f0f0; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.charts .container { border: 1px solid #e5e5e5; padding: 6px 0; }
#kvsim-no-echarts { background: #fff3cd; border: 1px solid #e0b000; padding: 8px 12px; margin: 0 0 10px; font-size: 14px; }
</style>
</head>
<body>
<div id="kvsim-no-echarts" hidden><b>The charts cannot be drawn: ECharts did not load{{with .Src}} from {{.}}{{end}}.</b>
By default a report loads ECharts from the internet. To view reports offline, render them with a local copy of ECharts:
<code>kvsim report --assets DIR RESULTS</code> (or <code>--assets DIR</code> on <code>kvsim run</code>, <code>sweep</code> or <code>mrc</code>),
where DIR is ECharts' dist folder, holding echarts.min.js; <code>scripts/fetch-echarts.sh</code> in kvsim's repository installs one.
A page written with <code>--assets</code> needs the <code>assets/</code> folder beside it.</div>
<script>
if (typeof echarts === "undefined") {
	document.getElementById("kvsim-no-echarts").hidden = false;
	document.documentElement.setAttribute("data-kvsim-no-echarts", "");
}
</script>
<h1>{{.Heading}}</h1>
{{with .Pre}}<pre>{{.}}</pre>{{end}}
{{range .Facts}}<p>{{.}}</p>
{{end}}
{{- with .Table}}<table>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if .Num}} class="n"{{end}}>{{if .Link}}<a href="{{.Link}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</table>
{{end}}
{{- range .More}}<p><b>{{.Caption}}</b></p>
<table>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if .Num}} class="n"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>
{{end}}
{{- range .Notes}}<p><i>{{.}}</i></p>
{{end -}}
<div class="charts">
{{range .Elements}}{{.}}
{{end}}</div>
{{range .Scripts}}{{.}}
{{end}}</body>
</html>
`))

// scriptSafe keeps text inside a <script> element from ending it early;
// "<\/" means "</" in both JS strings and JSON.
var scriptSafe = strings.NewReplacer("</", `<\/`, "<!--", `<\!--`)

func writePage(w io.Writer, p *page, o Options) error {
	data := struct {
		*page
		Src      template.URL
		Inline   template.JS
		Elements []template.HTML
		Scripts  []template.HTML
	}{page: p}
	if o.Inline != nil {
		data.Inline = template.JS(scriptSafe.Replace(string(o.Inline)))
	} else {
		host := o.AssetsHost
		if host == "" {
			host = DefaultAssetsHost
		}
		if !strings.HasSuffix(host, "/") {
			host += "/"
		}
		data.Src = template.URL(host + EChartsFile)
	}
	for i := range p.Charts {
		sn := p.Charts[i].snippet()
		data.Elements = append(data.Elements, template.HTML(sn.Element))
		data.Scripts = append(data.Scripts, template.HTML(safeScript(sn.Script)))
	}
	var buf bytes.Buffer
	if err := pageTpl.Execute(&buf, data); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// safeScript escapes the body of go-echarts' <script> element, whose
// option JSON is not HTML-escaped (names come from user files).
func safeScript(s string) string {
	const open, end = `<script type="text/javascript">`, `</script>`
	i := strings.Index(s, open)
	j := strings.LastIndex(s, end)
	if i < 0 || j < i {
		return s
	}
	body := s[i+len(open) : j]
	return s[:i+len(open)] + scriptSafe.Replace(body) + s[j:]
}
