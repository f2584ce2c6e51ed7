package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"kvsim/results"
)

// chart is everything one chart shows, kept apart from go-echarts so that
// tests can pin the numbers (golden files) without parsing HTML.
type chart struct {
	ID         string   `json:"id"`   // also the JS variable suffix: [a-z0-9_] only
	Kind       string   `json:"kind"` // kindBar, kindHBar or kindLine
	Title      string   `json:"title"`
	Subtitle   string   `json:"subtitle,omitempty"`
	XName      string   `json:"x_name"`
	YName      string   `json:"y_name"`
	XLog       bool     `json:"x_log,omitempty"`
	YMax       float64  `json:"y_max,omitempty"` // top of the value axis; 0: automatic
	Categories []string `json:"categories,omitempty"`
	Stack      bool     `json:"stack,omitempty"`
	Height     int      `json:"height,omitempty"` // px; 0: default
	// Tooltips print values as toFixed(Decimals)+Unit; line charts add
	// "at x" with XDecimals/XUnit; Detail adds a bracketed second figure.
	Unit           string   `json:"unit"`
	Decimals       int      `json:"decimals"`
	XUnit          string   `json:"x_unit,omitempty"`
	XDecimals      int      `json:"x_decimals,omitempty"`
	DetailUnit     string   `json:"detail_unit,omitempty"`
	DetailDecimals int      `json:"detail_decimals,omitempty"`
	Series         []series `json:"series"`
}

const (
	kindBar  = "bar"  // categories on x, values on y
	kindHBar = "hbar" // categories on y (top to bottom), values on x
	kindLine = "line" // points (X[i], Y[i]) on two value axes
	// kindScatter: points (X[i], Y[i]) unjoined; a series with Line set
	// is drawn as a line over them (a reference such as y = x).
	kindScatter = "scatter"
)

type series struct {
	Name   string `json:"name"`
	Values nums   `json:"values,omitempty"` // bars: one per category, NaN = no bar
	X      nums   `json:"x,omitempty"`      // lines
	Y      nums   `json:"y,omitempty"`
	Detail nums   `json:"detail,omitempty"` // bars: one per category
	Line   bool   `json:"line,omitempty"`   // scatter: draw this series as a line
}

// nums marshals NaN as null: golden files must hold "no value" too.
type nums []float64

func (v nums) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		}
	}
	return append(b, ']'), nil
}

func (v *nums) UnmarshalJSON(b []byte) error {
	var xs []*float64
	if err := json.Unmarshal(b, &xs); err != nil {
		return err
	}
	*v = make(nums, len(xs))
	for i, x := range xs {
		(*v)[i] = math.NaN()
		if x != nil {
			(*v)[i] = *x
		}
	}
	return nil
}

const (
	maxCDFPoints    = 500  // per policy
	maxSeriesPoints = 2048 // per time-series line (sim keeps <= 1024)
	minLogTTFTms    = 1e-3 // a log axis cannot show 0
)

// round keeps pages small and golden files readable; 6 significant
// digits is far below what a chart or tooltip can show.
func round(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return v
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func policyNames(s *results.Summary) []string {
	out := make([]string, len(s.Policies))
	for i, p := range s.Policies {
		out[i] = p.Name
	}
	return out
}

// tierNames lists the tiers in hierarchy order, then any name the
// policies mention that the tier list lacks, sorted (maps have no order).
func tierNames(s *results.Summary) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range s.Tiers {
		if !seen[t.Name] {
			seen[t.Name] = true
			out = append(out, t.Name)
		}
	}
	var extra []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			extra = append(extra, k)
		}
	}
	for _, p := range s.Policies {
		for k := range p.Hits {
			add(k)
		}
	}
	for _, ts := range s.Series {
		for k := range ts.TierUsed {
			add(k)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// linkNames lists every link any policy reports, sorted.
func linkNames(s *results.Summary) []string {
	seen := map[string]bool{}
	for _, p := range s.Policies {
		for k := range p.BytesMoved {
			seen[k] = true
		}
		for k := range p.Links {
			seen[k] = true
		}
	}
	for _, ts := range s.Series {
		for k := range ts.LinkUtil {
			seen[k] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isLink reports whether some policy moved bytes over link l (series also
// name shared tiers' pipes, which are not links).
func isLink(s *results.Summary, l string) bool {
	for _, p := range s.Policies {
		if _, ok := p.BytesMoved[l]; ok {
			return true
		}
		if _, ok := p.Links[l]; ok {
			return true
		}
	}
	return false
}

// hitChart: where each policy's block accesses were served from; the
// remainder was recomputed.
func hitChart(s *results.Summary) chart {
	c := chart{ID: "hit_ratio", Kind: kindBar, Title: "Hit ratio by tier",
		Subtitle: "share of block accesses served from each tier; the rest was recomputed",
		XName:    "policy", YName: "block accesses (%)", YMax: 100, Stack: true,
		Categories: policyNames(s), Unit: " %", Decimals: 2, DetailUnit: " blocks"}
	tiers := tierNames(s)
	for _, t := range tiers {
		sr := series{Name: t}
		for _, p := range s.Policies {
			sr.Values = append(sr.Values, round(100*ratio(p.Hits[t], p.BlockAccesses)))
			sr.Detail = append(sr.Detail, float64(p.Hits[t]))
		}
		c.Series = append(c.Series, sr)
	}
	rest := series{Name: "recomputed"}
	for _, p := range s.Policies {
		var hits int64
		for _, t := range tiers {
			hits += p.Hits[t]
		}
		r := max(p.BlockAccesses-hits, 0)
		rest.Values = append(rest.Values, round(100*ratio(r, p.BlockAccesses)))
		rest.Detail = append(rest.Detail, float64(r))
	}
	c.Series = append(c.Series, rest)
	return c
}

func recomputeChart(s *results.Summary) chart {
	c := chart{ID: "recomputed", Kind: kindBar, Title: "Recomputed prefill tokens",
		Subtitle: fmt.Sprintf("tokens whose KV was not cached; in brackets: share of the trace's %d input tokens", s.Trace.InputTokens),
		XName:    "policy", YName: "tokens", Categories: policyNames(s),
		Unit: " tokens", Decimals: 0, DetailUnit: " % of input", DetailDecimals: 2}
	sr := series{Name: "recomputed tokens"}
	for _, p := range s.Policies {
		sr.Values = append(sr.Values, float64(p.RecomputedTokens))
		sr.Detail = append(sr.Detail, round(100*ratio(p.RecomputedTokens, s.Trace.InputTokens)))
	}
	c.Series = append(c.Series, sr)
	return c
}

func ttftBarsChart(s *results.Summary) chart {
	return quantileBars(s, "ttft_quantiles", "Time to first token: p50 / p90 / p99", "TTFT (ms)",
		func(p *results.Policy) *results.Quantiles { return p.TTFTms })
}

// quantileBars draws p50/p90/p99 of one latency of each policy, from
// its histogram in summary.json.
func quantileBars(s *results.Summary, id, title, yname string, get func(p *results.Policy) *results.Quantiles) chart {
	c := chart{ID: id, Kind: kindBar, Title: title, Subtitle: "from each policy's latency histogram",
		XName: "policy", YName: yname, Categories: policyNames(s), Unit: " ms", Decimals: 3}
	for _, q := range []struct {
		name string
		f    func(results.Quantiles) float64
	}{{"p50", func(q results.Quantiles) float64 { return q.P50 }},
		{"p90", func(q results.Quantiles) float64 { return q.P90 }},
		{"p99", func(q results.Quantiles) float64 { return q.P99 }}} {
		sr := series{Name: q.name}
		for i := range s.Policies {
			sr.Values = append(sr.Values, round(q.f(get(&s.Policies[i]).OrNaN())))
		}
		c.Series = append(c.Series, sr)
	}
	return c
}

// tpotE2EBars are TPOT's and end-to-end latency's quantile charts, each
// where some policy has that latency (summaries of older kvsims have
// neither).
func tpotE2EBars(s *results.Summary) []chart {
	var out []chart
	for _, q := range []struct {
		id, title, yname string
		get              func(p *results.Policy) *results.Quantiles
	}{
		{"tpot_quantiles", "Time per output token: p50 / p90 / p99", "TPOT (ms)",
			func(p *results.Policy) *results.Quantiles { return p.TPOTms }},
		{"e2e_quantiles", "End-to-end latency: p50 / p90 / p99", "arrival to last token (ms)",
			func(p *results.Policy) *results.Quantiles { return p.E2Ems }},
	} {
		for i := range s.Policies {
			if q.get(&s.Policies[i]) != nil {
				out = append(out, quantileBars(s, q.id, q.title, q.yname, q.get))
				break
			}
		}
	}
	return out
}

// cdf returns at most n points of the empirical CDF of v (x ascending,
// y in percent), always keeping the first and last sample.
func cdf(v []float64, n int) (x, y []float64) {
	s := slices.Clone(v)
	sort.Float64s(s)
	m := len(s)
	if m == 0 {
		return nil, nil
	}
	k := min(m, n)
	for i := 0; i < k; i++ {
		j := i
		if k < m {
			j = int(int64(i) * int64(m-1) / int64(k-1))
		}
		x = append(x, round(max(s[j], minLogTTFTms)))
		y = append(y, round(100*float64(j+1)/float64(m)))
	}
	return x, y
}

// ttftCDFChart needs per-request TTFTs (requests.csv); ok is false
// without any.
func ttftCDFChart(s *results.Summary, lat *latencies) (c chart, ok bool) {
	c = chart{ID: "ttft_cdf", Kind: kindLine, Title: "Time to first token: CDF",
		Subtitle: fmt.Sprintf("share of requests with TTFT ≤ x (log scale; rejected requests left out; at most %d points per policy)", maxCDFPoints),
		XName:    "TTFT (ms)", YName: "requests (%)", XLog: true, YMax: 100,
		Unit: " %", Decimals: 2, XUnit: " ms", XDecimals: 3}
	return cdfChart(c, s, lat, func(l *latencies) map[string][]float64 { return l.TTFT })
}

// tpotCDFChart is the TTFT CDF's companion for decoding: per-request TPOT
// from requests.csv; ok is false without any (no file, a file of an older
// kvsim, or no request with 2 or more output tokens).
func tpotCDFChart(s *results.Summary, lat *latencies) (c chart, ok bool) {
	c = chart{ID: "tpot_cdf", Kind: kindLine, Title: "Time per output token: CDF",
		Subtitle: fmt.Sprintf("share of requests with TPOT ≤ x (log scale; requests with 2 or more output tokens; at most %d points per policy)", maxCDFPoints),
		XName:    "TPOT (ms)", YName: "requests (%)", XLog: true, YMax: 100,
		Unit: " %", Decimals: 2, XUnit: " ms", XDecimals: 3}
	return cdfChart(c, s, lat, func(l *latencies) map[string][]float64 { return l.TPOT })
}

func cdfChart(c chart, s *results.Summary, lat *latencies, get func(*latencies) map[string][]float64) (chart, bool) {
	if lat == nil {
		return c, false
	}
	m := get(lat)
	for _, p := range s.Policies {
		if len(m[p.Name]) == 0 {
			continue
		}
		x, y := cdf(m[p.Name], maxCDFPoints)
		c.Series = append(c.Series, series{Name: p.Name, X: x, Y: y})
	}
	return c, len(c.Series) > 0
}

func bytesChart(s *results.Summary) chart {
	c := chart{ID: "bytes_moved", Kind: kindBar, Title: "Bytes moved per link",
		Subtitle: "each direction of a link counted apart; in brackets: exact bytes",
		XName:    "policy", YName: "moved (GiB)", Categories: policyNames(s),
		Unit: " GiB", Decimals: 2, DetailUnit: " B"}
	for _, l := range linkNames(s) {
		if !isLink(s, l) {
			continue // a shared tier's pipe: its bytes are its links'
		}
		sr := series{Name: l}
		for _, p := range s.Policies {
			b := p.BytesMoved[l]
			if b == 0 {
				b = p.Links[l].Bytes
			}
			sr.Values = append(sr.Values, round(float64(b)/(1<<30)))
			sr.Detail = append(sr.Detail, float64(b))
		}
		c.Series = append(c.Series, sr)
	}
	return c
}

// purposes are the reasons bytes move, as summary.json names them.
var purposes = []struct{ key, label string }{
	{"load", "load (promotion into HBM)"}, {"demote", "demotion"},
	{"write_through", "write-through"}, {"prefetch", "prefetch"},
}

// purposeChart stacks each policy's traffic by why it moved: what a write
// or prefetch policy costs in bandwidth. Absent from summaries that
// predate the field.
func purposeChart(s *results.Summary) (chart, bool) {
	c := chart{ID: "bytes_purpose", Kind: kindBar, Stack: true, Title: "Bytes moved by purpose",
		Subtitle: "each move counted once, however many hops; in brackets: exact bytes",
		XName:    "policy", YName: "moved (GiB)", Categories: policyNames(s),
		Unit: " GiB", Decimals: 2, DetailUnit: " B"}
	moved := false
	for _, pu := range purposes {
		sr := series{Name: pu.label}
		for _, p := range s.Policies {
			b := p.BytesByPurpose[pu.key]
			moved = moved || b > 0
			sr.Values = append(sr.Values, round(float64(b)/(1<<30)))
			sr.Detail = append(sr.Detail, float64(b))
		}
		c.Series = append(c.Series, sr)
	}
	return c, moved
}

// downsample averages runs of k samples so a line has at most n points;
// each point sits at the time of the last sample it covers.
func downsample(t, v []float64, n int) (x, y []float64, k int) {
	m := min(len(t), len(v))
	k = max((m+n-1)/n, 1)
	for i := 0; i < m; i += k {
		j := min(i+k, m)
		sum := 0.0
		for _, u := range v[i:j] {
			sum += u
		}
		x = append(x, round(t[j-1]))
		y = append(y, round(sum/float64(j-i)))
	}
	return x, y, k
}

func ints(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func scale(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}

// timeCharts are small multiples over virtual time: one chart per tier,
// per link and for the request queue, with a line per policy.
func timeCharts(s *results.Summary) []chart {
	if len(s.Series) == 0 {
		return nil
	}
	// Series in policy order, then any others by name.
	var ts []results.TimeSeries
	order := map[string]int{}
	for i, p := range s.Policies {
		order[p.Name] = i
	}
	ts = slices.Clone(s.Series)
	sort.SliceStable(ts, func(a, b int) bool {
		ia, oka := order[ts[a].Policy]
		ib, okb := order[ts[b].Policy]
		if oka != okb {
			return oka
		}
		if oka {
			return ia < ib
		}
		return ts[a].Policy < ts[b].Policy
	})
	k := 1
	line := func(name string, t, v []float64) series {
		x, y, kk := downsample(t, v, maxSeriesPoints)
		k = max(k, kk)
		return series{Name: name, X: x, Y: y}
	}
	sub := func(what string) string {
		if k > 1 {
			return fmt.Sprintf("%s; each point is the mean of %d samples", what, k)
		}
		return what
	}
	var out []chart
	// overTime draws one line per policy of what get picks from each
	// policy's series, as a percentage.
	overTime := func(id, title, yname, subtitle string, get func(x *results.TimeSeries) ([]float64, bool)) {
		k = 1
		c := chart{ID: id, Kind: kindLine, Title: title, XName: "virtual time (s)", YName: yname, YMax: 100,
			Unit: " %", Decimals: 2, XUnit: " s", XDecimals: 1}
		for xi := range ts {
			if u, ok := get(&ts[xi]); ok {
				c.Series = append(c.Series, line(ts[xi].Policy, ts[xi].TimesS, scale(u, 100)))
			}
		}
		c.Subtitle = sub(subtitle)
		if len(c.Series) > 0 {
			out = append(out, c)
		}
	}
	for i, tier := range tierNames(s) {
		overTime(fmt.Sprintf("occupancy_%d", i), "Occupancy of tier "+tier, "used (% of capacity)",
			"bytes held in "+tier+" over its capacity, sampled over virtual time",
			func(x *results.TimeSeries) ([]float64, bool) { u, ok := x.TierUsed[tier]; return u, ok })
	}
	for i, l := range linkNames(s) {
		title, what := "Utilisation of link "+l, "the link"
		if !isLink(s, l) {
			tier := strings.TrimSuffix(l, " (shared)")
			title, what = "Utilisation of tier "+tier+"'s shared pipe", tier+"'s pipe (all its links share it)"
		}
		overTime(fmt.Sprintf("link_util_%d", i), title, "busy (% of time)",
			"share of each sampling interval "+what+" spent moving bytes",
			func(x *results.TimeSeries) ([]float64, bool) { u, ok := x.LinkUtil[l]; return u, ok })
	}
	for _, q := range []struct{ id, title, what string }{
		{"queued", "Queued requests", "requests waiting for HBM space"},
		{"running", "Running requests", "requests admitted and not yet finished"},
	} {
		k = 1
		c := chart{ID: q.id, Kind: kindLine, Title: q.title + " over time",
			XName: "virtual time (s)", YName: "requests", Unit: " requests", XUnit: " s", XDecimals: 1}
		for _, x := range ts {
			v := x.Queued
			if q.id == "running" {
				v = x.Running
			}
			if len(v) > 0 {
				c.Series = append(c.Series, line(x.Policy, x.TimesS, ints(v)))
			}
		}
		c.Subtitle = sub(q.what)
		if k > 1 {
			c.Decimals = 1
		}
		if len(c.Series) > 0 {
			out = append(out, c)
		}
	}
	// The engine's view: what each step computed, and the preemptions
	// that HBM running out forced. Left out where every value is 0 (the
	// simple engine has no steps; a run may preempt nothing).
	for _, q := range []struct {
		id, title, yname, unit, what string
		dec                          int
		get                          func(x *results.TimeSeries) []float64
	}{
		{"batch_prefill", "Batch composition: prefill tokens per step", "tokens per step", " tokens", "mean prompt (and recomputed) tokens computed per engine step over each sampling interval", 1,
			func(x *results.TimeSeries) []float64 { return x.PrefillTokens }},
		{"batch_decode", "Batch composition: decoding sequences per step", "sequences per step", " sequences", "mean sequences generating a token per engine step over each sampling interval", 2,
			func(x *results.TimeSeries) []float64 { return x.DecodeSeqs }},
		{"preemptions", "Preemptions over time", "preemptions (cumulative)", " preemptions", "running requests that lost their HBM and were re-queued, counted since the start", 0,
			func(x *results.TimeSeries) []float64 { return int64s(x.Preemptions) }},
	} {
		k = 1
		c := chart{ID: q.id, Kind: kindLine, Title: q.title, XName: "virtual time (s)", YName: q.yname,
			Unit: q.unit, Decimals: q.dec, XUnit: " s", XDecimals: 1}
		nonzero := false
		for xi := range ts {
			v := q.get(&ts[xi])
			if len(v) == 0 {
				continue
			}
			c.Series = append(c.Series, line(ts[xi].Policy, ts[xi].TimesS, v))
			nonzero = nonzero || slices.ContainsFunc(v, func(x float64) bool { return x != 0 })
		}
		c.Subtitle = sub(q.what)
		if k > 1 && c.Decimals == 0 {
			c.Decimals = 1
		}
		if nonzero {
			out = append(out, c)
		}
	}
	return out
}

func int64s(v []int64) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// scenarioCharts is every chart of a scenario's report, in page order.
// lat may be nil (no requests.csv): the CDFs are then left out.
//
// Charts sit two to a row: the hit ratio beside recomputed tokens, in a
// cluster run requests per instance beside its hit ratio, then the TTFT
// CDF beside the TPOT CDF. A cluster whose nodes exchanged KV adds its
// NICs' send and receive utilisation after the per-instance pair.
func scenarioCharts(s *results.Summary, lat *latencies) []chart {
	out := []chart{hitChart(s), recomputeChart(s)}
	if n := clusterSize(s); n > 0 { // a cluster run: how the router spread the work
		out = append(out, instanceRequestsChart(s, n), instanceHitChart(s, n))
		if c, ok := regretChart(s); ok {
			out = append(out, c)
		}
		if hasNICs(s) { // a pair: sending beside receiving
			out = append(out, nicCharts(s)...)
		}
	}
	if c, ok := ttftCDFChart(s, lat); ok {
		out = append(out, c)
	}
	if c, ok := tpotCDFChart(s, lat); ok {
		out = append(out, c)
	}
	if s.NoneCompleted() == "" { // else there is no latency to draw
		out = append(out, ttftBarsChart(s))
		out = append(out, tpotE2EBars(s)...)
	}
	out = append(out, bytesChart(s))
	if c, ok := purposeChart(s); ok {
		out = append(out, c)
	}
	out = append(out, ledgerCharts(s)...)
	return append(out, timeCharts(s)...)
}

// regretChart draws each policy's routing regret over arrival time: the
// mean blocks of cached prefix a decision gave up (summary routing.over_time).
func regretChart(s *results.Summary) (chart, bool) {
	c := chart{ID: "regret", Kind: kindLine, Title: "Routing regret over time",
		Subtitle: "blocks of cached prefix the chosen instance lacked against the best one, mean per interval of arrivals",
		XName:    "virtual time (s)", YName: "blocks", Unit: " blocks", Decimals: 2, XUnit: " s", XDecimals: 1}
	for i := range s.Policies {
		p := &s.Policies[i]
		if p.Routing == nil || p.Routing.OverTime == nil {
			continue
		}
		ot := p.Routing.OverTime
		c.Series = append(c.Series, series{Name: p.Name, X: ot.TimesS, Y: ot.MeanBlocks})
	}
	return c, len(c.Series) > 0
}

// indexCharts compares every scenario x policy: one horizontal bar per
// pair, coloured by scenario.
func indexCharts(ss []*results.Summary) []chart {
	var cats []string
	for _, s := range ss {
		for _, p := range s.Policies {
			cats = append(cats, s.Scenario+" / "+p.Name)
		}
	}
	mk := func(id, title, sub, xname, unit string, dec int, top float64, f func(p *results.Policy) float64) chart {
		c := chart{ID: id, Kind: kindHBar, Title: title, Subtitle: sub, XName: xname, YName: "scenario / policy",
			Categories: cats, Stack: true, YMax: top, Unit: unit, Decimals: dec, Height: 120 + 26*len(cats)}
		at := 0
		for _, s := range ss {
			sr := series{Name: s.Scenario, Values: make(nums, len(cats))}
			for i := range sr.Values {
				sr.Values[i] = math.NaN()
			}
			for i := range s.Policies {
				sr.Values[at] = round(f(&s.Policies[i]))
				at++
			}
			c.Series = append(c.Series, sr)
		}
		return c
	}
	out := append(sweepCharts(ss), []chart{
		mk("index_hit_ratio", "Hit ratio by scenario and policy", "block accesses served from any tier", "hit ratio (%)", " %", 2, 100,
			func(p *results.Policy) float64 { return 100 * p.HitRatio }),
		mk("index_ttft_p99", "TTFT p99 by scenario and policy", "99th percentile of time to first token", "TTFT p99 (ms)", " ms", 3, 0,
			func(p *results.Policy) float64 { return p.TTFTms.OrNaN().P99 }),
	}...)
	for _, s := range ss {
		for i := range s.Policies {
			if s.Policies[i].TPOTms != nil { // results of older kvsims have none
				return append(out, mk("index_tpot_p99", "TPOT p99 by scenario and policy", "99th percentile of time per output token",
					"TPOT p99 (ms)", " ms", 3, 0, func(p *results.Policy) float64 { return p.TPOTms.OrNaN().P99 }))
			}
		}
	}
	return out
}

// sweepCharts draws, for the points of one kvsim sweep, each policy's hit
// ratio and TTFT across the values of the key, in sweep order. Anything
// else (a run of several scenarios) gets none.
func sweepCharts(ss []*results.Summary) []chart {
	if len(ss) < 2 || ss[0].Sweep == nil {
		return nil
	}
	key := ss[0].Sweep.Key
	var values []string
	for _, s := range ss {
		if s.Sweep == nil || s.Sweep.Key != key {
			return nil
		}
		values = append(values, s.Sweep.Value)
	}
	var names []string
	for _, s := range ss {
		for _, p := range s.Policies {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	mk := func(id, title, yname, unit string, dec int, top float64, f func(p *results.Policy) float64) chart {
		c := chart{ID: id, Kind: kindBar, Title: title + " across the sweep of " + key,
			Subtitle: "one bar per policy at each value of " + key, XName: key, YName: yname,
			Categories: values, YMax: top, Unit: unit, Decimals: dec}
		for _, n := range names {
			sr := series{Name: n}
			for _, s := range ss {
				v := math.NaN()
				for i := range s.Policies {
					if s.Policies[i].Name == n {
						v = round(f(&s.Policies[i]))
					}
				}
				sr.Values = append(sr.Values, v)
			}
			c.Series = append(c.Series, sr)
		}
		return c
	}
	return []chart{
		mk("sweep_ttft_p99", "TTFT p99", "TTFT p99 (ms)", " ms", 3, 0, func(p *results.Policy) float64 { return p.TTFTms.OrNaN().P99 }),
		mk("sweep_ttft_p50", "TTFT p50", "TTFT p50 (ms)", " ms", 3, 0, func(p *results.Policy) float64 { return p.TTFTms.OrNaN().P50 }),
		mk("sweep_hit_ratio", "Hit ratio", "hit ratio (%)", " %", 2, 100, func(p *results.Policy) float64 { return 100 * p.HitRatio }),
	}
}

// Curve is one policy's miss-ratio curve (from kvsim mrc).
type Curve struct {
	Policy     string
	SizeBlocks []int
	MissRatio  []float64
}

func mrcChart(title string, curves []Curve) chart {
	c := chart{ID: "mrc", Kind: kindLine, Title: title, Subtitle: "miss ratio against cache size, one line per policy",
		XName: "cache size (blocks)", YName: "miss ratio (%)", YMax: 100,
		Unit: " %", Decimals: 3, XUnit: " blocks"}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, cv := range curves {
		sr := series{Name: cv.Policy}
		for i := range min(len(cv.SizeBlocks), len(cv.MissRatio)) {
			x := float64(cv.SizeBlocks[i])
			sr.X = append(sr.X, x)
			sr.Y = append(sr.Y, round(100*cv.MissRatio[i]))
			lo, hi = min(lo, x), max(hi, x)
		}
		c.Series = append(c.Series, sr)
	}
	// Sizes spanning two decades or more read better on a log axis.
	c.XLog = lo > 0 && hi/lo >= 100
	return c
}

// clusterSize is the number of instances of a cluster run: 0 without
// [cluster] (summaries of single runs and of older kvsims).
func clusterSize(s *results.Summary) int {
	n := 0
	for _, p := range s.Policies {
		n = max(n, len(p.Instances))
		if p.Router != nil {
			n = max(n, len(p.Router.Decisions))
		}
	}
	return n
}

// routed is how many requests the router sent instance i.
func routed(p *results.Policy, i int) int64 {
	if p.Router != nil && i < len(p.Router.Decisions) {
		return p.Router.Decisions[i]
	}
	if i < len(p.Instances) {
		return p.Instances[i].Chosen
	}
	return 0
}

// poolTier is the name of the tier a cluster's nodes pool, "" for none.
func poolTier(s *results.Summary) string {
	for _, t := range s.Tiers {
		if t.Scope == "cluster" {
			return t.Name
		}
	}
	for _, p := range s.Policies {
		if p.Pool != nil {
			return p.Pool.Tier
		}
	}
	return ""
}

// source is one column of an instance's hits: a tier, or the pooled
// tier's hits on the reader's node or on another.
type source struct {
	name  string
	count func(in *results.Instance) int64
}

// instanceSources lists where an instance's blocks came from, in
// hierarchy order: each tier, the pooled one split into the copies on the
// reader's node and those on another (when the summary has sources).
func instanceSources(s *results.Summary) []source {
	pool := poolTier(s)
	var out []source
	for _, t := range tierNames(s) {
		if t == pool {
			out = append(out,
				source{t + " (this node)", func(in *results.Instance) int64 {
					if in.Sources == nil {
						return in.Hits[t]
					}
					return in.Sources.PoolLocal
				}},
				source{t + " (other node)", func(in *results.Instance) int64 {
					if in.Sources == nil {
						return 0
					}
					return in.Sources.PoolRemote
				}})
			continue
		}
		out = append(out, source{t, func(in *results.Instance) int64 { return in.Hits[t] }})
	}
	return out
}

// sourceShare is the share of in's block accesses that came from src:
// from its sources when summary.json has them, else (older summaries give
// the hit ratio and the hits by tier, not the accesses) the ratio split in
// proportion to the hits.
func sourceShare(in *results.Instance, src source) float64 {
	if in.Sources != nil {
		return ratio(src.count(in), in.Sources.Total())
	}
	var hits int64
	for _, h := range in.Hits {
		hits += h
	}
	if hits == 0 {
		return 0
	}
	return in.HitRatio * float64(src.count(in)) / float64(hits)
}

// recomputedShare is the share of in's block accesses found nowhere.
func recomputedShare(in *results.Instance) float64 {
	if in.Sources != nil {
		return ratio(in.Sources.Recomputed, in.Sources.Total())
	}
	return max(1-in.HitRatio, 0)
}

// instanceRequestsChart: how a router spread the requests, one bar per
// policy at each instance.
func instanceRequestsChart(s *results.Summary, n int) chart {
	c := chart{ID: "instance_requests", Kind: kindBar, Title: "Requests routed per instance",
		Subtitle: "requests the router sent each instance; in brackets: share of the policy's routed requests",
		XName:    "instance", YName: "requests", Unit: " requests", Decimals: 0,
		DetailUnit: " % of routed", DetailDecimals: 1}
	for i := range n {
		c.Categories = append(c.Categories, strconv.Itoa(i))
	}
	for pi := range s.Policies {
		p := &s.Policies[pi]
		var total int64
		for i := range n {
			total += routed(p, i)
		}
		sr := series{Name: p.Name}
		for i := range n {
			r := routed(p, i)
			sr.Values = append(sr.Values, float64(r))
			sr.Detail = append(sr.Detail, round(100*ratio(r, total)))
		}
		c.Series = append(c.Series, sr)
	}
	return c
}

// instanceHitChart stacks each instance's block accesses by where they
// came from (each tier, the pooled one split by the node holding the
// copy, or recomputed), one bar per policy and instance.
func instanceHitChart(s *results.Summary, n int) chart {
	title, sub := "Hit ratio per instance by tier", "share of each instance's block accesses served from each tier; in brackets: blocks"
	if pool := poolTier(s); pool != "" {
		title = "Hit ratio per instance by source"
		sub = "share of each instance's block accesses served from each tier, the pool's from a copy on the reader's node or another's; in brackets: blocks"
	}
	c := chart{ID: "instance_hit_ratio", Kind: kindBar, Title: title, Subtitle: sub,
		XName: "policy / instance", YName: "block accesses (%)", YMax: 100, Stack: true,
		Unit: " %", Decimals: 2, DetailUnit: " blocks"}
	var cols []*results.Instance // nil: no figures for that instance
	for pi := range s.Policies {
		p := &s.Policies[pi]
		for i := range n {
			c.Categories = append(c.Categories, p.Name+" / "+strconv.Itoa(i))
			var in *results.Instance
			if i < len(p.Instances) {
				in = &p.Instances[i]
			}
			cols = append(cols, in)
		}
	}
	for _, src := range instanceSources(s) {
		sr := series{Name: src.name}
		for _, col := range cols {
			v, d := math.NaN(), math.NaN()
			if col != nil {
				v, d = round(100*sourceShare(col, src)), float64(src.count(col))
			}
			sr.Values = append(sr.Values, v)
			sr.Detail = append(sr.Detail, d)
		}
		c.Series = append(c.Series, sr)
	}
	rest := series{Name: "recomputed"}
	for _, col := range cols {
		v := math.NaN()
		if col != nil {
			v = round(100 * recomputedShare(col))
		}
		rest.Values = append(rest.Values, v)
	}
	c.Series = append(c.Series, rest)
	return c
}

// hasNICs reports whether any policy's run sent bytes between nodes.
func hasNICs(s *results.Summary) bool {
	for _, p := range s.Policies {
		if len(p.NICs) > 0 {
			return true
		}
	}
	return false
}

// nicCharts draw each node's NIC busy share, sending and receiving, one
// bar per policy at each node; the brackets give the bytes.
func nicCharts(s *results.Summary) []chart {
	n := 0
	for _, p := range s.Policies {
		n = max(n, len(p.NICs))
	}
	var out []chart
	for _, d := range []struct{ id, dir, verb string }{{"nic_send", "send", "sent"}, {"nic_recv", "receive", "received"}} {
		c := chart{ID: d.id, Kind: kindBar, Title: "NIC " + d.dir + " utilisation per node",
			Subtitle: "share of the run each node's NIC " + d.dir + " side moved bytes; in brackets: GB " + d.verb,
			XName:    "node", YName: "busy (%)", Unit: " %", Decimals: 2, DetailUnit: " GB", DetailDecimals: 2}
		for i := range n {
			c.Categories = append(c.Categories, strconv.Itoa(i))
		}
		for pi := range s.Policies {
			p := &s.Policies[pi]
			sr := series{Name: p.Name}
			for i := range n {
				v, b := math.NaN(), math.NaN()
				if i < len(p.NICs) {
					if nc := p.NICs[i]; d.id == "nic_send" {
						v, b = nc.SendBusyShare, float64(nc.SendBytes)
					} else {
						v, b = nc.RecvBusyShare, float64(nc.RecvBytes)
					}
					v, b = round(100*v), round(b/1e9)
				}
				sr.Values = append(sr.Values, v)
				sr.Detail = append(sr.Detail, b)
			}
			c.Series = append(c.Series, sr)
		}
		out = append(out, c)
	}
	return out
}
