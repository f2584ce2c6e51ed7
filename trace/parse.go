package trace

import (
	"math"
	"strconv"
)

// maxDepth matches encoding/json, so both accept the same documents.
const maxDepth = 10000

// Known fields, in the order "missing field" is reported.
const (
	fTimestamp = iota
	fInput
	fOutput
	fHashIDs
	nFields // the fields above are required in every JSON format

	// Optional in mooncake: Dynamo's and AIPerf's session fields.
	fSession = iota - 1
	fDelay
	// Bailian's: chat_id is required, parent_chat_id optional.
	fChat
	fParentChat
	// Optional in mooncake: an agentic session's call and the call it
	// follows (a DAG: several calls may follow one).
	fCall
	fParentCall
	nAll
)

var fieldNames = [nAll]string{"timestamp", "input_length", "output_length", "hash_ids", "session_id", "delay", "chat_id", "parent_chat_id",
	"call_id", "parent_call_id"}

// extras are the session fields of one line, beside values so that values
// stays what every JSON format shares.
type extras struct {
	sess     []byte // session_id: 's' or 'i' then the string body or the digits
	hasSess  bool
	delay    int64 // ns; -1: none
	chat     int64
	parent   int64 // -1: none
	hasChat  bool
	hasDelay bool
	call     int64 // call_id
	pcall    int64 // parent_call_id; -1: none
	hasCall  bool
}

// values are the scalar fields of one line; ids go to parser.ids.
type values struct {
	arrival       int64
	input, output int
}

// parser validates one line as JSON and extracts the known fields without
// allocating: a full JSON grammar, with unknown values skipped.
type parser struct {
	kind int // fmtMooncake or fmtBailian: which fields it knows
	ext  extras
	b    []byte
	i    int
	ids  []int64
	key  []byte // decoded key, only for keys with escapes

	syn string // syntax error (stops parsing)
	sem string // first semantic error (parsing goes on so syntax errors win)
}

// parse returns "" or the reason the line is bad.
func (p *parser) parse(line []byte, bt int, v *values) string {
	p.b, p.i, p.syn, p.sem = line, 0, "", ""
	p.ids = p.ids[:0]
	p.ext = extras{sess: p.ext.sess[:0], delay: -1, parent: -1, pcall: -1}
	p.ws()
	if p.peek() != '{' {
		if p.value(0) && p.end() {
			return "line is not a JSON object"
		}
		return p.syn
	}
	p.i++
	var seen [nAll]bool
	p.ws()
	if p.peek() == '}' {
		p.i++
	} else {
		for {
			p.ws()
			f, ok := p.field()
			if !ok {
				return p.syn
			}
			p.ws()
			if p.peek() != ':' {
				p.fail()
				return p.syn
			}
			p.i++
			p.ws()
			if f >= 0 {
				if seen[f] && p.sem == "" {
					p.sem = `duplicate field "` + fieldNames[f] + `"`
				}
				seen[f] = true
			}
			switch f {
			case fTimestamp:
				if p.kind == fmtBailian {
					ok = p.timestamp(&v.arrival, "timestamp", 9)
				} else {
					ok = p.timestamp(&v.arrival, "timestamp", 6)
				}
			case fDelay:
				ok = p.timestamp(&p.ext.delay, "delay", 6)
				p.ext.hasDelay = true
			case fSession:
				ok = p.session()
			case fChat:
				ok = p.chatID(&p.ext.chat, f)
				p.ext.hasChat = true
			case fParentChat:
				ok = p.chatID(&p.ext.parent, f)
			case fCall:
				ok = p.chatID(&p.ext.call, f)
				p.ext.hasCall = true
			case fParentCall:
				ok = p.chatID(&p.ext.pcall, f)
			case fInput:
				ok = p.length(&v.input, f)
			case fOutput:
				ok = p.length(&v.output, f)
			case fHashIDs:
				ok = p.hashIDs()
			default:
				ok = p.value(1)
			}
			if !ok {
				return p.syn
			}
			p.ws()
			if c := p.peek(); c == ',' {
				p.i++
				continue
			} else if c == '}' {
				p.i++
				break
			}
			p.fail()
			return p.syn
		}
	}
	if !p.end() {
		return p.syn
	}
	if p.sem != "" {
		return p.sem
	}
	if p.kind == fmtBailian && !seen[fChat] {
		return `missing field "chat_id"`
	}
	for f, ok := range seen[:nFields] {
		if !ok {
			return `missing field "` + fieldNames[f] + `"`
		}
	}
	if p.ext.delay > MaxArrival {
		return "delay out of range"
	}
	if bt <= 0 {
		return "" // the block count is checked later (the binary cache)
	}
	if need := numBlocks(v.input, bt); need != len(p.ids) {
		return "input_length " + strconv.Itoa(v.input) + " needs " + strconv.Itoa(need) +
			" hash_ids, got " + strconv.Itoa(len(p.ids))
	}
	return ""
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (p *parser) ws() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

// peek returns the current byte, or 0 at the end of the line (0 is never
// valid where peek is used, so it reads as "unexpected").
func (p *parser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// fail records a syntax error at the current position and returns false.
func (p *parser) fail() bool {
	if p.i >= len(p.b) {
		return p.failf("unexpected end of line")
	}
	c := p.b[p.i]
	what := "byte 0x" + strconv.FormatUint(uint64(c)|0x100, 16)[1:]
	if c >= 0x20 && c < 0x7f {
		what = "'" + string(rune(c)) + "'"
	}
	return p.failf("unexpected " + what + " at column " + strconv.Itoa(p.i+1))
}

func (p *parser) failf(reason string) bool {
	p.syn = "invalid JSON: " + reason
	return false
}

// end checks that only whitespace follows the top-level value.
func (p *parser) end() bool {
	p.ws()
	if p.i < len(p.b) {
		return p.fail()
	}
	return true
}

// field reads an object key and returns the known field it names, or -1.
func (p *parser) field() (int, bool) {
	if p.peek() != '"' {
		return -1, p.fail()
	}
	s, e, esc, ok := p.str()
	if !ok {
		return -1, false
	}
	k := p.b[s:e]
	if esc {
		k = p.unescapeKey(k)
	}
	switch string(k) { // no allocation: the compiler compares in place
	case "timestamp":
		return fTimestamp, true
	case "input_length":
		return fInput, true
	case "output_length":
		return fOutput, true
	case "hash_ids":
		return fHashIDs, true
	}
	if p.kind == fmtBailian {
		switch string(k) {
		case "chat_id":
			return fChat, true
		case "parent_chat_id":
			return fParentChat, true
		}
		return -1, true
	}
	switch string(k) {
	case "session_id":
		return fSession, true
	case "delay":
		return fDelay, true
	case "call_id":
		return fCall, true
	case "parent_call_id":
		return fParentCall, true
	}
	return -1, true
}

// unescapeKey decodes an already validated string body well enough to
// compare it with ASCII names: non-ASCII escapes become 0xff, which no known
// name contains.
func (p *parser) unescapeKey(b []byte) []byte {
	k := p.key[:0]
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			k = append(k, c)
			continue
		}
		i++
		switch b[i] {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, _ := strconv.ParseUint(string(b[i+1:i+5]), 16, 32)
			c = 0xff
			if r < 0x80 {
				c = byte(r)
			}
			i += 4
		default: // '"', '\\', '/'
			c = b[i]
		}
		k = append(k, c)
	}
	p.key = k
	return k
}

// str scans a string at the opening quote and returns its body's bounds.
func (p *parser) str() (s, e int, esc, ok bool) {
	p.i++
	s = p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			e = p.i
			p.i++
			return s, e, esc, true
		case c == '\\':
			esc = true
			p.i++
			switch p.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				p.i++
				for range 4 {
					if !isHex(p.peek()) {
						return s, e, esc, p.fail()
					}
					p.i++
				}
			default:
				return s, e, esc, p.fail()
			}
		case c < 0x20:
			return s, e, esc, p.fail()
		default:
			p.i++
		}
	}
	return s, e, esc, p.fail()
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// number scans a JSON number and returns where it started and whether it is
// written as an integer (no fraction, no exponent).
func (p *parser) number() (s int, isInt, ok bool) {
	s, isInt = p.i, true
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case '1' <= c && c <= '9':
		for p.i++; isDigit(p.peek()); p.i++ {
		}
	default:
		return s, false, p.fail()
	}
	if p.peek() == '.' {
		isInt = false
		p.i++
		if !isDigit(p.peek()) {
			return s, false, p.fail()
		}
		for isDigit(p.peek()) {
			p.i++
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		isInt = false
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !isDigit(p.peek()) {
			return s, false, p.fail()
		}
		for isDigit(p.peek()) {
			p.i++
		}
	}
	return s, isInt, true
}

// parseInt converts a JSON integer; ok is false on int64 overflow.
func parseInt(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n uint64
	for _, c := range b {
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return int64(-n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

func (p *parser) semf(reason string) {
	if p.sem == "" {
		p.sem = reason
	}
}

func startsNumber(c byte) bool { return c == '-' || isDigit(c) }

// timestamp reads a time named name, in milliseconds (digits 6) or seconds
// (digits 9), integer or not, into nanoseconds.
func (p *parser) timestamp(dst *int64, name string, digits int) bool {
	if !startsNumber(p.peek()) {
		p.semf(name + " is not a number")
		return p.value(1)
	}
	unit := int64(1_000_000)
	if digits == 9 {
		unit = 1_000_000_000
	}
	s, isInt, ok := p.number()
	if !ok {
		return false
	}
	num := p.b[s:p.i]
	if isInt {
		ms, ok := parseInt(num)
		switch {
		case ms < 0:
			p.semf("negative " + name)
		case !ok || ms > math.MaxInt64/unit:
			p.semf(name + " out of range")
		default:
			*dst = ms * unit
		}
		return true
	}
	if ns, ok, inRange, neg := decimalUnit(num, digits); ok {
		// Exact: a float64 holds epoch nanoseconds only to 256 ns.
		switch {
		case neg:
			p.semf("negative " + name)
		case !inRange:
			p.semf(name + " out of range")
		default:
			*dst = ns
		}
		return true
	}
	f, err := strconv.ParseFloat(string(num), 64)
	ns := math.Round(f * float64(unit))
	switch {
	case f < 0:
		p.semf("negative " + name)
	case err != nil || ns >= math.MaxInt64:
		p.semf(name + " out of range")
	default:
		*dst = int64(ns)
	}
	return true
}

// session reads session_id: a string, an integer, or null (none).
func (p *parser) session() bool {
	switch c := p.peek(); {
	case c == '"':
		s, e, _, ok := p.str()
		if ok {
			p.ext.sess = append(append(p.ext.sess[:0], 's'), p.b[s:e]...)
			p.ext.hasSess = true
		}
		return ok
	case startsNumber(c):
		s, isInt, ok := p.number()
		if !ok {
			return false
		}
		if !isInt {
			p.semf("session_id is not a string or an integer")
			return true
		}
		n, ok := parseInt(p.b[s:p.i])
		if !ok {
			p.semf("session_id out of range")
			return true
		}
		p.ext.sess = strconv.AppendInt(append(p.ext.sess[:0], 'i'), n, 10)
		p.ext.hasSess = true
		return true
	case c == 'n':
		p.ext.hasSess = false
		return p.lit("null")
	}
	p.semf("session_id is not a string or an integer")
	return p.value(1)
}

// chatID reads an integer id (chat_id, parent_chat_id).
func (p *parser) chatID(dst *int64, f int) bool {
	if !startsNumber(p.peek()) {
		p.semf(fieldNames[f] + " is not an integer")
		return p.value(1)
	}
	s, isInt, ok := p.number()
	if !ok {
		return false
	}
	n, inRange := parseInt(p.b[s:p.i])
	switch {
	case !isInt:
		p.semf(fieldNames[f] + " is not an integer")
	case !inRange:
		p.semf(fieldNames[f] + " out of range")
	default:
		*dst = n
	}
	return true
}

// decimalUnit converts a time written as a plain decimal ("12.5", no
// exponent) in a unit of 10^digits ns (6: milliseconds, 9: seconds) to
// nanoseconds exactly, rounding half up at the nanosecond. ok is false for
// other forms; inRange is false past int64; neg is true for any value below
// zero.
func decimalUnit(b []byte, digits int) (ns int64, ok, inRange, neg bool) {
	minus := b[0] == '-'
	if minus {
		b = b[1:]
	}
	dot := -1
	for i, c := range b {
		switch {
		case c == '.':
			dot = i
		case !isDigit(c):
			return 0, false, false, false // an exponent
		case c != '0':
			neg = minus // -0.0 is zero, -0.0000001 is negative
		}
	}
	if dot < 0 {
		return 0, false, false, neg
	}
	frac := b[dot+1:]
	var sub, unit int64 = 0, 1 // the first digits fraction digits: nanoseconds
	for i := range digits {
		sub *= 10
		unit *= 10
		if i < len(frac) {
			sub += int64(frac[i] - '0')
		}
	}
	if len(frac) > digits && frac[digits] >= '5' {
		sub++
	}
	ms, ok := parseInt(b[:dot])
	if !ok || ms > (math.MaxInt64-sub)/unit {
		return 0, true, false, neg
	}
	return ms*unit + sub, true, true, neg
}

// length reads a non-negative integer token count.
func (p *parser) length(dst *int, f int) bool {
	if !startsNumber(p.peek()) {
		p.semf(fieldNames[f] + " is not an integer")
		return p.value(1)
	}
	s, isInt, ok := p.number()
	if !ok {
		return false
	}
	if !isInt {
		p.semf(fieldNames[f] + " is not an integer")
		return true
	}
	n, ok := parseInt(p.b[s:p.i])
	switch {
	case n < 0:
		p.semf("negative " + fieldNames[f])
	case !ok || n > MaxTokens:
		p.semf(fieldNames[f] + " out of range (at most " + strconv.Itoa(MaxTokens) + " tokens)")
	default:
		*dst = int(n)
	}
	return true
}

// hashIDs reads the array of integer block ids into p.ids.
func (p *parser) hashIDs() bool {
	if p.peek() != '[' {
		p.semf("hash_ids is not an array")
		return p.value(1)
	}
	p.ids = p.ids[:0]
	p.i++
	p.ws()
	if p.peek() == ']' {
		p.i++
		return true
	}
	for k := 0; ; k++ {
		p.ws()
		if startsNumber(p.peek()) {
			s, isInt, ok := p.number()
			if !ok {
				return false
			}
			if !isInt {
				p.badID(k, " is not an integer")
			} else if h, ok := parseInt(p.b[s:p.i]); !ok {
				p.badID(k, " out of range")
			} else {
				p.ids = append(p.ids, h)
			}
		} else {
			p.badID(k, " is not an integer")
			if !p.value(2) {
				return false
			}
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return true
		default:
			return p.fail()
		}
	}
}

func (p *parser) badID(k int, what string) {
	if p.sem == "" {
		p.sem = "hash_ids[" + strconv.Itoa(k) + "]" + what
	}
}

// value skips any JSON value, checking its syntax; depth counts the
// containers around it.
func (p *parser) value(depth int) bool {
	switch c := p.peek(); {
	case c == '"':
		_, _, _, ok := p.str()
		return ok
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return p.failf("nesting deeper than " + strconv.Itoa(maxDepth) + " at column " + strconv.Itoa(p.i+1))
		}
		return p.container(depth + 1)
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case startsNumber(c):
		_, _, ok := p.number()
		return ok
	}
	return p.fail()
}

// container skips an object or array at its opening bracket.
func (p *parser) container(depth int) bool {
	obj := p.b[p.i] == '{'
	closer := byte(']')
	if obj {
		closer = '}'
	}
	p.i++
	p.ws()
	if p.peek() == closer {
		p.i++
		return true
	}
	for {
		p.ws()
		if obj {
			if p.peek() != '"' {
				return p.fail()
			}
			if _, _, _, ok := p.str(); !ok {
				return false
			}
			p.ws()
			if p.peek() != ':' {
				return p.fail()
			}
			p.i++
			p.ws()
		}
		if !p.value(depth) {
			return false
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case closer:
			p.i++
			return true
		default:
			return p.fail()
		}
	}
}

func (p *parser) lit(word string) bool {
	for j := 0; j < len(word); j++ {
		if p.peek() != word[j] {
			return p.fail()
		}
		p.i++
	}
	return true
}
