package results

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
)

// writeRunSet writes, through WriteSet, a set of run id into dir: one
// request row and a page carrying the id as kvsim's pages do.
func writeRunSet(t *testing.T, dir, id string) error {
	t.Helper()
	part := filepath.Join(t.TempDir(), "part")
	row := AppendRequest(nil, &Request{Policy: "lru", TTFTNs: 1e6, HitBlocks: []int64{0}, TPOTNs: NoTPOT, RunID: id})
	if err := os.WriteFile(part, row, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := &Summary{Scenario: "s", RunID: id, Policies: []Policy{{Name: "lru"}}}
	return WriteSet(dir, []string{"hbm"}, []string{part}, sum, func(csv string) ([]byte, error) {
		if !IsRequests(csv) {
			t.Errorf("the page is rendered from %s, not the new requests.csv", csv)
		}
		return []byte("<!DOCTYPE html>\n<html lang=\"en\" data-kvsim-charts=\"0\">\n<head>\n" + PageGenerator +
			"\n<meta name=\"kvsim-run-id\" content=\"" + id + "\">\n</head></html>\n"), nil
	})
}

// setState is which run each file of dir comes from ("-" missing).
func setState(dir string) [3]string {
	st := [3]string{"-", "-", "-"}
	for _, f := range SetRunIDs(dir) {
		i := map[string]int{SummaryFile: 0, RequestsFile: 1, PageFile: 2}[f.Name]
		st[i] = f.RunID
	}
	return st
}

// TestWriteSetKilledAtEachStep stops WriteSet after each step of its
// commit, as a kill would, over a folder holding another run's set: every
// state left is one run's files (report.html perhaps missing) or told as
// mixed; a page never stands beside data of another run.
func TestWriteSetKilledAtEachStep(t *testing.T) {
	const a, b = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"
	killed := errors.New("killed")
	defer func() { commitStep = func(string) error { return nil } }()
	for _, c := range []struct {
		step  string
		state [3]string // summary, requests, page
		mixed bool
	}{
		{"remove report.html", [3]string{a, a, "-"}, false},
		{RequestsFile, [3]string{a, b, "-"}, true},
		{SummaryFile, [3]string{b, b, "-"}, false},
		{PageFile, [3]string{b, b, b}, false},
	} {
		dir := t.TempDir()
		commitStep = func(string) error { return nil }
		if err := writeRunSet(t, dir, a); err != nil {
			t.Fatal(err)
		}
		commitStep = func(s string) error {
			if s == c.step {
				return killed
			}
			return nil
		}
		err := writeRunSet(t, dir, b)
		if c.step != PageFile && !errors.Is(err, killed) {
			t.Fatalf("step %s was never reached: %v", c.step, err)
		}
		if got := setState(dir); got != c.state {
			t.Errorf("killed after %s: summary, requests, page from %v, want %v", c.step, got, c.state)
		}
		if m := MixedSet(dir); (m != "") != c.mixed {
			t.Errorf("killed after %s: MixedSet %q, want mixed %v", c.step, m, c.mixed)
		}
	}
}

// TestWriteSetRefusesForeign: a set file kvsim did not write is never
// replaced nor removed, and nothing of the new set is left.
func TestWriteSetRefusesForeign(t *testing.T) {
	for _, name := range []string{SummaryFile, RequestsFile, PageFile} {
		dir := t.TempDir()
		mine := filepath.Join(dir, name)
		if err := os.WriteFile(mine, []byte("my own notes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := writeRunSet(t, dir, "cccccccccccccccc")
		if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), mine) {
			t.Errorf("%s: %v; want ErrNotOurs naming it", name, err)
		}
		if b, _ := os.ReadFile(mine); string(b) != "my own notes\n" {
			t.Errorf("%s changed: %q", name, b)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: the folder holds %d entries, want only the user's file", name, len(ents))
		}
	}
}

// TestOwnedMarks: each kind of output is told from a user's file.
func TestOwnedMarks(t *testing.T) {
	dir := t.TempDir()
	w := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var prof bytes.Buffer
	if err := pprof.WriteHeapProfile(&prof); err != nil {
		t.Fatal(err)
	}
	var gzText bytes.Buffer
	zw := gzip.NewWriter(&gzText)
	zw.Write([]byte("hello"))
	zw.Close()
	for _, c := range []struct {
		name string
		is   func(string) bool
		body []byte
		want bool
	}{
		{"heap.prof", IsPprof, prof.Bytes(), true},
		{"text.gz", IsPprof, gzText.Bytes(), false},
		{"plain.prof", IsPprof, []byte("name = 1\n"), false},
		{"p.html", IsPage, []byte("<!DOCTYPE html>\n<head>\n" + PageGenerator + "\n"), true},
		{"old.html", IsPage, []byte("<!DOCTYPE html>\n<html lang=\"en\" data-kvsim-charts=\"3\">\n"), true},
		{"mine.html", IsPage, []byte("<!DOCTYPE html>\n<html><body>kvsim</body></html>\n"), false},
		{"profile.toml", IsProfile, FormatProfile(&Profile{BlockBytes: 65536}), true},
		{"mine.toml", IsProfile, []byte("# my profile\nmachine = \"m\"\n"), false},
		{"requests.csv", IsRequests, []byte(RequestsHeader([]string{"hbm"})), true},
		{"mine.csv", IsRequests, []byte("policy,ttft_ms\n"), false},
		{"summary.json", IsSummary, []byte(`{"scenario": "s", "policies": []}`), true},
		{"mine.json", IsSummary, []byte(`{"name": "s"}`), false},
	} {
		if got := c.is(w(c.name, c.body)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Missing or empty: replaceable; a link or a user's file: not.
	if ok, exists := Replaceable(filepath.Join(dir, "none"), IsPage); !ok || exists {
		t.Errorf("a missing file: ok %v, exists %v", ok, exists)
	}
	if ok, _ := Replaceable(w("empty", nil), IsPage); !ok {
		t.Error("an empty file is not replaceable")
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "p.html"), link); err != nil {
		t.Fatal(err)
	}
	if ok, _ := Replaceable(link, IsPage); ok {
		t.Error("a symbolic link to a page is replaceable")
	}
	if ok, _ := Replaceable(filepath.Join(dir, "mine.html"), IsPage); ok {
		t.Error("a user's page is replaceable")
	}
}

// TestCopySetKilledAtEachStep: CopySet, stopped after each step as a kill
// would, leaves what WriteSet leaves: one run's files or files told as
// mixed; at the end, the source's set byte for byte; no temporary.
func TestCopySetKilledAtEachStep(t *testing.T) {
	const a, b = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"
	killed := errors.New("killed")
	defer func() { commitStep = func(string) error { return nil } }()
	src := t.TempDir()
	if err := writeRunSet(t, src, b); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		step  string
		state [3]string // summary, requests, page
		mixed bool
	}{
		{"remove report.html", [3]string{a, a, "-"}, false},
		{RequestsFile, [3]string{a, b, "-"}, true},
		{SummaryFile, [3]string{b, b, "-"}, false},
		{PageFile, [3]string{b, b, b}, false},
	} {
		commitStep = func(string) error { return nil }
		dst := t.TempDir()
		if err := writeRunSet(t, dst, a); err != nil {
			t.Fatal(err)
		}
		commitStep = func(s string) error {
			if s == c.step {
				return killed
			}
			return nil
		}
		if err := CopySet(src, dst); !errors.Is(err, killed) {
			t.Fatalf("%s: %v", c.step, err)
		}
		if got := setState(dst); got != c.state || (MixedSet(dst) != "") != c.mixed {
			t.Errorf("killed after %s: %v (mixed %q), want %v", c.step, got, MixedSet(dst), c.state)
		}
	}
	commitStep = func(string) error { return nil }
	dst := t.TempDir()
	if err := CopySet(src, dst); err != nil {
		t.Fatal(err)
	}
	for _, n := range SetFiles {
		x, _ := os.ReadFile(filepath.Join(src, n))
		y, _ := os.ReadFile(filepath.Join(dst, n))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs", n)
		}
	}
	if ents, _ := os.ReadDir(dst); len(ents) != 3 {
		t.Errorf("left in the folder: %v", ents)
	}
	// A file kvsim did not write is not replaced.
	if err := os.WriteFile(filepath.Join(dst, SummaryFile), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CopySet(src, dst); !errors.Is(err, ErrNotOurs) {
		t.Errorf("over another file: %v", err)
	}
}
