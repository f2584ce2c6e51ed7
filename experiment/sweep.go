package experiment

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"kvsim/results"
	"kvsim/scenario"
)

// A Sweep is one scenario at several values of one key: every policy is
// simulated at each value.
type Sweep struct {
	Key    string               // the key varied, as scenario.LoadWith's sets take it
	Values []string             // its values, trimmed
	Points []*scenario.Scenario // one per value, named <scenario>-<tag>-<value>
}

// LoadSweep loads the scenario at path once per value of key (after sets),
// so that every point is checked before any is simulated. tag names the
// points' results folders.
func LoadSweep(path string, sets []string, key, tag string, values []string) (*Sweep, error) {
	base, err := scenario.LoadWith(path, sets)
	if err != nil {
		return nil, BadInput(err)
	}
	s := &Sweep{Key: key}
	for _, v := range values {
		v = strings.TrimSpace(v)
		sc, err := scenario.LoadWith(path, append(slices.Clone(sets), key+"="+v))
		if err != nil {
			return nil, BadInput(err)
		}
		sc.Name = fmt.Sprintf("%s-%s-%s", base.Name, PathSafe(tag), PathSafe(v))
		s.Points, s.Values = append(s.Points, sc), append(s.Values, v)
	}
	return s, nil
}

// Run runs each point in turn (Run, with o), marking its summary with its
// value; done, if set, is called with each point's summary before the next
// starts, and its error stops the sweep. With o.Out, every point's folder
// is checked, made and locked before any is simulated (OpenResults), and
// Out/index.html compares the points at the end, as kvsim sweep writes.
func (s *Sweep) Run(ctx context.Context, o Options, done func(i int, sum *results.Summary) error) ([]*results.Summary, error) {
	var r *Results
	if o.Out != "" {
		var names []string
		for _, sc := range s.Points {
			names = append(names, sc.Name)
		}
		var err error
		if r, err = OpenResults(ctx, names, true, o); err != nil {
			return nil, err
		}
		defer r.Close()
		if err := checkEventsAll(o, names); err != nil {
			return nil, err
		}
	}
	release, err := SpoolScenarios(ctx, s.Points...) // one copy of a piped trace for every point
	if err != nil {
		return nil, err
	}
	defer release()
	var sums []*results.Summary
	for i, sc := range s.Points {
		o.Sweep = &results.SweepPoint{Key: s.Key, Value: s.Values[i]}
		var sum *results.Summary
		if r != nil {
			sum, err = r.Run(ctx, sc, o)
		} else {
			sum, err = Run(ctx, sc, o)
		}
		if err != nil {
			return nil, err
		}
		if done != nil {
			if err := done(i, sum); err != nil {
				return nil, err
			}
		}
		sums = append(sums, sum)
	}
	if r != nil {
		if err := r.WriteIndex(ctx, sums); err != nil {
			return nil, err
		}
	}
	return sums, nil
}

// PathSafe keeps a value usable in a folder name.
func PathSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// SweepOrder puts the points of one sweep in the order of their values
// (sizes by bytes, numbers numerically: 32GiB before 128GiB, 2 before 10),
// whatever order their folders' names sort in; anything else keeps its
// order. Each value is read with the first parser that takes them all, so
// one key's values share a unit.
func SweepOrder(ss []*results.Summary) []*results.Summary {
	if len(ss) < 2 || ss[0].Sweep == nil {
		return ss
	}
	for _, s := range ss {
		if s.Sweep == nil || s.Sweep.Key != ss[0].Sweep.Key {
			return ss
		}
	}
	parsers := []func(string) (float64, error){
		func(v string) (float64, error) { return strconv.ParseFloat(v, 64) },
		func(v string) (float64, error) { n, err := scenario.ParseBytes(v); return float64(n), err },
		func(v string) (float64, error) { n, err := scenario.ParseDuration(v); return float64(n), err },
		scenario.ParseBandwidth,
	}
	for _, parse := range parsers {
		vals := make([]float64, len(ss))
		ok := true
		for i, s := range ss {
			v, err := parse(strings.TrimSpace(s.Sweep.Value))
			if err != nil || math.IsNaN(v) {
				ok = false
				break
			}
			vals[i] = v
		}
		if !ok {
			continue
		}
		idx := make([]int, len(ss))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return vals[idx[a]] < vals[idx[b]] })
		out := make([]*results.Summary, len(ss))
		for i, k := range idx {
			out[i] = ss[k]
		}
		return out
	}
	return ss
}
