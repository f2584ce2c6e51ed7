package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// refParse is an independent oracle built on encoding/json: ok reports
// whether line is a valid request, syntax whether it is valid JSON at all.
func refParse(line []byte, bt int) (v values, ids []int64, ok, syntax bool) {
	if !json.Valid(line) {
		return v, nil, false, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return v, nil, false, true
	}
	seen := map[string]bool{}
	ok = true
	for dec.More() {
		tok, _ := dec.Token()
		key := tok.(string)
		var raw any
		if err := dec.Decode(&raw); err != nil {
			panic(err) // json.Valid said yes
		}
		switch key {
		case "timestamp", "input_length", "output_length", "hash_ids", "session_id", "delay":
		default:
			continue
		}
		if seen[key] {
			ok = false
		}
		seen[key] = true
		num, isNum := raw.(json.Number)
		isInt := isNum && !strings.ContainsAny(string(num), ".eE")
		switch key {
		case "timestamp":
			ns, good := refMS(num, isNum, isInt)
			ok = ok && good
			v.arrival = ns
		case "delay":
			ns, good := refMS(num, isNum, isInt)
			ok = ok && good && ns <= MaxArrival
		case "session_id":
			switch raw.(type) {
			case string, nil:
			default:
				_, err := strconv.ParseInt(string(num), 10, 64)
				ok = ok && isInt && err == nil
			}
		case "input_length", "output_length":
			n, err := strconv.ParseInt(string(num), 10, 64)
			if !isInt || err != nil || n < 0 || n > MaxTokens {
				ok = false
			}
			if key == "input_length" {
				v.input = int(n)
			} else {
				v.output = int(n)
			}
		case "hash_ids":
			arr, isArr := raw.([]any)
			if !isArr {
				ok = false
			}
			ids = ids[:0]
			for _, e := range arr {
				n, isNum := e.(json.Number)
				h, err := strconv.ParseInt(string(n), 10, 64)
				if !isNum || err != nil {
					ok = false
				}
				ids = append(ids, h)
			}
		}
	}
	if !seen["timestamp"] || !seen["input_length"] || !seen["output_length"] || !seen["hash_ids"] || (ok && numBlocks(v.input, bt) != len(ids)) {
		ok = false
	}
	return v, ids, ok, true
}

// refMS is the oracle's milliseconds to nanoseconds (timestamp, delay).
func refMS(num json.Number, isNum, isInt bool) (ns int64, good bool) {
	good = true
	switch {
	case isInt:
		ms, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || ms < 0 || ms > math.MaxInt64/1_000_000 {
			good = false
		}
		ns = ms * 1_000_000
	case isNum && !strings.ContainsAny(string(num), "eE"):
		// A plain decimal converts exactly, rounding half up.
		r, _ := new(big.Rat).SetString(string(num))
		r.Mul(r, big.NewRat(1_000_000, 1))
		n := new(big.Int).Quo(new(big.Int).Add(new(big.Int).Mul(r.Num(), big.NewInt(2)), r.Denom()), new(big.Int).Mul(r.Denom(), big.NewInt(2)))
		if r.Sign() < 0 || !n.IsInt64() {
			good = false
		}
		ns = n.Int64()
	case isNum:
		f, err := strconv.ParseFloat(string(num), 64)
		fns := math.Round(f * 1e6)
		if err != nil || f < 0 || fns >= math.MaxInt64 {
			good = false
		}
		ns = int64(fns)
	default:
		good = false
	}
	return ns, good
}

var errPrefix = regexp.MustCompile(`^fuzz\.jsonl:([0-9]+): `)

// checkReader reads data and checks what any input must satisfy: no panic,
// errors are one line prefixed FILE:LINE: on an existing line.
func checkReader(t *testing.T, data []byte, skip bool) (reqs int, first error) {
	lines := bytes.Count(data, []byte("\n")) + 1
	r := NewReader(bytes.NewReader(data), "fuzz.jsonl", Options{BlockTokens: 4, SkipBadLines: skip})
	var req Request
	for {
		err := r.Next(&req)
		if err == io.EOF {
			break
		}
		if err != nil {
			checkErr(t, err, lines)
			return reqs, err
		}
		if req.Line < 1 || req.Line > lines || len(req.HashIDs) != numBlocks(req.InputTokens, 4) {
			t.Fatalf("bad request %+v", req)
		}
		reqs++
	}
	if e := r.FirstSkipped(); e != nil {
		checkErr(t, e, lines)
	}
	return reqs, r.FirstSkipped()
}

func checkErr(t *testing.T, err error, lines int) {
	t.Helper()
	msg := err.Error()
	m := errPrefix.FindStringSubmatch(msg)
	if m == nil || strings.ContainsAny(msg, "\n") {
		t.Fatalf("error %q is not one FILE:LINE: line", msg)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 || n > lines {
		t.Fatalf("error %q names line %d of %d", msg, n, lines)
	}
	var le *LineError
	if !errors.As(err, &le) {
		t.Fatalf("%T is not a *LineError", err)
	}
}

// checkOracle compares a single line against refParse.
func checkOracle(t *testing.T, line []byte) {
	if bytes.ContainsAny(line, "\n") || blank(line) || bytes.HasPrefix(line, []byte("\xef\xbb\xbf")) {
		return
	}
	var p parser
	var v values
	reason := p.parse(line, 4, &v)
	rv, rids, ok, syntax := refParse(line, 4)
	if syntax == strings.HasPrefix(reason, "invalid JSON") {
		t.Fatalf("%q: json.Valid=%v but we said %q", line, syntax, reason)
	}
	if ok != (reason == "") {
		t.Fatalf("%q: oracle ok=%v but we said %q", line, ok, reason)
	}
	if ok && (v != rv || !slicesEqual(p.ids, rids)) {
		t.Fatalf("%q: got %+v %v, oracle %+v %v", line, v, p.ids, rv, rids)
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var fuzzSeeds = []string{
	`{"timestamp": 0, "input_length": 6, "output_length": 500, "hash_ids": [0, 1]}`,
	`{"timestamp": 1.5, "input_length": 0, "output_length": 0, "hash_ids": []}` + "\n" + `{"timestamp": 1, "input_length": 1, "output_length": 0, "hash_ids": [3]}`,
	`{"x": "a\"}b\\\u00e9", "hash\u005fids": [1], "y": {"a": [1, {"b": null}, true, false], "c": -1.5e+3}, "timestamp": 4, "input_length": 1, "output_length": 2}`,
	`{"timestamp": 0, "timestamp": 0}`,
	`[1, 2]`,
	"\xef\xbb\xbf{}\r\n\n \t",
	`{"timestamp": 1e400, "input_length": 99999999999999999999, "output_length": -1, "hash_ids": [1.0, "2", 9223372036854775808]}`,
	`{"a": [[[[[[]]]]]], "b": "\ud83d\ude00"}`,
	`{"timestamp": 5, "input_length": 1, "output_length": 2, "hash_ids": [7], "session_id": "s1", "delay": 2.5}`,
	`{"timestamp": 5, "input_length": 1, "output_length": 2, "hash_ids": [7], "session_id": 3, "delay": -1}`,
	`{"timestamp": 5, "input_length": 1, "output_length": 2, "hash_ids": [7], "session_id": 1.5}`,
	`{"timestamp": 5, "input_length": 1, "output_length": 2, "hash_ids": [7], "session_id": null, "delay": 9223372036854775807}`,
}

func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, strictErr := checkReader(t, data, false)
		reqs, _ := checkReader(t, data, true)
		if strictErr == nil && reqs == 0 && !blank(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))) {
			t.Fatalf("%q: no requests, no error", data)
		}
		checkOracle(t, data)
	})
}

// TestOracle runs the differential check over the table inputs too, so the
// two parsers agree on every hand-written case without running the fuzzer.
func TestOracle(t *testing.T) {
	for _, s := range fuzzSeeds {
		checkOracle(t, []byte(s))
	}
	for _, s := range []string{
		`{"a": ` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
		`{"a": ` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"timestamp": 2000.0000004, "input_length": 5, "output_length": 2, "hash_ids": [9, -0]}`,
		`{"timestamp": 01}`, `{"a": "\x"}`, "{\"a\x01\": 1}", `{"a": 1.}`, `"x"`, `{}`, `{"a" 1}`,
		`{"timestamp": 9223372036854, "input_length": 0, "output_length": 0, "hash_ids": []}`,
		`{"timestamp": 9223372036855, "input_length": 0, "output_length": 0, "hash_ids": []}`,
		`{"timestamp": 9223372036854.775807, "input_length": 0, "output_length": 0, "hash_ids": []}`,
		`{"timestamp": 9223372036854.7758074, "input_length": 0, "output_length": 0, "hash_ids": []}`,
		`{"timestamp": 9223372036854.7758075, "input_length": 0, "output_length": 0, "hash_ids": []}`,
		`{"timestamp": 1732900001000.0000005, "input_length": 0, "output_length": 0, "hash_ids": []}`,
		`{"timestamp": -0.0000004, "input_length": 0, "output_length": 0, "hash_ids": []}`,
		`{"timestamp": 0, "input_length": 0, "output_length": 2147483648, "hash_ids": []}`,
	} {
		checkOracle(t, []byte(s))
	}
}
