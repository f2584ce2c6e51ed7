package report

import (
	"bytes"
	"strings"
	"testing"
)

var testPaired = Paired{ID: "ttft", Name: "TTFT", Title: "Time to first token",
	Measured: []float64{100, 200, 400, 800}, Predicted: []float64{110, 190, 380, 900}}

// TestGoldenValidation pins a validation's charts: the two CDFs of a
// metric, and the scatter with its y = x line over the points' range.
func TestGoldenValidation(t *testing.T) {
	goldenCharts(t, "validation", []chart{pairedCDF(testPaired), pairedScatter(testPaired)})
}

func TestValidationPage(t *testing.T) {
	var b bytes.Buffer
	v := Validation{Title: "kvsim validate: x", Facts: []string{"a <fact>"}, Head: []string{"metric", "MAPE"},
		Rows: [][]string{{"TTFT", "5.0%"}}, Metrics: []Paired{testPaired}}
	if err := ValidationPage(&b, v, Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`<meta name="generator" content="kvsim">`, "kvsim_ttft_cdf", "kvsim_ttft_scatter", `"type":"scatter"`, `"y = x"`, "a &lt;fact&gt;", "5.0%"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
