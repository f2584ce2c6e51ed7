package report

import (
	"bytes"
	"html/template"
	"strconv"
)

// TimelineRow is one bar of an explain timeline (a point when From == To):
// times in ns, Lane its row ("request", "loads", a tier's name).
type TimelineRow struct {
	Lane     string
	From, To int64
	Label    string
}

// TimelinePage renders kvsim explain's timeline as a self-contained page:
// an SVG of bars, one row per lane, and the text beneath. No script, so it
// needs no network.
func TimelinePage(runID, title, text string, rows []TimelineRow) []byte {
	type bar struct {
		X, Y, W float64
		Label   string
		Tip     string
	}
	const width, rowH, left = 1000.0, 18.0, 90.0
	var lo, hi int64 = -1, 0
	for _, r := range rows {
		if lo < 0 || r.From < lo {
			lo = r.From
		}
		hi = max(hi, r.To)
	}
	span := float64(max(hi-lo, 1))
	lanes := map[string]int{}
	var names []string
	var bars []bar
	for _, r := range rows {
		i, ok := lanes[r.Lane]
		if !ok {
			i = len(names)
			lanes[r.Lane] = i
			names = append(names, r.Lane)
		}
		x := left + float64(r.From-lo)/span*(width-left-10)
		w := max(float64(r.To-r.From)/span*(width-left-10), 2)
		tip := r.Label + ": " + msText(r.From) + " - " + msText(r.To)
		bars = append(bars, bar{X: x, Y: float64(i)*rowH*1.5 + 20, W: w, Label: r.Label, Tip: tip})
	}
	type lane struct {
		Y    float64
		Name string
	}
	var ls []lane
	for i, n := range names {
		ls = append(ls, lane{float64(i)*rowH*1.5 + 32, n})
	}
	var b bytes.Buffer
	_ = timelineTpl.Execute(&b, map[string]any{"RunID": runID, "Title": title, "Text": text, "Bars": bars, "Lanes": ls,
		"H": float64(len(names))*rowH*1.5 + 40, "W": width, "From": msText(max(lo, 0)), "To": msText(hi)})
	return b.Bytes()
}

func msText(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) + " ms" }

var timelineTpl = template.Must(template.New("timeline").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="generator" content="kvsim">
{{with .RunID}}<meta name="kvsim-run-id" content="{{.}}">
{{end -}}
<title>kvsim explain: {{.Title}}</title>
<style>body{font-family:sans-serif;margin:1em}pre{font-size:12px}rect{fill:#4c78a8}text{font-size:11px}</style>
</head>
<body>
<h1>kvsim explain: {{.Title}}</h1>
<p>{{.From}} to {{.To}} (hover a bar for its times)</p>
<svg width="{{.W}}" height="{{.H}}" role="img">
{{range .Lanes}}<text x="4" y="{{.Y}}">{{.Name}}</text>
{{end}}{{range .Bars}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="16"><title>{{.Tip}}</title></rect>
{{end}}</svg>
<pre>{{.Text}}</pre>
</body>
</html>
`))
