package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"
)

const (
	chartWidth  = 660 // two charts side by side in a 1400 px window
	chartHeight = 420
)

// jsSafe drops what would break a JS function embedded by go-echarts: it
// travels as a JSON string whose escapes (\" and \\) are then unwrapped
// as code, so a function may hold neither quotes nor backslashes.
var jsSafe = strings.NewReplacer(`"`, "", `\`, "", "'", "", "\n", " ")

func jsStr(s string) string { return "'" + jsSafe.Replace(s) + "'" }

// detailJS is a JS array literal of per-series, per-category numbers.
func detailJS(ss []series) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		if s.Detail == nil {
			b.WriteString("null")
			continue
		}
		b.WriteByte('[')
		for j, x := range s.Detail {
			if j > 0 {
				b.WriteByte(',')
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				b.WriteString("null")
			} else {
				b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
			}
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
	return b.String()
}

// barTooltip lists every series' value at the hovered category, with the
// exact figure behind it (counts, bytes) in brackets when there is one.
func barTooltip(c *chart) string {
	return `function (ps) {
	if (!Array.isArray(ps)) { ps = [ps]; }
	var E = echarts.format.encodeHTML, D = ` + detailJS(c.Series) + `, out = [];
	for (var i = 0; i < ps.length; i++) {
		var p = ps[i], v = p.value;
		if (v === undefined || v === null || v === '-') { continue; }
		var s = p.marker + E(p.seriesName) + ': <b>' + Number(v).toFixed(` + strconv.Itoa(c.Decimals) + `) + ` + jsStr(c.Unit) + ` + '</b>';
		var d = D[p.seriesIndex];
		if (d && d[p.dataIndex] !== null) { s += ' (' + Number(d[p.dataIndex]).toFixed(` + strconv.Itoa(c.DetailDecimals) + `) + ` + jsStr(c.DetailUnit) + ` + ')'; }
		out.push(s);
	}
	return (ps.length ? E(ps[0].name) + '<br/>' : '') + out.join('<br/>');
}`
}

// lineTooltip gives each line's own point: CDF lines do not share x values.
func lineTooltip(c *chart) string {
	return `function (ps) {
	if (!Array.isArray(ps)) { ps = [ps]; }
	var E = echarts.format.encodeHTML, out = [];
	for (var i = 0; i < ps.length; i++) {
		var p = ps[i], v = p.value;
		if (!v) { continue; }
		out.push(p.marker + E(p.seriesName) + ': <b>' + Number(v[1]).toFixed(` + strconv.Itoa(c.Decimals) + `) + ` + jsStr(c.Unit) +
		` + '</b> at ' + Number(v[0]).toFixed(` + strconv.Itoa(c.XDecimals) + `) + ` + jsStr(c.XUnit) + `);
	}
	return out.join('<br/>');
}`
}

// scatterTooltip gives the hovered point's x and y.
func scatterTooltip(c *chart) string {
	return `function (p) {
	var E = echarts.format.encodeHTML, v = p.value;
	if (!v) { return ''; }
	return p.marker + E(p.seriesName) + ': ' + ` + jsStr(c.XName) + ` + ' <b>' + Number(v[0]).toFixed(` + strconv.Itoa(c.XDecimals) + `) + ` + jsStr(c.XUnit) +
		` + '</b>, ' + ` + jsStr(c.YName) + ` + ' <b>' + Number(v[1]).toFixed(` + strconv.Itoa(c.Decimals) + `) + ` + jsStr(c.Unit) + ` + '</b>';
}`
}

func scatterData(s series) []opts.ScatterData {
	out := make([]opts.ScatterData, 0, len(s.X))
	for _, d := range lineData(s) {
		out = append(out, opts.ScatterData{Value: d.Value})
	}
	return out
}

func barData(v nums) []opts.BarData {
	out := make([]opts.BarData, len(v))
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out[i] = opts.BarData{Value: "-"} // ECharts' "no value"
		} else {
			out[i] = opts.BarData{Value: x}
		}
	}
	return out
}

func lineData(s series) []opts.LineData {
	out := make([]opts.LineData, 0, len(s.X))
	for i := range min(len(s.X), len(s.Y)) {
		x, y := s.X[i], s.Y[i]
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
			continue // go-echarts drops the whole option on a JSON error
		}
		out = append(out, opts.LineData{Value: []float64{x, y}})
	}
	return out
}

// snippet renders a chart as go-echarts' element and script.
func (c *chart) snippet() render.ChartSnippet {
	h := c.Height
	if h == 0 {
		h = chartHeight
	}
	w := chartWidth
	if c.Kind == kindHBar {
		w = 2*chartWidth + 20
	}
	var ymax any
	if c.YMax > 0 {
		ymax = c.YMax
	}
	global := []charts.GlobalOpts{
		charts.WithInitializationOpts(opts.Initialization{ChartID: "kvsim_" + c.ID,
			Width: strconv.Itoa(w) + "px", Height: strconv.Itoa(h) + "px"}),
		charts.WithAnimation(false),
		charts.WithTitleOpts(opts.Title{Title: c.Title, Subtitle: c.Subtitle, Left: "10"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Bottom: "0"}),
		charts.WithGridOpts(opts.Grid{Left: "50", Right: "40", Top: "80", Bottom: "70", ContainLabel: opts.Bool(true)}),
	}
	switch c.Kind {
	case kindLine:
		xt := "value"
		if c.XLog {
			xt = "log"
		}
		global = append(global,
			charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis",
				Formatter: opts.FuncOpts(lineTooltip(c)), AxisPointer: &opts.AxisPointer{Type: "line"}}),
			charts.WithXAxisOpts(opts.XAxis{Type: xt, Name: c.XName, NameLocation: "middle", NameGap: 30, Scale: opts.Bool(!c.XLog)}),
			charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: c.YName, Min: 0, Max: ymax}))
		l := charts.NewLine()
		l.SetGlobalOptions(global...)
		for _, s := range c.Series {
			l.AddSeries(s.Name, lineData(s), charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
		}
		return l.RenderSnippet()
	case kindScatter:
		global = append(global,
			charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item", Formatter: opts.FuncOpts(scatterTooltip(c))}),
			charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: c.XName, NameLocation: "middle", NameGap: 30, Scale: opts.Bool(true)}),
			charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: c.YName, Scale: opts.Bool(true)}))
		sc := charts.NewScatter()
		sc.SetGlobalOptions(global...)
		for _, s := range c.Series {
			if s.Line {
				l := charts.NewLine()
				l.AddSeries(s.Name, lineData(s), charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
				sc.Overlap(l)
				continue
			}
			sc.AddSeries(s.Name, scatterData(s), charts.WithScatterChartOpts(opts.ScatterChart{SymbolSize: 5}))
		}
		return sc.RenderSnippet()
	case kindHBar:
		global = append(global,
			charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis",
				Formatter: opts.FuncOpts(barTooltip(c)), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
			charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: c.XName, NameLocation: "middle", NameGap: 30, Max: ymax}),
			// On an inverted axis "start" is the top.
			charts.WithYAxisOpts(opts.YAxis{Type: "category", Name: c.YName, NameLocation: "start", Inverse: opts.Bool(true)}))
	default:
		global = append(global,
			charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis",
				Formatter: opts.FuncOpts(barTooltip(c)), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
			charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: c.XName, NameLocation: "middle", NameGap: 30}),
			charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: c.YName, Max: ymax}))
	}
	b := charts.NewBar()
	b.SetGlobalOptions(global...)
	b.SetXAxis(c.Categories)
	if c.Kind == kindHBar {
		b.XYReversal()
	}
	for _, s := range c.Series {
		var so []charts.SeriesOpts
		if c.Stack {
			so = append(so, charts.WithBarChartOpts(opts.BarChart{Stack: "total"}))
		}
		b.AddSeries(s.Name, barData(s.Values), so...)
	}
	return b.RenderSnippet()
}
