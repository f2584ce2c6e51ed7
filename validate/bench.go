package validate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"kvsim/experiment"
	"kvsim/trace"
)

// LLMServingSim's bench format: a folder holding requests.jsonl (one
// request a line: input_toks, output_toks and the engine's queued_ts,
// first_token_ts and last_token_ts, in seconds of one clock) and, if the
// run recorded it, meta.json (engine_kwargs: the engine's settings).

// maxLine bounds one line of requests.jsonl.
const maxLine = 1 << 20

func loadBench(ctx context.Context, path string) (*Records, error) {
	file, dir := path, filepath.Dir(path)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file, dir = filepath.Join(path, "requests.jsonl"), path
	}
	f, err := openInput(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := parseBench(trace.ContextReader(ctx, f), file)
	if err != nil {
		return nil, err
	}
	rs := &Records{File: file, Recs: recs}
	meta := filepath.Join(dir, "meta.json")
	b, err := os.ReadFile(meta)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, experiment.BadInputf("%s: %v", meta, experiment.PathErr(err))
	default:
		if rs.Engine, err = parseMeta(b, meta); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// parseBench reads requests.jsonl; name is the file's name in messages.
func parseBench(r io.Reader, name string) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var recs []Record
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if strings.TrimSpace(string(b)) == "" {
			continue
		}
		rec, err := benchLine(b, name, line)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, lineErr(name, line+1, "", "line longer than %d bytes", maxLine)
		}
		return nil, experiment.BadInputf("%s: %v", name, experiment.PathErr(err))
	}
	finish(recs)
	return recs, nil
}

func benchLine(b []byte, name string, line int) (Record, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return Record{}, lineErr(name, line, "", "not a JSON object")
	}
	rec := Record{Line: line}
	if id, ok := m["request_id"]; ok {
		var s string
		if json.Unmarshal(id, &s) == nil {
			rec.ID = s
		} else {
			rec.ID = string(id)
		}
	}
	ints := []struct {
		key string
		dst *int
	}{{"input_toks", &rec.InputTokens}, {"output_toks", &rec.OutputTokens}}
	for _, f := range ints {
		raw, ok := m[f.key]
		if !ok {
			return Record{}, lineErr(name, line, f.key, "missing")
		}
		if *f.dst, ok = intField(raw); !ok {
			return Record{}, lineErr(name, line, f.key, "%s: not a whole number", clip(raw))
		}
	}
	var ts [3]int64
	for i, key := range [...]string{"queued_ts", "first_token_ts", "last_token_ts"} {
		raw, ok := m[key]
		if !ok {
			return Record{}, lineErr(name, line, key, "missing")
		}
		if ts[i], ok = secondsField(raw); !ok {
			return Record{}, lineErr(name, line, key, "%s: not a time in seconds (a number of magnitude below %.3g)", clip(raw), maxSeconds)
		}
	}
	rec.ArrivalNs, rec.TTFTNs, rec.E2ENs = ts[0], ts[1]-ts[0], ts[2]-ts[0]
	if rec.TTFTNs < 0 {
		return Record{}, lineErr(name, line, "first_token_ts", "before queued_ts")
	}
	if rec.E2ENs < rec.TTFTNs {
		return Record{}, lineErr(name, line, "last_token_ts", "before first_token_ts")
	}
	if err := check(name, &rec, "input_toks", "output_toks", "first_token_ts", "last_token_ts"); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// clip shortens a raw value for a message.
func clip(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return oneLine(s)
}

// parseMeta reads meta.json's engine settings.
func parseMeta(b []byte, name string) (*Engine, error) {
	var m struct {
		Model   json.RawMessage            `json:"model"`
		Version json.RawMessage            `json:"vllm_version"`
		Kwargs  map[string]json.RawMessage `json:"engine_kwargs"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, lineErr(name, jsonErrLine(b, err), "", "not the JSON object of a run's meta.json: %v", err)
	}
	e := &Engine{}
	json.Unmarshal(m.Model, &e.Model)
	json.Unmarshal(m.Version, &e.Version)
	for _, f := range []struct {
		key string
		dst *int
	}{{"tensor_parallel_size", &e.TP}, {"data_parallel_size", &e.DP}, {"max_num_seqs", &e.MaxNumSeqs}, {"max_num_batched_tokens", &e.MaxNumBatchedTokens}} {
		raw, ok := m.Kwargs[f.key]
		if !ok || isNull(raw) {
			continue
		}
		n, ok := intField(raw)
		if !ok || n < 1 {
			line := 0
			if i := bytes.Index(b, []byte(`"`+f.key+`"`)); i >= 0 {
				line = lineOf(b, int64(i))
			}
			return nil, lineErr(name, line, "engine_kwargs."+f.key, "%s: not a whole number >= 1", clip(raw))
		}
		*f.dst = n
	}
	return e, nil
}
