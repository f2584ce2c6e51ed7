package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"kvsim/internal/tomlguard"
)

// An override is "KEY=VALUE". KEY is a top-level key (seed), SECTION.KEY
// for [model], [gpu] or [workload] (gpu.prefill_tokens_per_s),
// workload.inject.KEY for [workload.inject], or tier.NAME.KEY, policy.NAME.KEY, link.FROM-TO.KEY (either direction) or
// link.N.KEY (1-based) for an array entry; a tier without a name goes by
// its kind, a policy without one by its eviction. VALUE is read as a TOML
// value (true, 3, 1.5, "x"), or taken as a string when it is not one
// (64GiB, 3GB/s, lru).
func applySets(p *parser, root map[string]any, sets []string) error {
	// blameSet reparses once per override to find the one at fault.
	if len(sets) > MaxSets {
		return &Error{Path: p.path, Msg: fmt.Sprintf("%d --set overrides: at most %d", len(sets), MaxSets)}
	}
	for _, set := range sets {
		key, text, ok := strings.Cut(set, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return &Error{Path: p.path, Msg: fmt.Sprintf("--set %q: want KEY=VALUE, e.g. tier.ssd.capacity=4TB", set)}
		}
		bad := func(format string, args ...any) error {
			return &Error{Path: p.path, Msg: fmt.Sprintf("--set %s: ", key) + fmt.Sprintf(format, args...)}
		}
		val, err := setValue(strings.TrimSpace(text))
		if err != nil {
			return bad("%v", err)
		}
		parts := strings.Split(key, ".")
		switch len(parts) {
		case 1:
			if _, isTable := root[key].(map[string]any); isTable || isArray(key) {
				return bad("names a table, not a value")
			}
			root[key] = val
			p.lines[keyPos{"", 0, key}] = setLine
		case 2:
			sec, k := parts[0], parts[1]
			if isArray(sec) {
				return bad("want %s.NAME.KEY", sec)
			}
			m, isTable := root[sec].(map[string]any)
			if !isTable {
				if _, there := root[sec]; there {
					return bad("%s is not a table", sec)
				}
				m = map[string]any{}
				root[sec] = m
				p.lines[keyPos{"", 0, sec}] = setLine // a table only --set made
			}
			m[k] = val
			p.lines[keyPos{sec, 0, k}] = setLine
		case 3:
			if d := sectionNamed(parts[0] + "." + parts[1]); d != nil && !d.array { // workload.inject.KEY
				m, isTable := root[parts[0]].(map[string]any)
				if !isTable {
					if _, there := root[parts[0]]; there {
						return bad("%s is not a table", parts[0])
					}
					m = map[string]any{}
					root[parts[0]] = m
					p.lines[keyPos{"", 0, parts[0]}] = setLine
				}
				sub, isTable := m[parts[1]].(map[string]any)
				if !isTable {
					if _, there := m[parts[1]]; there {
						return bad("%s is not a table", d.name)
					}
					sub = map[string]any{}
					m[parts[1]] = sub
					p.lines[keyPos{parts[0], 0, parts[1]}] = setLine
				}
				sub[parts[2]] = val
				p.lines[keyPos{d.name, 0, parts[2]}] = setLine
				continue
			}
			arr, name, k := parts[0], parts[1], parts[2]
			if !isArray(arr) {
				return bad("three parts name an entry of %s (%s.KEY for [%s])", arrays(), arr, arr)
			}
			ms, _ := asTables(root[arr])
			i, err := findEntry(sectionNamed(arr), ms, name)
			if err != nil {
				return bad("%v", err)
			}
			ms[i][k] = val
			p.lines[keyPos{arr, i, k}] = setLine
		default:
			return bad("too many parts (tier.NAME.KEY at most)")
		}
	}
	return nil
}

// blameSet turns err, a problem found after the overrides were applied,
// into one that says which override caused it when the file alone is
// valid: renaming a tier breaks the links that name it, and pointing at the
// file's line would not say why.
func blameSet(data []byte, path string, sets []string, err error) error {
	var e *Error
	if len(sets) == 0 || !errors.As(err, &e) || e.Line == setLine {
		return err
	}
	if _, ferr := ParseWith(data, path, nil); ferr != nil {
		return err // the file is wrong by itself
	}
	k := len(sets)
	for i := 1; i < len(sets); i++ {
		if _, perr := ParseWith(data, path, sets[:i]); perr != nil {
			k = i
			break
		}
	}
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf("line %d, ", e.Line)
	}
	return &Error{Path: e.Path, Line: setLine, Msg: fmt.Sprintf("%s (%safter %s)", e.Msg, at, sets[k-1]), Err: e.Err}
}

// MaxSets bounds the --set overrides of one load: a few are typical, and
// finding the one behind an error reparses once per override (20,000
// overrides ran for minutes).
const MaxSets = 256

// setLine stands for "given on the command line" in a lineIndex.
const setLine = -1

// setValue reads an override's VALUE; one nested past tomlguard's limits
// is refused before the TOML library sees it.
func setValue(text string) (any, error) {
	src := "v = " + text
	if e := tomlguard.Check([]byte(src)); e != nil {
		return nil, errors.New(e.Msg)
	}
	var m map[string]any
	if _, err := toml.Decode(src, &m); err == nil {
		if v, ok := m["v"]; ok {
			return v, nil
		}
	}
	return text, nil
}

// asTables reads an array of tables, written [[name]] or name = [{...}].
func asTables(v any) ([]map[string]any, bool) {
	switch v := v.(type) {
	case []map[string]any:
		return v, true
	case []any:
		var ms []map[string]any
		for _, e := range v {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			ms = append(ms, m)
		}
		return ms, true
	}
	return nil, false
}

// isArray reports whether name is declared as an array of tables.
func isArray(name string) bool {
	s := sectionNamed(name)
	return s != nil && s.array
}

// arrays lists the arrays of tables: "tier, link or policy".
func arrays() string {
	var names []string
	for _, s := range schema {
		if s.array {
			names = append(names, s.name)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// findEntry finds the [[arr]] entry an override names: by the first of its
// declared label keys that is set ("from-to" joins two keys).
func findEntry(decl *section, ms []map[string]any, name string) (int, error) {
	arr := decl.name
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	label := func(m map[string]any) string {
		var l string
		for _, k := range decl.label {
			if from, to, ok := strings.Cut(k, "-"); ok {
				l = str(m, from) + "-" + str(m, to)
			} else {
				l = str(m, k)
			}
			if l != "" {
				break
			}
		}
		return l
	}
	var names []string
	for i, m := range ms {
		l := label(m)
		names = append(names, l)
		if l == name {
			return i, nil
		}
		if arr == "link" && str(m, "to")+"-"+str(m, "from") == name {
			return i, nil
		}
	}
	if arr == "link" {
		if n, err := strconv.Atoi(name); err == nil && n >= 1 && n <= len(ms) {
			return n - 1, nil
		}
	}
	if len(names) == 0 {
		return 0, fmt.Errorf("the scenario has no [[%s]] entries", arr)
	}
	return 0, fmt.Errorf("no [[%s]] %q (there are: %s)", arr, name, strings.Join(names, ", "))
}
