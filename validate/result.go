package validate

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"strconv"
)

// Kind marks a validate result file, so kvsim can tell one it may replace.
const Kind = "kvsim-validate"

// Version is the layout of the result file.
const Version = 1

// Num is a float that marshals NaN (no value) as null.
type Num float64

func (x Num) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func (x *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*x = Num(math.NaN())
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*x = Num(f)
	return err
}

// Stat is one side of a metric: mean and percentiles, in ms.
type Stat struct {
	Mean Num `json:"mean"`
	P50  Num `json:"p50"`
	P90  Num `json:"p90"`
	P99  Num `json:"p99"`
}

// Metric compares one latency, measured against predicted, over the
// requests both sides have it for.
type Metric struct {
	Requests  int  `json:"requests"`
	Measured  Stat `json:"measured_ms"`
	Predicted Stat `json:"predicted_ms"`
	// MeanErrorPct is (predicted mean - measured mean) / measured mean.
	MeanErrorPct Num `json:"mean_error_pct"`
	// MAPEPct and BiasPct are per request: mean |p - m| / m and mean
	// (p - m) / m, over requests whose measured value is > 0.
	MAPEPct Num `json:"mape_pct"`
	BiasPct Num `json:"bias_pct"`
	// KS is the two-sample Kolmogorov-Smirnov distance of the two
	// distributions (0..1).
	KS Num `json:"ks"`
}

// Request is one request's figures: [measured, predicted] in ms.
type Request struct {
	Line         int     `json:"line"`
	ID           string  `json:"id,omitempty"`
	ArrivalMs    float64 `json:"arrival_ms"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	TTFTMs       [2]Num  `json:"ttft_ms"`
	TPOTMs       [2]Num  `json:"tpot_ms"` // null for fewer than 2 output tokens
	E2EMs        [2]Num  `json:"e2e_ms"`
	Preemptions  int     `json:"preemptions,omitempty"`
	Rejected     bool    `json:"rejected,omitempty"` // kvsim turned it away: too large for HBM
}

// Source is what was read.
type Source struct {
	Path     string `json:"path"`
	Format   string `json:"format"`
	Requests int    `json:"requests"`
	Failed   int    `json:"failed"` // failed in the real run: left out
}

// Engines puts the run's recorded engine settings beside the scenario's.
type Engines struct {
	Recorded *Engine `json:"recorded"` // null: the records say nothing
	Scenario Engine  `json:"scenario"`
}

// Result is a whole comparison: what validate --json writes.
type Result struct {
	Kind        string    `json:"kind"`
	Version     int       `json:"version"`
	Scenario    string    `json:"scenario"`
	Policy      string    `json:"policy"`
	Records     Source    `json:"records"`
	Engine      Engines   `json:"engine"`
	Warnings    []string  `json:"warnings"`
	Rejected    int       `json:"rejected"`    // requests kvsim rejected: left out of the metrics
	Preemptions int64     `json:"preemptions"` // in kvsim's run
	TTFT        Metric    `json:"ttft"`
	TPOT        Metric    `json:"tpot"`
	E2E         Metric    `json:"e2e"`
	PerRequest  []Request `json:"per_request"`
	// Title, if set, heads the HTML page instead of the validate title
	// (kvsim replay's page of measured against predicted).
	Title string `json:"-"`
}

// Metrics names the three metrics in a fixed order.
func (r *Result) Metrics() []struct {
	Name string
	M    *Metric
} {
	return []struct {
		Name string
		M    *Metric
	}{{"TTFT", &r.TTFT}, {"TPOT", &r.TPOT}, {"E2E", &r.E2E}}
}

// Marshal is the result file's bytes: indented, deterministic.
func (r *Result) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// resultHead is how every result file starts (Marshal puts kind first).
var resultHead = []byte("{\n  \"kind\": \"" + Kind + "\"")

// IsResult says whether path holds a result file validate wrote (by how
// it starts), which a new one may replace.
func IsResult(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(resultHead))
	n, _ := io.ReadFull(f, b)
	return bytes.Equal(b[:n], resultHead)
}
