package cluster

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"kvsim/param"
)

// TestRouterRegistry: every registered router builds with the defaults,
// names itself, has its row and section in docs/routers.md, and declares
// each key with a doc and a default; every field of Keys is some router's.
func TestRouterRegistry(t *testing.T) {
	doc, err := os.ReadFile("../docs/routers.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Routers() {
		r, err := NewRouter(s.Name, DefaultParams())
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if r.Name() != s.Name {
			t.Errorf("%s names itself %q", s.Name, r.Name())
		}
		if !strings.Contains(string(doc), "\n| `"+s.Name+"` |") || !strings.Contains(string(doc), "\n## "+s.Name) {
			t.Errorf("docs/routers.md: %s needs a row in the routers' table and a ## %s section", s.Name, s.Name)
		}
		if s.Brief == "" {
			t.Errorf("%s: no Brief", s.Name)
		}
		for _, k := range s.Keys {
			if k.Doc == "" || (k.Default == nil && k.DefaultDoc == "") {
				t.Errorf("%s: key %s needs a doc and a default", s.Name, k.Name)
			}
		}
	}
	keys := RouterKeys()
	ty := reflect.TypeFor[Keys]()
	for i := range ty.NumField() {
		if tag := ty.Field(i).Tag.Get("key"); tag != "" && param.Find(keys, tag) == nil {
			t.Errorf("Keys.%s: no router declares key %s", ty.Field(i).Name, tag)
		}
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.Name] {
			t.Errorf("key %s declared by two routers", k.Name)
		}
		seen[k.Name] = true
	}
}

// TestKeysExtra: a key without a field of Keys keeps its value in Extra.
func TestKeysExtra(t *testing.T) {
	var k Keys
	k.Set("cache_threshold", 0.25)
	k.Set("some_new_key", int64(3))
	if k.CacheThreshold != 0.25 || k.Get("cache_threshold") != 0.25 || k.Get("some_new_key") != int64(3) {
		t.Fatalf("%+v", k)
	}
}
