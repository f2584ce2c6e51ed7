// Package golden compares test output with golden files: one harness for
// every golden format (core's and policy's scripts, report's chart data,
// the generator's trace, the scenario reference in doc.go and the README,
// the shipped scenarios' output hashes). go test -update rewrites the
// files from the current output; review the diff before committing it.
//
// Only tests import it.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata from the current output")

// Updating reports whether the test binary runs with -update.
func Updating() bool { return *update }

// Check compares got with the file at path. Under -update it writes got
// there instead (creating or replacing it); otherwise a difference fails tb
// with the differing lines.
func Check(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from the current output (if intended, run go test with -update and review the change):\n%s",
			path, Diff(string(want), string(got)))
	}
}

// maxDiffCells bounds the diff's table; past it Diff shows the first
// differing line only.
const maxDiffCells = 4 << 20

// maxDiffLines bounds what Diff prints; diffContext is the unchanged lines
// shown around each change.
const (
	maxDiffLines = 60
	diffContext  = 2
)

// Diff is a line diff of want and got: "-" lines only in want, "+" lines
// only in got, each with its line number in the file it comes from, and a
// little context. It is "" when they are equal.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	if len(a)*len(b) > maxDiffCells {
		return firstDiff(a, b)
	}
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		sign byte // ' ', '-' or '+'
		line int  // 1-based, in want for ' ' and '-', in got for '+'
		text string
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', i + 1, a[i]})
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, op{'+', j + 1, b[j]})
			j++
		default:
			ops = append(ops, op{'-', i + 1, a[i]})
			i++
		}
	}
	// Print changes with diffContext unchanged lines around them.
	near := make([]bool, len(ops))
	for k, o := range ops {
		if o.sign != ' ' {
			for d := max(0, k-diffContext); d <= min(len(ops)-1, k+diffContext); d++ {
				near[d] = true
			}
		}
	}
	var out strings.Builder
	n, gap := 0, false
	for k, o := range ops {
		if !near[k] {
			gap = true
			continue
		}
		if n++; n > maxDiffLines {
			out.WriteString("...\n")
			break
		}
		if gap && out.Len() > 0 {
			out.WriteString("  ...\n")
		}
		gap = false
		fmt.Fprintf(&out, "%c%4d  %s\n", o.sign, o.line, o.text)
	}
	return out.String()
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("first difference at line %d:\n-%4d  %s\n+%4d  %s\n", i+1, i+1, x, i+1, y)
		}
	}
	return ""
}

// Script runs a command script: blocks separated by blank lines, each an
// optional run of "#" comment lines, then a command, then "----" and the
// output the command must print (nothing after "----" for no output).
// run executes one command and returns its output. The file is compared
// as a whole with what the commands print now (Check), so -update
// rewrites every block's output and keeps the comments and commands.
func Script(t *testing.T, path string, run func(cmd string) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, blk := range strings.Split(string(data), "\n\n") {
		blk = strings.Trim(blk, "\n")
		if blk == "" {
			continue
		}
		lines := strings.Split(blk, "\n")
		for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
			b.WriteString(lines[0] + "\n")
			lines = lines[1:]
		}
		if len(lines) == 0 {
			b.WriteString("\n")
			continue
		}
		got := strings.TrimRight(run(lines[0]), "\n")
		if got != "" {
			got += "\n"
		}
		fmt.Fprintf(&b, "%s\n----\n%s\n", lines[0], got)
	}
	Check(t, path, []byte(strings.TrimRight(b.String(), "\n")+"\n"))
}

// EndGenerated closes a generated region of a document.
const EndGenerated = "<!-- end of generated text -->"

// Region checks the lines of file between the first line that starts with
// start (a marker saying what generates them) and the next EndGenerated
// line: they must be want. Under -update it rewrites just those lines.
func Region(tb testing.TB, file, start, want string) {
	tb.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	text := string(b)
	i := strings.Index("\n"+text, "\n"+start)
	if i < 0 {
		tb.Fatalf("%s: no line starting %q", file, start)
	}
	nl := strings.IndexByte(text[i:], '\n')
	if nl < 0 {
		tb.Fatalf("%s: nothing after %q", file, start)
	}
	from := i + nl + 1
	to := strings.Index("\n"+text[from:], "\n"+EndGenerated+"\n")
	if to < 0 {
		tb.Fatalf("%s: no %q line after %q", file, EndGenerated, start)
	}
	Check(tb, file, []byte(text[:from]+want+text[from+to:]))
}
