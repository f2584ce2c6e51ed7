package scenario

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"kvsim/core"
	"kvsim/param"
)

// Reading a key's value as its declaration says: type and unit, range,
// the limits the unit implies.

// value reads key as declared: its type and unit, def when absent, then
// its range and the time limit. def is the declared default unless the
// code computes one (a tier kind's, a link's).
func (t *table) value(key string, def any) (any, error) {
	f := t.decl.field(key)
	if f == nil {
		panic("scenario: undeclared key " + t.decl.name + "." + key)
	}
	raw, given := t.m[key]
	if !given {
		if f.Required {
			need := f.Need
			if strings.Contains(need, "%s") {
				need = fmt.Sprintf(need, strings.Join(f.Enum(), ", "))
			}
			if need != "" {
				return nil, t.errf(key, "required (%s)", need)
			}
			return nil, t.errf(key, "required")
		}
		if def == nil {
			return nil, nil
		}
	}
	v, err := t.convert(f, raw, given, def)
	if err != nil {
		return nil, err
	}
	return v, t.check(f, v)
}

// convert turns the decoded TOML value into the key's Go type.
func (t *table) convert(f *field, raw any, given bool, def any) (any, error) {
	if !given {
		return def, nil
	}
	key := f.Name
	switch f.Type {
	case tString:
		if s, ok := raw.(string); ok {
			return s, nil
		}
		return nil, t.errf(key, "must be a string, got %s", describe(raw))
	case tInt:
		if n, ok := raw.(int64); ok {
			return n, nil
		}
		return nil, t.errf(key, "must be an integer, got %s", describe(raw))
	case tBool:
		if b, ok := raw.(bool); ok {
			return b, nil
		}
		return nil, t.errf(key, "must be true or false, got %s", describe(raw))
	case tBytes:
		switch n := raw.(type) {
		case int64:
			return n, nil
		case string:
			b, err := ParseBytes(n)
			if err != nil {
				return nil, t.errf(key, "%v", err)
			}
			return b, nil
		}
		return nil, t.errf(key, `must be a size like "60GiB" or a byte count, got %s`, describe(raw))
	case tDuration:
		switch n := raw.(type) {
		case string:
			d, err := ParseDuration(n)
			if err != nil {
				return nil, t.errf(key, "%v", err)
			}
			return d, nil
		case int64:
			if n == 0 {
				return int64(0), nil
			}
		}
		return nil, t.errf(key, `must be a duration like "10us", got %s`, describe(raw))
	case tFineDuration:
		switch n := raw.(type) {
		case string:
			d, err := ParseFineDuration(n)
			if err != nil {
				return nil, t.errf(key, "%v", err)
			}
			return d, nil
		case int64:
			if n == 0 {
				return 0.0, nil
			}
		}
		return nil, t.errf(key, `must be a duration like "40us" or "0.5ns", got %s`, describe(raw))
	case tBandwidth:
		if s, ok := raw.(string); ok {
			b, err := ParseBandwidth(s)
			if err != nil {
				return nil, t.errf(key, "%v", err)
			}
			return b, nil
		}
		switch raw.(type) {
		case int64, float64:
		default:
			return nil, t.errf(key, `must be a rate like "25GB/s" or a number of bytes/s, got %s`, describe(raw))
		}
	}
	// tNumber, tTokenRate, and a bandwidth given as a number.
	switch n := raw.(type) {
	case int64:
		return float64(n), nil
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, t.errf(key, "must be a finite number, got %v", n)
		}
		return n, nil
	}
	return nil, t.errf(key, "must be a number, got %s", describe(raw))
}

// check applies the declared range, then the limits the unit implies.
func (t *table) check(f *field, v any) error {
	key := f.Name
	if why := f.OutOfRange(v); why != "" {
		return t.errf(key, "%s", why)
	}
	if f.Check != nil {
		if err := f.Check(v); err != nil {
			return t.errf(key, "%v", err)
		}
	}
	switch n := v.(type) {
	case int64:
		if f.Type == tDuration {
			return t.inTime(key, n)
		}
	case float64:
		switch f.Type {
		case tFineDuration:
			if !(n < float64(core.MaxTime)) {
				return t.errf(key, "%s is past %s", FormatDuration(int64(min(n, 9e18))), timeLimit)
			}
		case tBandwidth:
			return t.perBlock(key, n)
		case tTokenRate:
			return t.perToken(key, n)
		}
	}
	return nil
}

// Typed readers: the declared default, or def where the code computes it.
func (t *table) str(key string) (string, error) {
	v, err := t.value(key, t.decl.field(key).Default)
	s, _ := v.(string)
	return s, err
}
func (t *table) integer(key string) (int64, error) {
	v, err := t.value(key, t.decl.field(key).Default)
	n, _ := v.(int64)
	return n, err
}
func (t *table) intOr(key string, def int64) (int64, error) {
	v, err := t.value(key, def)
	n, _ := v.(int64)
	return n, err
}
func (t *table) optInt(key string, def int64) (int64, error) {
	if _, given := t.m[key]; !given {
		return def, nil
	}
	return t.integer(key)
}

// param reads an eviction policy's parameter: a number, no default.
func (t *table) param(key string) (float64, error) {
	v, err := t.convert(&field{Name: key, Type: tNumber}, t.m[key], true, nil)
	x, _ := v.(float64)
	return x, err
}

// timeLimit is core.MaxTime in words.
const timeLimit = "the simulated-time limit of 146 years (2^62 ns)"

// years renders nanoseconds in years for limit messages.
func years(ns float64) string {
	if ns > 1e300 {
		return "forever"
	}
	return strconv.FormatFloat(ns/(365.25*86400e9), 'g', 3, 64) + " years"
}

// inTime checks a duration against the simulated-time limit.
func (t *table) inTime(key string, ns int64) error {
	if ns > core.MaxTime {
		return t.errf(key, "%s is past %s", FormatDuration(ns), timeLimit)
	}
	return nil
}

// perToken checks that one token at rate (tokens/s) takes less than the
// simulated-time limit.
func (t *table) perToken(key string, rate float64) error {
	if ns := 1e9 / rate; !(ns < float64(core.MaxTime)) {
		return t.errf(key, "%g tokens/s takes %s per token, past %s", rate, years(ns), timeLimit)
	}
	return nil
}

// perBlock checks that a bandwidth moves one KV block within the limit.
func (t *table) perBlock(key string, bw float64) error {
	if ns := float64(t.p.blockBytes) * 1e9 / bw; t.p.blockBytes > 0 && !(ns < float64(core.MaxTime)) {
		return t.errf(key, "%g B/s moves one %s block in %s, past %s", bw, FormatBytes(t.p.blockBytes), years(ns), timeLimit)
	}
	return nil
}

// describe renders a decoded TOML value for type errors.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("float %v", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case time.Time:
		return "datetime"
	case map[string]any:
		return "table"
	case []any, []map[string]any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// bind reads, in field order, each key a field of struct *dst names by its
// tag (key:"NAME"): the key's declaration gives its type, default and
// range, the tag its destination, so neither is written twice. An absent
// key without a default leaves the field alone. def, where given, is the
// default of an absent key that the code computes (a preset's, a kind's):
// nil keeps the declared one, keep leaves the field as it is, an error
// stops the reading. Fields are read in order, so def may look at the
// fields bound before.
func (t *table) bind(dst any, def ...func(key string) (any, error)) error {
	for _, name := range param.Tags(dst) {
		f := t.decl.field(name)
		if f == nil {
			panic("scenario: a field is bound to undeclared key " + t.decl.name + "." + name)
		}
		d := f.Default
		if _, given := t.m[name]; !given && len(def) > 0 {
			x, err := def[0](name)
			if err != nil {
				return err
			}
			if x == keep {
				continue
			}
			if x != nil {
				d = x
			}
		}
		v, err := t.value(name, d)
		if err != nil {
			return err
		}
		if v != nil {
			param.Set(dst, name, v)
		}
	}
	return nil
}

// keep, returned by bind's def, leaves an absent key's field as it is.
var keep any = struct{ keep bool }{}

// presetDefault is the value of preset *pre's field tagged key, as a
// default: nil where the preset has none (zero).
func presetDefault(pre any, key string) any {
	x, ok := param.Get(pre, key)
	if !ok || reflect.ValueOf(x).IsZero() {
		return nil
	}
	return x
}
