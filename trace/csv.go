package trace

import (
	"bytes"
	"strconv"
)

// Traces without block hashes, as CSV with a header naming the columns
// (found by name, in any order, among any others):
//
//	azure:    TIMESTAMP,ContextTokens,GeneratedTokens
//	          2023-11-16 18:15:46.6805900,4808,10
//	burstgpt: Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
//	          5,ChatGPT,472,18,490,Conversation log
//
// Azure's TIMESTAMP is a UTC date and time ("T" or a space between them, up
// to 9 fraction digits, an optional "Z" or ±HH:MM offset); BurstGPT's is in
// seconds from the trace's start. Requests carry no hash ids (HashIDs is
// empty): what they reuse is unknown, so every block is computed.

// csvState is the header of a CSV trace: the columns read.
type csvState struct {
	header       bool
	ts, in, out  int // column indices
	ncol         int
	f            [][2]int // field bounds of the current line
	hdrTS, hdrIn string   // column names, for messages
	hdrOut       string
}

// csvDialect is what a CSV format reads: its columns (timestamp, input
// tokens, output tokens) and how its timestamps are written.
type csvDialect struct {
	name string
	cols [3]string
	time func(b []byte, name string) (int64, string)
}

// csvDoc is every CSV format's Doc: they are listed together.
const csvDoc = "CSV, no hash\nids: [workload.inject] gives them blocks"

// csvFormat is the spec of a CSV format.
func csvFormat(name string, id int, fixture string, cols [3]string, time func(b []byte, name string) (int64, string), row FormatRow) FormatSpec {
	d := &csvDialect{name: name, cols: cols, time: time}
	return FormatSpec{Name: name, ID: id, Doc: csvDoc, Fixture: fixture, Row: row,
		line: func(r *Reader, line []byte, v *values) ([]int64, string, bool, error) { return r.csvLine(d, line, v) }}
}

// splitCSV appends the bounds of line's fields, quotes included, to f.
func splitCSV(line []byte, f [][2]int) [][2]int {
	start, quoted := 0, false
	for i, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			f = append(f, [2]int{start, i})
			start = i + 1
		}
	}
	return append(f, [2]int{start, len(line)})
}

// field is field i of line, trimmed of spaces and one pair of quotes.
func (c *csvState) field(line []byte, i int) []byte {
	b := bytes.TrimSpace(line[c.f[i][0]:c.f[i][1]])
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = bytes.TrimSpace(b[1 : len(b)-1])
	}
	return b
}

// csvLine is raw for a CSV line: the header first, then one request a line.
func (r *Reader) csvLine(d *csvDialect, line []byte, v *values) (ids []int64, reason string, empty bool, err error) {
	c := &r.csv
	line = bytes.TrimRight(line, "\r\n")
	c.f = splitCSV(line, c.f[:0])
	if !c.header {
		if err := r.csvHeader(d, line); err != nil {
			return nil, "", false, err
		}
		return nil, "", true, nil
	}
	if len(c.f) != c.ncol {
		return nil, strconv.Itoa(len(c.f)) + " fields, the header has " + strconv.Itoa(c.ncol), false, nil
	}
	if reason = csvTokens(c.field(line, c.in), c.hdrIn, &v.input); reason != "" {
		return nil, reason, false, nil
	}
	if reason = csvTokens(c.field(line, c.out), c.hdrOut, &v.output); reason != "" {
		return nil, reason, false, nil
	}
	ts := c.field(line, c.ts)
	v.arrival, reason = d.time(ts, c.hdrTS)
	return nil, reason, false, nil
}

// csvHeader finds the columns the format needs.
func (r *Reader) csvHeader(d *csvDialect, line []byte) error {
	c := &r.csv
	want := d.cols
	idx := [3]int{-1, -1, -1}
	for i := range c.f {
		name := c.field(line, i)
		for k, w := range want {
			if idx[k] < 0 && bytes.EqualFold(name, []byte(w)) {
				idx[k] = i
			}
		}
	}
	for k, w := range want {
		if idx[k] < 0 {
			return &LineError{File: r.name, Line: r.line, Reason: d.name + " trace: no column " + strconv.Quote(w) +
				" in the header (" + strconv.Quote(oneLine(string(line))) + ")"}
		}
	}
	c.ts, c.in, c.out, c.ncol = idx[0], idx[1], idx[2], len(c.f)
	c.hdrTS, c.hdrIn, c.hdrOut = want[0], want[1], want[2]
	c.header = true
	return nil
}

// csvTokens reads a token count: a non-negative integer, ".0" tolerated.
func csvTokens(b []byte, name string, dst *int) string {
	if i := bytes.IndexByte(b, '.'); i >= 0 && len(bytes.Trim(b[i+1:], "0")) == 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return name + " is empty"
	}
	neg := b[0] == '-'
	digits := b
	if neg || b[0] == '+' {
		digits = b[1:]
	}
	if len(digits) == 0 {
		return name + " is not an integer"
	}
	for _, c := range digits {
		if !isDigit(c) {
			return name + " is not an integer"
		}
	}
	n, ok := parseInt(digits)
	switch {
	case neg && !(ok && n == 0):
		return "negative " + name
	case !ok || n > MaxTokens:
		return name + " out of range (at most " + strconv.Itoa(MaxTokens) + " tokens)"
	}
	*dst = int(n)
	return ""
}

// csvSeconds reads BurstGPT's seconds (integer or plain decimal) as ns.
func csvSeconds(b []byte, name string) (int64, string) {
	var p parser
	p.b = b
	if len(b) == 0 {
		return 0, name + " is empty"
	}
	var ns int64
	if !startsNumber(b[0]) || !p.timestamp(&ns, name, 9) || p.i != len(b) {
		return 0, name + " is not a number"
	}
	if p.sem != "" {
		return 0, p.sem
	}
	return ns, ""
}

// parseDateTime reads Azure's UTC "YYYY-MM-DD HH:MM:SS[.fffffff][Z|±HH:MM]"
// as nanoseconds since 1970.
func parseDateTime(b []byte, name string) (int64, string) {
	bad := func() (int64, string) {
		return 0, name + " " + strconv.Quote(oneLine(string(b))) + " is not a date and time like 2023-11-16 18:15:46.6805900"
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if !isDigit(c) {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, len(s) > 0
	}
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != ' ' && b[10] != 'T') || b[13] != ':' || b[16] != ':' {
		return bad()
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	s, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 60 {
		return bad()
	}
	rest := b[19:]
	var frac int64
	if len(rest) > 0 && rest[0] == '.' {
		j := 1
		for j < len(rest) && isDigit(rest[j]) {
			j++
		}
		if j == 1 || j > 10 {
			return bad()
		}
		for k := 1; k < 10; k++ {
			frac *= 10
			if k < j {
				frac += int64(rest[k] - '0')
			}
		}
		rest = rest[j:]
	}
	var off int64
	switch {
	case len(rest) == 0:
	case len(rest) == 1 && rest[0] == 'Z':
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := num(rest[1:3])
		om, ok2 := num(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return bad()
		}
		off = int64(oh*3600+om*60) * 1e9
		if rest[0] == '-' {
			off = -off
		}
	default:
		return bad()
	}
	if y < 1970 {
		return 0, name + " " + strconv.Quote(string(b)) + " is before 1970"
	}
	if y > 2200 {
		return 0, name + " " + strconv.Quote(string(b)) + " out of range"
	}
	days := daysFromCivil(y, mo, d)
	ns := (days*86400+int64(h*3600+mi*60+s))*1e9 + frac - off
	if ns < 0 {
		return 0, name + " " + strconv.Quote(string(b)) + " is before 1970"
	}
	return ns, ""
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the days from 1970-01-01 to y-m-d (Howard Hinnant's
// algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}
