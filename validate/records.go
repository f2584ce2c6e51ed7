package validate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"kvsim/experiment"
)

// Record is one request of a real run, as measured.
type Record struct {
	Line         int    // where the record is in its file (1-based), for messages
	ID           string // the file's request id, "" if none
	ArrivalNs    int64  // after the run's first arrival
	InputTokens  int
	OutputTokens int
	TTFTNs       int64 // arrival to first token
	E2ENs        int64 // arrival to last token
}

// TPOTNs is the time per output token after the first, (E2E - TTFT) /
// (output tokens - 1); ok is false for fewer than 2 output tokens.
func (r *Record) TPOTNs() (float64, bool) {
	if r.OutputTokens < 2 {
		return 0, false
	}
	return float64(r.E2ENs-r.TTFTNs) / float64(r.OutputTokens-1), true
}

// Engine is what a run recorded of its engine's settings; 0 or "" is not
// recorded.
type Engine struct {
	Model               string `json:"model,omitempty"`
	Version             string `json:"version,omitempty"`
	TP                  int    `json:"tp,omitempty"`
	DP                  int    `json:"dp,omitempty"`
	MaxNumSeqs          int    `json:"max_num_seqs,omitempty"`
	MaxNumBatchedTokens int    `json:"max_num_batched_tokens,omitempty"`
}

// Records are a real run's requests, in order of arrival.
type Records struct {
	Path   string // as given
	File   string // the file the records came from (Path, or Path/requests.jsonl)
	Format string // one of Formats
	Recs   []Record
	Engine *Engine // nil: the records say nothing of the engine
	// Failed counts requests the run reports as failed: left out.
	Failed int
	// Notes say how something the records lack was derived (arrivals
	// from a request rate): worth a warning.
	Notes []string
}

// Formats are the record formats Load reads.
func Formats() []string { return []string{"bench", "vllm", "csv"} }

// maxTokens bounds a record's token counts (as the scenario bounds
// synthetic lengths' sums).
const maxTokens = 1 << 24

// Detect names the format of path by its shape: a folder or a .jsonl
// file is bench (requests.jsonl), .json is vllm, .csv is csv.
func Detect(path string) (string, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return "bench", nil
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl":
		return "bench", nil
	case ".json":
		return "vllm", nil
	case ".csv":
		return "csv", nil
	}
	return "", experiment.BadInputf("%s: cannot tell its format from its name (a folder or .jsonl: bench, .json: vllm, .csv: csv); give --format", path)
}

// Load reads the records at path in format ("" detects it). Once ctx is
// cancelled it stops, returning ctx's error.
func Load(ctx context.Context, path, format string) (*Records, error) {
	if format == "" {
		f, err := Detect(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	var (
		rs  *Records
		err error
	)
	switch format {
	case "bench":
		rs, err = loadBench(ctx, path)
	case "vllm":
		rs, err = loadVLLM(ctx, path)
	case "csv":
		rs, err = loadCSV(ctx, path)
	default:
		return nil, experiment.BadInputf("--format %q: one of %s", format, strings.Join(Formats(), ", "))
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr // a read cut short reads as malformed: say why
	}
	if err != nil {
		return nil, err
	}
	rs.Path, rs.Format = path, format
	if len(rs.Recs) == 0 {
		return nil, experiment.BadInputf("%s: no request to compare", rs.File)
	}
	return rs, nil
}

// openInput opens a record file, refusing what cannot be one.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, experiment.BadInputf("%s: %v", path, experiment.PathErr(err))
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, experiment.BadInputf("%s: is a folder", path)
	}
	return f, nil
}

// finish rebases arrivals to the earliest and orders records by arrival
// (ties keep file order), as the simulator takes them.
func finish(recs []Record) {
	if len(recs) == 0 {
		return
	}
	first := recs[0].ArrivalNs
	for _, r := range recs {
		first = min(first, r.ArrivalNs)
	}
	for i := range recs {
		recs[i].ArrivalNs -= first
	}
	slices.SortStableFunc(recs, func(a, b Record) int {
		switch {
		case a.ArrivalNs < b.ArrivalNs:
			return -1
		case a.ArrivalNs > b.ArrivalNs:
			return 1
		}
		return 0
	})
}

// lineErr is a bad record: file, line and field.
func lineErr(file string, line int, field, format string, args ...any) error {
	at := file
	if line > 0 {
		at = fmt.Sprintf("%s:%d", file, line)
	}
	if field != "" {
		at += ": " + field
	}
	return experiment.BadInputf("%s: %s", at, oneLine(fmt.Sprintf(format, args...)))
}

func oneLine(s string) string { return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s) }

// check applies the rules every format shares to a parsed record.
func check(file string, r *Record, inField, outField, ttftField, e2eField string) error {
	switch {
	case r.InputTokens < 1 || r.InputTokens > maxTokens:
		return lineErr(file, r.Line, inField, "%d: must be 1..%d", r.InputTokens, maxTokens)
	case r.OutputTokens < 1 || r.OutputTokens > maxTokens:
		return lineErr(file, r.Line, outField, "%d: must be 1..%d (a request that produced no token has no TTFT)", r.OutputTokens, maxTokens)
	case r.TTFTNs < 0:
		return lineErr(file, r.Line, ttftField, "negative time to first token (%d ns)", r.TTFTNs)
	case r.E2ENs < r.TTFTNs:
		return lineErr(file, r.Line, e2eField, "the last token (%d ns after arrival) comes before the first (%d ns)", r.E2ENs, r.TTFTNs)
	}
	return nil
}
