package scenario

import (
	"strconv"
	"strings"
)

// The TOML library keeps key positions private, so messages find lines by
// scanning the raw text once more. The document has already parsed, so the
// scanner only has to be right for valid TOML, and a miss just drops the
// line number from a message.

// keyPos names a key within one instance of a table: table "tier", idx 2,
// key "capacity". key "" is the table header itself.
type keyPos struct {
	table string
	idx   int
	key   string
}

type lineIndex map[keyPos]int

// indexLines records the first line of every key and table header.
func indexLines(src string) lineIndex {
	li := lineIndex{}
	var (
		section string
		idx     int
		counts  = map[string]int{}
		v       valueLexer
	)
	for n, line := range strings.Split(src, "\n") {
		lineNo := n + 1
		line = strings.TrimSuffix(line, "\r")
		if v.open() { // inside a multi-line string, array or inline table
			v.lex(line)
			continue
		}
		t := strings.TrimLeft(line, " \t")
		switch {
		case t == "" || t[0] == '#':
		case strings.HasPrefix(t, "[["):
			parts, rest, ok := parseKey(t[2:])
			if !ok || !strings.HasPrefix(strings.TrimLeft(rest, " \t"), "]]") {
				continue
			}
			section = strings.Join(parts, ".")
			idx = counts[section]
			counts[section]++
			li.add(keyPos{section, idx, ""}, lineNo)
		case t[0] == '[':
			parts, rest, ok := parseKey(t[1:])
			if !ok || !strings.HasPrefix(strings.TrimLeft(rest, " \t"), "]") {
				continue
			}
			section, idx = strings.Join(parts, "."), 0
			if n := counts[strings.Join(parts[:len(parts)-1], ".")]; n > 0 {
				idx = n - 1 // a sub-table of the latest [[entry]]: [policy.eviction]
			}
			li.add(keyPos{section, idx, ""}, lineNo)
		default:
			parts, rest, ok := parseKey(t)
			rest = strings.TrimLeft(rest, " \t")
			if !ok || !strings.HasPrefix(rest, "=") {
				continue
			}
			full := parts
			if section != "" {
				full = append(strings.Split(section, "."), parts...)
			}
			table := strings.Join(full[:len(full)-1], ".")
			i := 0
			if table == section {
				i = idx
			}
			li.add(keyPos{table, i, full[len(full)-1]}, lineNo)
			v.lex(rest[1:])
		}
	}
	return li
}

func (li lineIndex) add(k keyPos, line int) {
	if _, ok := li[k]; !ok {
		li[k] = line
	}
}

// line finds key in instance idx of table, falling back to the instance's
// header and then to the table's own key in its parent (inline tables).
// 0 means unknown.
func (li lineIndex) line(table string, idx int, key string) int {
	if key != "" {
		if l, ok := li[keyPos{table, idx, key}]; ok {
			return l
		}
	}
	if key != "" { // key may itself be a table: [key] under table
		sub := key
		if table != "" {
			sub = table + "." + key
		}
		if l, ok := li[keyPos{sub, idx, ""}]; ok {
			return l
		}
		if l, ok := li[keyPos{sub, 0, ""}]; ok {
			return l
		}
	}
	if table == "" {
		return 0
	}
	if l, ok := li[keyPos{table, idx, ""}]; ok {
		return l
	}
	parent, last := "", table
	if i := strings.LastIndexByte(table, '.'); i >= 0 {
		parent, last = table[:i], table[i+1:]
	}
	return li[keyPos{parent, 0, last}]
}

// parseKey reads a possibly dotted, possibly quoted key from the start of s
// and returns its parts and the text after it.
func parseKey(s string) (parts []string, rest string, ok bool) {
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", false
		}
		var part string
		switch s[0] {
		case '"':
			end := closingQuote(s)
			if end < 0 {
				return nil, "", false
			}
			part = s[1:end]
			if u, err := strconv.Unquote(s[:end+1]); err == nil {
				part = u
			}
			s = s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", false
			}
			part, s = s[1:end+1], s[end+2:]
		default:
			i := 0
			for i < len(s) && isBare(s[i]) {
				i++
			}
			if i == 0 {
				return nil, "", false
			}
			part, s = s[:i], s[i:]
		}
		parts = append(parts, part)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return parts, s, true
		}
		s = s[1:]
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// closingQuote returns the index of the '"' closing the basic string that
// starts at s[0], or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// valueLexer follows values across lines just far enough to know whether the
// next line starts a new key: inside multi-line strings, arrays and inline
// tables it does not.
type valueLexer struct {
	str   string // `"""` or `'''` while inside a multi-line string
	depth int    // open [ and {
}

func (v *valueLexer) open() bool { return v.str != "" || v.depth > 0 }

func (v *valueLexer) lex(s string) {
	for i := 0; i < len(s); {
		if v.str != "" {
			if v.str == `"""` && s[i] == '\\' {
				i += 2
				continue
			}
			if strings.HasPrefix(s[i:], v.str) {
				i += 3
				for i < len(s) && s[i] == v.str[0] { // up to two quotes may end the content
					i++
				}
				v.str = ""
				continue
			}
			i++
			continue
		}
		switch c := s[i]; {
		case strings.HasPrefix(s[i:], `"""`), strings.HasPrefix(s[i:], `'''`):
			v.str = s[i : i+3]
			i += 3
		case c == '"':
			end := closingQuote(s[i:])
			if end < 0 {
				return
			}
			i += end + 1
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return
			}
			i += end + 2
		case c == '#':
			return
		case c == '[' || c == '{':
			v.depth++
			i++
		case c == ']' || c == '}':
			if v.depth > 0 {
				v.depth--
			}
			i++
		default:
			i++
		}
	}
}
