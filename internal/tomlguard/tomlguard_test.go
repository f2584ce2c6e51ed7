package tomlguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"kvsim/internal/testenv"
)

func TestCheck(t *testing.T) {
	at := func(depth int) string {
		return (&scanner{}).deep(depth).Msg
	}
	deep := strings.Repeat("a.", MaxDepth) + "b"
	for _, tc := range []struct {
		name, src string
		line      int // 0: accepted
	}{
		{"flat", "a = 1\n[t]\nb = 2.5\n[[u]]\nc = [1, 2]\n", 0},
		{"at the limit", strings.Repeat("a.", MaxDepth-1) + "b = 1\n", 0},
		{"dotted key", deep + " = 1\n", 1},
		{"header", "# c\n[" + deep + "]\n", 2},
		{"array header", "\n[[" + deep + "]]\n", 2},
		{"header then key", "[a.b.c.d]\ne.f.g.h = 1\n" + "e.f.g.h.i = 1\n", 3},
		{"inline tables", "x = " + strings.Repeat("{a = ", MaxDepth) + "1" + strings.Repeat("}", MaxDepth) + "\n", 1},
		{"arrays", "x = " + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), 1},
		{"arrays at the limit", "x = " + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), 0},
		{"array over lines", "x = [\n[\n[[[[[[[1]]]]]]]]]\n", 3},
		{"a line in an array is no header", "x = [\n[1],\n]\n" + "a.b.c.d.e.f.g = 1\n", 0},
		{"empty inline tables", "x = {}\ny = {a = {}, b = {c = {}}}\n", 0},
		// Brackets, braces and dots in strings and comments are not nesting.
		{"basic string", `x = "{{{{{{{{{{[[[[[[[[[[a.b.c.d.e.f.g.h.i.j"` + "\n", 0},
		{"escaped quote", `x = "\"{{{{{{{{{{{{{{"` + "\n", 0},
		{"literal string", `x = '\{{{{{{{{{{{{'` + "\n", 0},
		{"multi-line", "x = '''\n{{{{{{{{{{{{\n'''\ny = \"\"\"\n[[[[[[[[[[\n\"\"\"\n" + deep + " = 1\n", 7},
		{"comment", "# {{{{{{{{{{{{{{ [[[[[[[[[[[[\nx = 1 # {{{{{{{{{{{{\n", 0},
		{"quoted keys", `"a.b.c.d.e.f.g.h.i" = 1` + "\n['a.b.c.d.e.f.g.h.i'.\"j.k.l.m.n\"]\n", 0},
		{"floats", "x = 1.5\ny = [1.5, 2.5e3]\nz = {a = 1.25}\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.src))
			switch {
			case tc.line == 0 && err != nil:
				t.Errorf("refused: %v", err)
			case tc.line != 0 && err == nil:
				t.Errorf("accepted")
			case tc.line != 0 && (err.Line != tc.line || err.Msg != at(MaxDepth+1)):
				t.Errorf("got %v, want line %d: %s", err, tc.line, at(MaxDepth+1))
			}
		})
	}
	if err := Check(make([]byte, MaxBytes+1)); err == nil || err.Line != 0 {
		t.Errorf("%d bytes: %v", MaxBytes+1, err)
	}
}

// Every TOML file the repository ships passes.
func TestShippedFiles(t *testing.T) {
	files, _ := filepath.Glob(testenv.Path(t, "scenarios", "*.toml"))
	if len(files) == 0 {
		t.Fatal("no scenarios found")
	}
	for _, f := range files {
		data, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if e := Check(data); e != nil {
			t.Errorf("%s: %v", f, e)
		}
	}
}

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(p, make([]byte, MaxBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || err.Error() != tooLong.Msg {
		t.Errorf("a file of %d bytes: %v", MaxBytes+1, err)
	}
	if _, err := ReadFile("/dev/zero"); err == nil || err.Error() != tooLong.Msg {
		t.Errorf("/dev/zero: %v", err) // read only up to the limit, not forever
	}
}

// depth is how deep v nests as the scanner counts it: a key one below its
// table, a table or array at its key's depth, an array's elements one
// below it (an array of tables counts as the tables: less than the scanner
// counts, so that the check is a bound).
func depth(v any, d int) int {
	deepest := d
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			deepest = max(deepest, depth(c, d+1))
		}
	case []map[string]any:
		for _, c := range v {
			deepest = max(deepest, depth(c, d))
		}
	case []any:
		for _, c := range v {
			switch c.(type) {
			case map[string]any, []any:
				deepest = max(deepest, depth(c, d+1))
			}
		}
	}
	return deepest
}

// FuzzCheck: whatever the TOML library decodes from text Check accepted
// nests at most MaxDepth levels (the library only ever sees that much).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"a = 1\n[t]\nb = {c = [1, {d = 2}]}\n[[u]]\nv.w = 'x'\n",
		"x = [\n[\n[1]\n]\n]\n",
		"[a.\"b.c\".d]\ne.f = {g.h = [[{i = 1}]]}\n",
		"x = \"\"\"\n{{\n\"\"\"\ny = '''[['''\n",
		"x = {a = 1,\n b = {c = 2}}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if Check([]byte(src)) != nil {
			return
		}
		var m map[string]any
		if _, err := toml.Decode(src, &m); err != nil {
			return
		}
		if d := depth(m, 0); d > MaxDepth {
			t.Fatalf("accepted, and decodes %d levels deep", d)
		}
	})
}

// TestCheckUnfollowable: text the scanner cannot follow (stray closers,
// containers opened where no value goes) is refused once more containers
// are open than the limit allows, never indexed past its stack (found by
// FuzzNesting's input, kept in scenario/testdata/fuzz).
func TestCheckUnfollowable(t *testing.T) {
	for _, src := range []string{
		"x" + strings.Repeat("={}{0", 20),
		"a = [1] " + strings.Repeat("[", 20),
		"a = {} x = " + strings.Repeat("[", 20),
		"}" + strings.Repeat("[", 20),
	} {
		if err := Check([]byte(src)); err == nil {
			t.Errorf("%q: accepted", src)
		}
	}
}
