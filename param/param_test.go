package param

import (
	"math"
	"strings"
	"testing"
)

// TestOutOfRange: each bound and limit refuses the first value past it and
// accepts the value at it; Msg replaces the wording; an enum names what it
// knows.
func TestOutOfRange(t *testing.T) {
	for _, c := range []struct {
		k        Key
		ok, bad  any
		want     string
		rangeTxt string
	}{
		{Key{Name: "lanes", Type: Int, Min: AtLeast1, Max: 1024}, int64(1024), int64(1025), "must be <= 1024", "1..1024"},
		{Key{Name: "lanes", Type: Int, Min: AtLeast1, Max: 1024}, int64(1), int64(0), "must be >= 1", "1..1024"},
		{Key{Name: "n", Type: Int, Min: AtLeast0}, int64(0), int64(-1), "must be >= 0", ">= 0"},
		{Key{Name: "r", Type: Number, Min: Above0}, 1e-9, 0.0, "must be > 0", "> 0"},
		{Key{Name: "e", Type: Number, Min: Share}, 1.0, 1.5, "must be > 0 and <= 1", "0 < x <= 1"},
		{Key{Name: "f", Type: Number, Min: AtLeast0, FMax: 2}, 2.0, 2.5, "must be <= 2", "0..2"},
		{Key{Name: "m", Type: Int, Min: AtLeast1, Msg: "too few: %v"}, int64(3), int64(0), "too few: 0", ">= 1"},
		{Key{Name: "kind", Type: String, Enum: func() []string { return []string{"a", "b"} }}, "a", "c", `unknown kind "c" (known: a, b)`, ""},
	} {
		if why := c.k.OutOfRange(c.ok); why != "" {
			t.Errorf("%s %v: refused: %s", c.k.Name, c.ok, why)
		}
		if why := c.k.OutOfRange(c.bad); why != c.want {
			t.Errorf("%s %v: %q, want %q", c.k.Name, c.bad, why, c.want)
		}
		if got := c.k.RangeText(); got != c.rangeTxt {
			t.Errorf("%s: range %q, want %q", c.k.Name, got, c.rangeTxt)
		}
	}
}

// TestBinding: Get and Set reach the field a tag names, converting to its
// type; Check names the first key out of range and refuses a non-finite
// number.
func TestBinding(t *testing.T) {
	var s struct {
		Lanes int     `key:"lanes"`
		Rate  float64 `key:"rate"`
		Name  string  `key:"name"`
		Other int
	}
	if got := Tags(&s); strings.Join(got, ",") != "lanes,rate,name" {
		t.Fatalf("tags %v", got)
	}
	if !Set(&s, "lanes", int64(8)) || !Set(&s, "rate", 2.5) || !Set(&s, "name", "x") || Set(&s, "Other", int64(1)) {
		t.Fatal("Set reached the wrong fields")
	}
	if v, ok := Get(&s, "lanes"); !ok || v != int64(8) {
		t.Fatalf("lanes = %v, %v", v, ok)
	}
	keys := []Key{{Name: "lanes", Type: Int, Min: AtLeast1, Max: 4}, {Name: "rate", Type: Number, Min: Above0}}
	get := func(n string) any { v, _ := Get(&s, n); return v }
	if err := Check(keys, get); err == nil || err.Error() != "lanes: must be <= 4" {
		t.Fatalf("Check: %v", err)
	}
	s.Lanes, s.Rate = 4, math.Inf(1)
	if err := Check(keys, get); err == nil || !strings.Contains(err.Error(), "rate: must be a finite number") {
		t.Fatalf("Check of +Inf: %v", err)
	}
	if Find(keys, "rate") != &keys[1] || Find(keys, "none") != nil || strings.Join(Names(keys), ",") != "lanes,rate" {
		t.Fatal("Find or Names")
	}
}
