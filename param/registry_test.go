package param

import (
	"slices"
	"testing"
)

type entry struct {
	name string
	rank int
}

func (e entry) Ident() (string, int) { return e.name, e.rank }

// TestRegistry: entries come back in rank order whatever order they were
// added in; a name or a rank taken twice panics.
func TestRegistry(t *testing.T) {
	r := Registry[entry]{What: "thing"}
	for _, e := range []entry{{"c", 3}, {"a", 1}, {"b", 2}} {
		r.Add(e)
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Names %v", got)
	}
	if e, ok := r.Lookup("b"); !ok || e.rank != 2 {
		t.Errorf("Lookup b: %v %v", e, ok)
	}
	if _, ok := r.Lookup("z"); ok {
		t.Error("Lookup of an unregistered name")
	}
	all := r.All()
	all[0].name = "changed"
	if r.Names()[0] != "a" {
		t.Error("All shares the registry's list")
	}
	for _, dup := range []entry{{"a", 9}, {"d", 2}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v registered twice without a panic", dup)
				}
			}()
			r.Add(dup)
		}()
	}
}
