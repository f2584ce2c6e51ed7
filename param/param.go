// Package param is the one declaration of a configuration key: its name,
// type and unit, range, default and doc line. The scenario schema, the
// eviction policies, the routers, the trace formats and the tier kinds
// declare their keys with it, so the loader, --set, the generated
// reference and the docs read one source. It imports only the standard
// library: policy, the lowest layer, builds on it.
package param

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Type is how a key's value is written, and its unit.
type Type uint8

const (
	String       Type = iota
	Int               // integer
	Number            // integer or finite float
	TokenRate         // tokens/s: a number; one token must take less than the time limit
	Bool              // true or false
	Bytes             // "60GiB" or an integer byte count
	Bandwidth         // "25GB/s" or a number of bytes/s; one block must move within the time limit
	Duration          // "10us"; a bare integer only as 0; within the time limit
	FineDuration      // a Duration that keeps fractions of a ns (float64 ns): step-time coefficients
)

// Bound is a key's lower limit.
type Bound uint8

const (
	Any      Bound = iota
	Above0         // > 0
	AtLeast0       // >= 0
	AtLeast1       // >= 1
	Share          // > 0 and <= 1
)

var boundNames = [...]string{Any: "", Above0: "> 0", AtLeast0: ">= 0", AtLeast1: ">= 1", Share: "0 < x <= 1"}

// Key declares one key.
type Key struct {
	Name       string
	Type       Type
	Default    any    // int64, float64, string or bool; nil when required or set by the code (DefaultDoc)
	DefaultDoc string // the default in words, where Default cannot say it
	Required   bool   // absent: "KEY: required (Need)"
	Need       string // what a required key wants; %s is the enum
	Min        Bound
	Max        int64           // integers: the largest accepted, 0 for no limit
	FMax       float64         // numbers: the largest accepted, 0 for no limit
	Enum       func() []string // strings: the accepted values
	Msg        string          // replaces the range message; a format of the value if it has a verb
	Example    string          // the value a reference shows; "" for the default
	Doc        string          // one line; "\n" continues the comment
	Only       string          // accepted only with this other setting
	// Check, if set, is a further check of a value in range: its error
	// follows "KEY: ".
	Check func(v any) error
}

// Names lists the keys' names in order.
func Names(keys []Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Name
	}
	return out
}

// Find returns the key named name, nil if there is none.
func Find(keys []Key, name string) *Key {
	for i := range keys {
		if keys[i].Name == name {
			return &keys[i]
		}
	}
	return nil
}

// OutOfRange is why v (int64, float64 or string) breaks k's declared range
// or enum, "" when it does not; Msg, where set, replaces the wording.
func (k *Key) OutOfRange(v any) string {
	fail := func(format string, args ...any) string {
		switch {
		case k.Msg == "":
			return fmt.Sprintf(format, args...)
		case strings.Contains(k.Msg, "%"):
			return fmt.Sprintf(k.Msg, v)
		}
		return k.Msg
	}
	switch n := v.(type) {
	case int64:
		switch {
		case k.Min == Above0 && n <= 0:
			return fail("must be > 0")
		case k.Min == AtLeast0 && n < 0:
			return fail("must be >= 0")
		case k.Min == AtLeast1 && n < 1:
			return fail("must be >= 1")
		case k.Max != 0 && n > k.Max:
			return fail("must be <= %d", k.Max)
		}
	case float64:
		switch {
		case k.Min == Above0 && !(n > 0):
			return fail("must be > 0")
		case k.Min == AtLeast0 && n < 0:
			return fail("must be >= 0")
		case k.Min == AtLeast1 && !(n >= 1):
			return fail("must be >= 1")
		case k.Min == Share && !(n > 0 && n <= 1):
			return fail("must be > 0 and <= 1")
		case k.FMax != 0 && n > k.FMax:
			return fail("must be <= %g", k.FMax)
		}
	case string:
		if k.Enum != nil && !slices.Contains(k.Enum(), n) {
			if k.Msg != "" {
				return fmt.Sprintf(k.Msg, n)
			}
			return fmt.Sprintf("unknown %s %q (known: %s)", k.Name, n, strings.Join(k.Enum(), ", "))
		}
	}
	return ""
}

// RangeText is the accepted range in words: "1..16777216", "> 0".
func (k *Key) RangeText() string {
	if k.Max != 0 {
		lo := map[Bound]string{Above0: "1", AtLeast0: "0", AtLeast1: "1"}[k.Min]
		return lo + ".." + strconv.FormatInt(k.Max, 10)
	}
	if k.FMax != 0 {
		if lo, ok := map[Bound]string{AtLeast0: "0", AtLeast1: "1"}[k.Min]; ok {
			return lo + ".." + strconv.FormatFloat(k.FMax, 'g', -1, 64)
		}
		return strings.TrimSpace(boundNames[k.Min] + " and <= " + strconv.FormatFloat(k.FMax, 'g', -1, 64))
	}
	return boundNames[k.Min]
}

// fields maps the key tags of struct *dst to its fields.
func fields(dst any) (reflect.Value, map[string]int) {
	v := reflect.ValueOf(dst).Elem()
	idx := map[string]int{}
	for i := range v.NumField() {
		if tag := v.Type().Field(i).Tag.Get("key"); tag != "" {
			idx[tag] = i
		}
	}
	return v, idx
}

// Tags lists the key tags of struct *dst's fields, in field order.
func Tags(dst any) []string {
	var out []string
	ty := reflect.TypeOf(dst).Elem()
	for i := range ty.NumField() {
		if tag := ty.Field(i).Tag.Get("key"); tag != "" {
			out = append(out, tag)
		}
	}
	return out
}

// Get returns the value of the field of struct *src tagged `key:"name"`,
// as a key's value (int64, float64, string or bool); ok is false if there
// is no such field.
func Get(src any, name string) (x any, ok bool) {
	v, idx := fields(src)
	i, ok := idx[name]
	if !ok {
		return nil, false
	}
	switch f := v.Field(i); f.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return f.Int(), true
	case reflect.Float64:
		return f.Float(), true
	default:
		return f.Interface(), true
	}
}

// Set stores x (a key's value) in the field of struct *dst tagged
// `key:"name"`; it reports whether there is one.
func Set(dst any, name string, x any) bool {
	v, idx := fields(dst)
	i, ok := idx[name]
	if ok {
		v.Field(i).Set(reflect.ValueOf(x).Convert(v.Field(i).Type()))
	}
	return ok
}

// Check reports the first key whose value (get's) is not finite or breaks
// its range, as "KEY: why".
func Check(keys []Key, get func(name string) any) error {
	for i := range keys {
		k := &keys[i]
		x := get(k.Name)
		if f, ok := x.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return fmt.Errorf("%s: must be a finite number, got %v", k.Name, f)
		}
		if why := k.OutOfRange(x); why != "" {
			return fmt.Errorf("%s: %s", k.Name, why)
		}
	}
	return nil
}
