package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	if d := Diff("a\nb\n", "a\nb\n"); d != "" {
		t.Fatalf("equal texts: %q", d)
	}
	want := "1\n2\n3\n4\n5\n6\n7\n8\n9\n"
	got := "1\n2\n3\n4\nfive\n6\n7\n8\n9\nten\n"
	d := Diff(want, got)
	for _, line := range []string{"-   5  5", "+   5  five", "+  10  ten", "    3  3", "    7  7"} {
		if !strings.Contains(d, line+"\n") {
			t.Errorf("diff lacks %q:\n%s", line, d)
		}
	}
	if strings.Contains(d, "   1  1") {
		t.Errorf("diff shows far context:\n%s", d)
	}
	// Too large for the table: the first difference.
	big := strings.Repeat("x\n", 3000)
	if d := Diff(big+"a", big+"b"); !strings.Contains(d, "line 3001") {
		t.Errorf("large diff: %q", d)
	}
}

// fakeTB records failures instead of stopping.
type fakeTB struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.failed = true
	f.msg = format
}

func TestCheckAndUpdate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeTB{TB: t}
	Check(f, p, []byte("old\n"))
	if f.failed {
		t.Fatal("equal output failed")
	}
	Check(f, p, []byte("new\n"))
	if !f.failed {
		t.Fatal("changed output passed")
	}
	*update = true
	defer func() { *update = false }()
	Check(t, p, []byte("new\n"))
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Fatalf("-update wrote %q", b)
	}
}

func TestScript(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.txt")
	const text = "# comment\necho a b\n----\na b\n\nnothing\n----\n\n# only a comment\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	echo := func(cmd string) string { return strings.TrimPrefix(strings.TrimPrefix(cmd, "nothing"), "echo ") }
	Script(t, p, echo) // the file is what the commands print: unchanged
	*update = true
	defer func() { *update = false }()
	Script(t, p, func(cmd string) string { return strings.ToUpper(echo(cmd)) })
	b, _ := os.ReadFile(p)
	if want := strings.Replace(text, "----\na b", "----\nA B", 1); string(b) != want {
		t.Fatalf("-update wrote %q, want %q", b, want)
	}
}
