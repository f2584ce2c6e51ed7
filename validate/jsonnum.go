package validate

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Helpers for fields read from json.RawMessage: the literal is kept, so
// times are read exactly (parseSeconds) rather than through float64.

// isNumber says whether raw is a JSON number literal.
func isNumber(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// intField reads a JSON integer (a whole number written with ".0" too).
func intField(raw json.RawMessage) (int, bool) {
	s := string(bytes.TrimSpace(raw))
	if !isNumber(raw) {
		return 0, false
	}
	if n, err := strconv.Atoi(s); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) || f > maxTokens*64 || f < -maxTokens*64 {
		return 0, false
	}
	return int(f), true
}

// secondsField reads a JSON number of seconds as nanoseconds.
func secondsField(raw json.RawMessage) (int64, bool) {
	if !isNumber(raw) {
		return 0, false
	}
	ns, err := parseSeconds(string(bytes.TrimSpace(raw)))
	return ns, err == nil
}

// lineOf is the 1-based line of byte offset off in b.
func lineOf(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte{'\n'})
}

// jsonErrLine is the line a decoding error points at, 0 if none.
func jsonErrLine(b []byte, err error) int {
	switch e := err.(type) {
	case *json.SyntaxError:
		return lineOf(b, e.Offset)
	case *json.UnmarshalTypeError:
		return lineOf(b, e.Offset)
	}
	return 0
}
