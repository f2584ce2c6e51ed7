package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every temporary Create makes is one Match (and so RemoveStale) knows,
// and nothing else is.
func TestMatchDerivedFromCreate(t *testing.T) {
	dir := t.TempDir()
	kinds := []Temp{For("summary.json"), {".requests-", ".csv"}, {".kvsim-probe-", ""}}
	for _, k := range kinds {
		f, err := k.Create(dir)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if !k.Match(filepath.Base(f.Name())) {
			t.Errorf("%+v does not match its own %s", k, f.Name())
		}
	}
	keep := []string{"summary.json", ".summary.json.", ".summary.json.1x", ".requests-.csv", ".requests-12.csvx", "x.kvsim-probe-1"}
	for _, n := range keep {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	RemoveStale(dir, kinds...)
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if strings.Join(left, " ") != strings.Join(slices.Sorted(slices.Values(keep)), " ") {
		t.Errorf("left %v, want %v", left, slices.Sorted(slices.Values(keep)))
	}
}

// Write replaces a file whole, readable by all, and leaves no temporary;
// a failed one names the path asked for.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	for _, s := range []string{"one", "two"} {
		if err := Write(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(p)
	st, _ := os.Stat(p)
	if err != nil || string(b) != "two" || st.Mode().Perm() != 0o644 {
		t.Fatalf("%q %v %v", b, st.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries left", len(ents))
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	err = Write(sub, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), sub) || strings.Contains(err.Error(), ".sub.") {
		t.Errorf("rename onto a folder: %v", err)
	}
	err = Write(filepath.Join(dir, "no", "b"), nil)
	if err == nil || strings.Contains(err.Error(), "*") {
		t.Errorf("no folder: %v", err)
	}
}
