package core

import (
	"reflect"
	"testing"
)

// TestStatsAdd: Add sums every counter of Stats, per-tier ones element by
// element; a field Add did not know (a new type) would panic here. A
// cluster's totals are this sum, so none can be left out.
func TestStatsAdd(t *testing.T) {
	fill := func(v int64) Stats {
		var s Stats
		sv := reflect.ValueOf(&s).Elem()
		for i := range sv.NumField() {
			f := sv.Field(i)
			switch f.Kind() {
			case reflect.Int64:
				f.SetInt(v)
			case reflect.Slice:
				f.Set(reflect.ValueOf([]int64{v, v, v}))
			default:
				t.Fatalf("Stats.%s: kind %s", sv.Type().Field(i).Name, f.Kind())
			}
		}
		return s
	}
	s, o := fill(2), fill(5)
	o.Hits = o.Hits[:2] // a shorter per-tier slice adds up to its length
	s.Add(&o)
	sv := reflect.ValueOf(s)
	for i := range sv.NumField() {
		name, f := sv.Type().Field(i).Name, sv.Field(i)
		switch f.Kind() {
		case reflect.Int64:
			if f.Int() != 7 {
				t.Errorf("%s = %d after 2 + 5", name, f.Int())
			}
		case reflect.Slice:
			want := []int64{7, 7, 7}
			if name == "Hits" {
				want = []int64{7, 7, 2}
			}
			if got := f.Interface().([]int64); !reflect.DeepEqual(got, want) {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
	}
}
