package validate

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"kvsim/report"
)

// Table is the comparison as rows of text: one per metric, each figure
// as "measured / predicted". The command prints it; the page shows it.
func (r *Result) Table() (head []string, rows [][]string) {
	head = []string{"metric", "requests", "mean ms (real / kvsim)", "mean error", "p50 ms", "p90 ms", "p99 ms", "MAPE", "bias", "KS"}
	for _, m := range r.Metrics() {
		x := m.M
		rows = append(rows, []string{m.Name, strconv.Itoa(x.Requests),
			pair(x.Measured.Mean, x.Predicted.Mean), signedPct(x.MeanErrorPct),
			pair(x.Measured.P50, x.Predicted.P50), pair(x.Measured.P90, x.Predicted.P90), pair(x.Measured.P99, x.Predicted.P99),
			pct(x.MAPEPct), signedPct(x.BiasPct), fixed(x.KS, 3)})
	}
	return head, rows
}

func fixed(x Num, dec int) string {
	if math.IsNaN(float64(x)) {
		return "-"
	}
	return strconv.FormatFloat(float64(x), 'f', dec, 64)
}

// msText prints ms with 2 decimals below 100 ms (TPOT) and 1 above
// (TTFT, E2E).
func msText(x Num) string {
	if math.Abs(float64(x)) < 100 {
		return fixed(x, 2)
	}
	return fixed(x, 1)
}

func pair(m, p Num) string { return msText(m) + " / " + msText(p) }

func pct(x Num) string {
	if math.IsNaN(float64(x)) {
		return "-"
	}
	return fixed(x, 1) + "%"
}

func signedPct(x Num) string {
	if math.IsNaN(float64(x)) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", float64(x))
}

// Page renders the comparison as an HTML page (report.ValidationPage).
func (r *Result) Page(o report.Options) ([]byte, error) {
	title := fmt.Sprintf("kvsim validate: %s against %s", r.Scenario, r.Records.Path)
	if r.Title != "" {
		title = r.Title
	}
	v := report.Validation{Title: title}
	v.Facts = append(v.Facts,
		fmt.Sprintf("%d requests from %s (%s format)%s; kvsim's policy %s; %d preemptions in kvsim.", r.Records.Requests, r.Records.Path, r.Records.Format, failedText(r.Records.Failed), r.Policy, r.Preemptions),
		engineText(r.Engine))
	for _, w := range r.Warnings {
		v.Facts = append(v.Facts, "Warning: "+w)
	}
	v.Facts = append(v.Facts, "Mean error: (kvsim mean - measured mean) / measured mean. MAPE: mean of |kvsim - measured| / measured per request; bias: the same, signed. KS: the largest gap between the two CDFs (0 to 1).")
	v.Head, v.Rows = r.Table()
	for _, m := range []struct {
		id, name, title string
		get             func(q *Request) [2]Num
	}{{"ttft", "TTFT", "Time to first token", func(q *Request) [2]Num { return q.TTFTMs }},
		{"tpot", "TPOT", "Time per output token", func(q *Request) [2]Num { return q.TPOTMs }},
		{"e2e", "E2E", "End-to-end latency", func(q *Request) [2]Num { return q.E2EMs }}} {
		p := report.Paired{ID: m.id, Name: m.name, Title: m.title}
		for i := range r.PerRequest {
			v := m.get(&r.PerRequest[i])
			if math.IsNaN(float64(v[0])) || math.IsNaN(float64(v[1])) {
				continue
			}
			p.Measured, p.Predicted = append(p.Measured, float64(v[0])), append(p.Predicted, float64(v[1]))
		}
		v.Metrics = append(v.Metrics, p)
	}
	var b bytes.Buffer
	if err := report.ValidationPage(&b, v, o); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func failedText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d failed in the run and left out", n)
}

// engineText says which engine settings the run recorded beside the
// scenario's.
func engineText(e Engines) string {
	s := fmt.Sprintf("Scenario engine: tp %d, max_num_seqs %d, max_num_batched_tokens %d", e.Scenario.TP, e.Scenario.MaxNumSeqs, e.Scenario.MaxNumBatchedTokens)
	if e.Recorded == nil {
		return s + "; the records name no engine settings."
	}
	x := e.Recorded
	s += "; the run's:"
	if x.Model != "" {
		s += " " + x.Model
	}
	if x.Version != "" {
		s += " vLLM " + x.Version
	}
	return s + fmt.Sprintf(" tp %s, max_num_seqs %s, max_num_batched_tokens %s.", orUnknown(x.TP), orUnknown(x.MaxNumSeqs), orUnknown(x.MaxNumBatchedTokens))
}

// EngineText is engineText for the command's output.
func (r *Result) EngineText() string { return engineText(r.Engine) }

func orUnknown(n int) string {
	if n == 0 {
		return "?"
	}
	return strconv.Itoa(n)
}
