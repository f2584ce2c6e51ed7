package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"kvsim/trace"
)

// Reference renders the scenario layout from the schema: every table and
// key with an example value, and its doc line, range and default as a
// comment. doc.go and the README carry it verbatim (TestReference).
func Reference() string {
	var b strings.Builder
	for _, s := range schema {
		if s.name != "" {
			b.WriteByte('\n')
			head := "[" + s.name + "]"
			if s.array {
				head = "[[" + s.name + "]]"
			}
			var notes []string
			switch {
			case s.required && s.array:
				notes = append(notes, "required, one or more")
			case s.required:
				notes = append(notes, "required")
			case !s.array:
				notes = append(notes, "optional")
			}
			if s.doc != "" {
				notes = append(notes, s.doc)
			}
			line(&b, head, strings.Join(notes, "; "))
		}
		for i := range s.fields {
			f := &s.fields[i]
			ex := f.example
			if ex == "" {
				ex = f.defaultText()
			}
			line(&b, f.key+" = "+ex, f.comment())
		}
		if s.params != "" {
			b.WriteString("# " + s.params + "\n")
		}
	}
	return b.String()
}

// refColumn is where Reference's comments start.
const refColumn = 30

// refWidth is where Reference wraps comments, at a "; ".
const refWidth = 100

// line writes "text  # comment", the comment's further lines under its
// first: at each "\n" and where a line would pass refWidth.
func line(b *strings.Builder, text, comment string) {
	b.WriteString(text)
	if comment == "" {
		b.WriteByte('\n')
		return
	}
	col := max(refColumn, len(text)+2)
	var lines []string
	for _, c := range strings.Split(comment, "\n") {
		cur := ""
		for _, part := range strings.Split(c, "; ") {
			if cur != "" && col+2+len(cur)+2+len(part) > refWidth {
				lines = append(lines, cur+";")
				cur = part
				continue
			}
			if cur != "" {
				cur += "; "
			}
			cur += part
		}
		lines = append(lines, cur)
	}
	for i, l := range lines {
		pad := col - len(text)
		if i > 0 {
			pad = refColumn
		}
		b.WriteString(strings.Repeat(" ", pad) + "# " + l + "\n")
		text = ""
	}
}

// comment is a key's doc line, accepted values and default.
func (f *field) comment() string {
	var parts []string
	if f.doc != "" {
		parts = append(parts, f.doc)
	}
	if f.enum != nil {
		parts = append(parts, strings.Join(f.enum(), " | "))
	}
	if r := f.rangeText(); r != "" {
		parts = append(parts, r)
	}
	if f.only != "" {
		parts = append(parts, "only with "+f.only)
	}
	switch {
	case f.required:
		parts = append(parts, "required")
	default:
		parts = append(parts, "default "+f.defaultText())
	}
	return strings.Join(parts, "; ")
}

// rangeText is the accepted range in words: "1..16777216", "> 0".
func (f *field) rangeText() string {
	if f.max != 0 {
		lo := map[bound]string{above0: "1", atLeast0: "0", atLeast1: "1"}[f.min]
		return lo + ".." + strconv.FormatInt(f.max, 10)
	}
	if f.fmax != 0 {
		if lo, ok := map[bound]string{atLeast0: "0", atLeast1: "1"}[f.min]; ok {
			return lo + ".." + strconv.FormatFloat(f.fmax, 'g', -1, 64)
		}
		return strings.TrimSpace(boundNames[f.min] + " and <= " + strconv.FormatFloat(f.fmax, 'g', -1, 64))
	}
	return boundNames[f.min]
}

// defaultText is the default as the key would be written.
func (f *field) defaultText() string {
	switch d := f.def.(type) {
	case int64:
		if f.typ == tDuration {
			return strconv.Quote(FormatDuration(d))
		}
		return strconv.FormatInt(d, 10)
	case float64:
		return strconv.FormatFloat(d, 'g', -1, 64)
	case string:
		return strconv.Quote(d)
	case bool:
		return strconv.FormatBool(d)
	}
	if f.defDoc == "" && f.only == synthetic {
		return genDefault(f.key)
	}
	return f.defDoc
}

// genDefault is a synthetic-workload key's default, trace.DefaultGenConfig's.
func genDefault(key string) string {
	g := trace.DefaultGenConfig()
	for _, k := range genKeys(&g) {
		if k.key == key {
			return strconv.Itoa(*k.dst)
		}
	}
	switch key {
	case "rate":
		return strconv.FormatFloat(g.RatePerSec, 'g', -1, 64)
	case "turns":
		return strconv.FormatFloat(g.MeanTurns, 'g', -1, 64)
	case "think":
		return strconv.Quote(FormatDuration(int64(g.MeanThinkSec * 1e9)))
	}
	panic(fmt.Sprintf("scenario: no generator default for %q", key))
}
