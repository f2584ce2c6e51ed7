package scenario

import (
	"slices"
	"testing"

	"kvsim/cluster"
	"kvsim/param"
	"kvsim/results"
	"kvsim/trace"
)

// TestEveryKeyBoundOnce: each declared key has one destination, a field
// tagged with its name or one of the few keys the loader reads by hand
// (names, references between tables, unit conversions), and no field is
// tagged with a key its section does not declare.
func TestEveryKeyBoundOnce(t *testing.T) {
	sections := map[string]struct {
		structs []any
		byHand  []string
	}{
		"":                {nil, []string{"name", "seed", "profile"}},
		"model":           {[]any{&Model{}}, nil},
		"gpu":             {[]any{&GPU{}}, nil},
		"tier":            {[]any{&Tier{}}, nil},
		"link":            {[]any{&Link{}}, []string{"from", "to"}},
		"workload":        {[]any{&Workload{}, &trace.GenConfig{}}, []string{"trace", "format", "mode", "think"}},
		"workload.inject": {[]any{&results.Inject{}}, nil},
		"policy":          {[]any{&Policy{}}, []string{"name", "eviction"}},
		"slo":             {[]any{&SLO{}}, nil},
		"cluster":         {[]any{&Cluster{}}, append([]string{"instances", "prefill_instances", "decode_instances"}, param.Names(cluster.RouterKeys())...)},
	}
	for _, s := range schema {
		want, ok := sections[s.name]
		if !ok {
			t.Errorf("section %q: no destinations listed in this test", s.name)
			continue
		}
		dest := slices.Clone(want.byHand)
		for _, st := range want.structs {
			dest = append(dest, param.Tags(st)...)
		}
		for _, k := range dest {
			if s.field(k) == nil {
				t.Errorf("%s: a destination for undeclared key %q", s.header(), k)
			}
		}
		for _, f := range s.fields {
			switch n := count(dest, f.Name); n {
			case 1:
			case 0:
				t.Errorf("%s: key %q has no destination", s.header(), f.Name)
			default:
				t.Errorf("%s: key %q has %d destinations", s.header(), f.Name, n)
			}
		}
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}
