package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"kvsim/param"
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
			ex := f.Example
			if ex == "" {
				ex = defaultText(f)
			}
			line(&b, f.Name+" = "+ex, comment(f))
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
func comment(f *field) string {
	var parts []string
	if f.Doc != "" {
		parts = append(parts, f.Doc)
	}
	if f.Enum != nil {
		parts = append(parts, strings.Join(f.Enum(), " | "))
	}
	if r := f.RangeText(); r != "" {
		parts = append(parts, r)
	}
	if f.Only != "" {
		parts = append(parts, "only with "+f.Only)
	}
	switch {
	case f.Required:
		parts = append(parts, "required")
	default:
		parts = append(parts, "default "+defaultText(f))
	}
	return strings.Join(parts, "; ")
}

// defaultText is the default as the key would be written.
func defaultText(f *field) string {
	switch d := f.Default.(type) {
	case int64:
		if f.Type == tDuration {
			return strconv.Quote(FormatDuration(d))
		}
		return strconv.FormatInt(d, 10)
	case float64:
		if f.Type == tBandwidth {
			return strconv.Quote(strings.ReplaceAll(FormatBandwidth(d), " ", ""))
		}
		return strconv.FormatFloat(d, 'g', -1, 64)
	case string:
		return strconv.Quote(d)
	case bool:
		return strconv.FormatBool(d)
	}
	if f.DefaultDoc == "" && f.Only == synthetic {
		return genDefault(f.Name)
	}
	return f.DefaultDoc
}

// genDefault is a synthetic-workload key's default, trace.DefaultGenConfig's.
func genDefault(key string) string {
	g := trace.DefaultGenConfig()
	if key == "think" {
		return strconv.Quote(FormatDuration(int64(g.MeanThinkSec * 1e9)))
	}
	switch x, _ := param.Get(&g, key); x := x.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	panic(fmt.Sprintf("scenario: no generator default for %q", key))
}
