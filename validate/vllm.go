package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"kvsim/experiment"
	"kvsim/trace"
)

// vLLM's serving benchmark result (benchmarks/benchmark_serving.py, later
// `vllm bench serve`, with --save-result; recent versions keep the
// per-request arrays only with --save-detailed): parallel arrays, one entry
// per request in the order sent: input_lens, output_lens, ttfts (s), itls
// (a list of inter-token gaps per request, s), and, in recent versions,
// latencies (s, first byte sent to last token) and start_times (s, when
// each request was sent, on the client's perf_counter clock). errors holds
// "" for a request that succeeded.

// maxResult bounds a result file: the arrays of a million requests with
// their gaps fit.
const maxResult = 1 << 30

func loadVLLM(ctx context.Context, path string) (*Records, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b []byte
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() <= maxResult {
		b = make([]byte, 0, st.Size()+1) // one allocation, not a doubling series
	}
	b, err = readAll(b, io.LimitReader(trace.ContextReader(ctx, f), maxResult+1))
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, experiment.BadInputf("%s: %v", path, experiment.PathErr(err))
	}
	if len(b) > maxResult {
		return nil, experiment.BadInputf("%s: larger than %d bytes", path, maxResult)
	}
	rs, err := parseVLLMContext(ctx, b, path)
	if err != nil {
		return nil, err
	}
	rs.File = path
	return rs, nil
}

// field is one top-level value and where it starts.
type field struct {
	raw json.RawMessage
	off int64
}

// vllmDoc is a result file's top level, and the file for messages.
type vllmDoc struct {
	ctx    context.Context
	b      []byte
	name   string
	fields map[string]field
	nl     []int64 // offsets of the newlines, for line numbers
}

// line is the 1-based line of offset off: a search, as every record asks.
func (d *vllmDoc) line(off int64) int {
	if d.nl == nil {
		d.nl = make([]int64, 0, bytes.Count(d.b, []byte{'\n'}))
		for i, c := range d.b {
			if c == '\n' {
				d.nl = append(d.nl, int64(i))
			}
		}
	}
	i, _ := slices.BinarySearch(d.nl, off)
	return 1 + i
}

func (d *vllmDoc) errAt(off int64, key, format string, args ...any) error {
	return lineErr(d.name, d.line(off), key, format, args...)
}

// pyNonFinite quotes Python's non-JSON NaN, Infinity and -Infinity
// (json.dump writes burstiness = inf so) outside strings; lines and the
// order of bytes stay, so messages still point at the right line.
func pyNonFinite(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	for i := 0; i < len(b); {
		j := bytes.IndexAny(b[i:], `"NI`)
		if j < 0 {
			out = append(out, b[i:]...)
			break
		}
		out = append(out, b[i:i+j]...)
		i += j
		switch {
		case b[i] == '"':
			e := skipString(b, i)
			out = append(out, b[i:e]...)
			i = e
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out = append(out, `"NaN"`...)
			i += 3
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			w := `"Infinity"`
			if len(out) > 0 && out[len(out)-1] == '-' {
				out, w = out[:len(out)-1], `"-Infinity"`
			}
			out = append(out, w...)
			i += len("Infinity")
		default:
			out = append(out, b[i])
			i++
		}
	}
	return out
}

// skipString is the end of the string starting at b[i] == '"' (past its
// closing quote, or len(b)).
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue is the end of the JSON value starting at b[i], in a document
// json.Valid accepted: a hand scan, as result files run to gigabytes.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			i = skipString(b, i) - 1
			if depth == 0 {
				return i + 1
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 { // the end of the container a scalar is in
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

func parseVLLM(b []byte, name string) (*Records, error) {
	return parseVLLMContext(context.Background(), b, name)
}

func parseVLLMContext(ctx context.Context, b []byte, name string) (*Records, error) {
	b = pyNonFinite(b)
	d := &vllmDoc{ctx: ctx, b: b, name: name, fields: map[string]field{}}
	if !json.Valid(b) {
		// The decoder says where it went wrong.
		var v any
		err := json.Unmarshal(b, &v)
		return nil, lineErr(name, jsonErrLine(b, err), "", "malformed JSON: %v", err)
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, lineErr(name, d.line(int64(i)), "", "not a JSON object (vLLM's benchmark result)")
	}
	for i = skipSpace(b, i+1); i < len(b) && b[i] != '}'; {
		e := skipString(b, i)
		var key string
		json.Unmarshal(b[i:e], &key)
		i = skipSpace(b, e)
		i = skipSpace(b, i+1) // past ':'
		e = skipValue(b, i)
		d.fields[key] = field{json.RawMessage(b[i:e]), int64(i)}
		i = skipSpace(b, e)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return d.records()
}

// array splits a top-level array into its elements and their offsets;
// nil, not ok, if key is absent or null.
func (d *vllmDoc) array(key string) (els []json.RawMessage, offs []int64, ok bool, err error) {
	f, found := d.fields[key]
	if !found || isNull(f.raw) {
		return nil, nil, false, nil
	}
	els, offs, err = d.split(f.raw, f.off, key)
	return els, offs, err == nil, err
}

func (d *vllmDoc) split(raw json.RawMessage, base int64, key string) ([]json.RawMessage, []int64, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, nil, d.errAt(base, key, "not an array")
	}
	var els []json.RawMessage
	var offs []int64
	for i := skipSpace(raw, 1); i < len(raw) && raw[i] != ']'; {
		e := skipValue(raw, i)
		els, offs = append(els, raw[i:e]), append(offs, base+int64(i))
		i = skipSpace(raw, e)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return els, offs, nil
}

// rate reads request_rate (a number, or "inf"): requests per second,
// +Inf for all at once; ok is false when absent.
func (d *vllmDoc) rate(key string) (float64, bool, error) {
	f, found := d.fields[key]
	if !found || isNull(f.raw) {
		return 0, false, nil
	}
	var s string
	if json.Unmarshal(f.raw, &s) == nil {
		switch strings.ToLower(s) {
		case "inf", "infinity":
			return math.Inf(1), true, nil
		}
		return 0, false, d.errAt(f.off, key, "%q: not a number or \"inf\"", s)
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(string(f.raw)), 64)
	if err != nil || !(x > 0) {
		return 0, false, d.errAt(f.off, key, "%s: not a number > 0", clip(f.raw))
	}
	return x, true, nil
}

func (d *vllmDoc) records() (*Records, error) {
	ins, inOff, ok, err := d.array("input_lens")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, lineErr(d.name, 0, "input_lens", "missing: the result holds no per-request records (run the benchmark with --save-result and, in recent vLLM, --save-detailed)")
	}
	n := len(ins)
	get := func(key string, required bool) ([]json.RawMessage, []int64, error) {
		els, offs, ok, err := d.array(key)
		switch {
		case err != nil:
			return nil, nil, err
		case !ok && required:
			return nil, nil, lineErr(d.name, 0, key, "missing")
		case ok && len(els) != n:
			return nil, nil, d.errAt(d.fields[key].off, key, "%d entries, but input_lens has %d", len(els), n)
		}
		return els, offs, nil
	}
	outs, outOff, err := get("output_lens", true)
	if err != nil {
		return nil, err
	}
	ttfts, ttftOff, err := get("ttfts", true)
	if err != nil {
		return nil, err
	}
	lats, latOff, err := get("latencies", false)
	if err != nil {
		return nil, err
	}
	itls, itlOff, err := get("itls", lats == nil)
	if err != nil {
		return nil, err
	}
	starts, startOff, err := get("start_times", false)
	if err != nil {
		return nil, err
	}
	errs, _, err := get("errors", false)
	if err != nil {
		return nil, err
	}
	rs := &Records{}
	var gap float64 // ns between derived arrivals; used without start_times
	if starts == nil {
		rate, ok, err := d.rate("request_rate")
		if err != nil {
			return nil, err
		}
		if f, found := d.fields["ramp_up_strategy"]; found && !isNull(f.raw) {
			return nil, d.errAt(f.off, "ramp_up_strategy", "a ramp-up run without start_times: its arrivals cannot be derived")
		}
		if !ok {
			return nil, lineErr(d.name, 0, "start_times", "missing, and no request_rate to derive arrivals from")
		}
		if !math.IsInf(rate, 1) {
			gap = 1e9 / rate
			if float64(n)*gap > maxSeconds*1e9 {
				return nil, d.errAt(d.fields["request_rate"].off, "request_rate", "%g: %d requests at this rate would arrive past %.3g s", rate, n, maxSeconds)
			}
		}
		note := fmt.Sprintf("%s has no start_times: arrivals derived from request_rate %g", d.name, rate)
		if gap > 0 {
			note += fmt.Sprintf(", one every %.6g s in file order", 1/rate)
			if b, ok, _ := d.rate("burstiness"); !ok || !math.IsInf(b, 1) {
				note += " (the benchmark drew its gaps at random with that mean, so queueing differs)"
			}
		} else {
			note += " (inf: all at once)"
		}
		if f, found := d.fields["max_concurrency"]; found && !isNull(f.raw) {
			note += fmt.Sprintf("; the client also held requests back (max_concurrency %s)", clip(f.raw))
		}
		rs.Notes = append(rs.Notes, note)
	}
	for i := range n {
		if i&4095 == 4095 {
			if err := d.ctx.Err(); err != nil {
				return nil, err
			}
		}
		if errs != nil {
			var s string
			if json.Unmarshal(errs[i], &s) == nil && s != "" {
				rs.Failed++
				continue
			}
		}
		rec := Record{Line: d.line(inOff[i])}
		var ok bool
		if rec.InputTokens, ok = intField(ins[i]); !ok {
			return nil, d.errAt(inOff[i], fmt.Sprintf("input_lens[%d]", i), "%s: not a whole number", clip(ins[i]))
		}
		if rec.OutputTokens, ok = intField(outs[i]); !ok {
			return nil, d.errAt(outOff[i], fmt.Sprintf("output_lens[%d]", i), "%s: not a whole number", clip(outs[i]))
		}
		if rec.OutputTokens == 0 {
			rs.Failed++ // no token, no TTFT: how older results mark a failure
			continue
		}
		if rec.TTFTNs, ok = secondsField(ttfts[i]); !ok {
			return nil, d.errAt(ttftOff[i], fmt.Sprintf("ttfts[%d]", i), "%s: not a time in seconds", clip(ttfts[i]))
		}
		if lats != nil {
			if rec.E2ENs, ok = secondsField(lats[i]); !ok {
				return nil, d.errAt(latOff[i], fmt.Sprintf("latencies[%d]", i), "%s: not a time in seconds", clip(lats[i]))
			}
		} else {
			gaps, gapOff, err := d.split(itls[i], itlOff[i], fmt.Sprintf("itls[%d]", i))
			if err != nil {
				return nil, err
			}
			rec.E2ENs = rec.TTFTNs
			for j, g := range gaps {
				ns, ok := secondsField(g)
				if !ok || ns < 0 {
					return nil, d.errAt(gapOff[j], fmt.Sprintf("itls[%d][%d]", i, j), "%s: not a time in seconds >= 0", clip(g))
				}
				if rec.E2ENs += ns; float64(rec.E2ENs) > maxSeconds*1e9 {
					return nil, d.errAt(gapOff[j], fmt.Sprintf("itls[%d]", i), "the gaps add up past %.3g s", maxSeconds)
				}
			}
		}
		if starts != nil {
			if rec.ArrivalNs, ok = secondsField(starts[i]); !ok {
				return nil, d.errAt(startOff[i], fmt.Sprintf("start_times[%d]", i), "%s: not a time in seconds", clip(starts[i]))
			}
		} else {
			rec.ArrivalNs = int64(math.Round(float64(i) * gap))
		}
		e2eField, e2eOff := "latencies", int64(0)
		if lats == nil {
			e2eField, e2eOff = "itls", itlOff[i]
		} else {
			e2eOff = latOff[i]
		}
		// Each rule names the entry it is about, on its own line.
		switch {
		case rec.InputTokens < 1 || rec.InputTokens > maxTokens:
			return nil, d.errAt(inOff[i], fmt.Sprintf("input_lens[%d]", i), "%d: must be 1..%d", rec.InputTokens, maxTokens)
		case rec.OutputTokens < 1 || rec.OutputTokens > maxTokens:
			return nil, d.errAt(outOff[i], fmt.Sprintf("output_lens[%d]", i), "%d: must be 1..%d", rec.OutputTokens, maxTokens)
		case rec.TTFTNs < 0:
			return nil, d.errAt(ttftOff[i], fmt.Sprintf("ttfts[%d]", i), "negative")
		case rec.E2ENs < rec.TTFTNs:
			return nil, d.errAt(e2eOff, fmt.Sprintf("%s[%d]", e2eField, i), "ends before the first token (ttfts[%d])", i)
		}
		if err := check(d.name, &rec, fmt.Sprintf("input_lens[%d]", i), fmt.Sprintf("output_lens[%d]", i),
			fmt.Sprintf("ttfts[%d]", i), fmt.Sprintf("%s[%d]", e2eField, i)); err != nil {
			return nil, err
		}
		rs.Recs = append(rs.Recs, rec)
	}
	finish(rs.Recs)
	return rs, nil
}

// readAll is io.ReadAll into b's spare capacity.
func readAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
