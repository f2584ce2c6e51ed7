package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rec records what a skip-or-fail helper did instead of doing it; as with a
// real test, nothing after a failure counts.
type rec struct {
	testing.TB
	skipped, failed string
}

func (r *rec) Helper()                           {}
func (r *rec) Skip(args ...any)                  { r.skip(fmt.Sprint(args...)) }
func (r *rec) Skipf(format string, args ...any)  { r.skip(fmt.Sprintf(format, args...)) }
func (r *rec) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }
func (r *rec) skip(msg string) {
	if r.failed == "" {
		r.skipped = msg
	}
}

// The one rule: a missing prerequisite skips, and fails under its
// variable: KVSIM_REQUIRE_ALL for software, KVSIM_REQUIRE_GPU for an
// accelerator (which KVSIM_REQUIRE_ALL does not require: CI has none).
func TestSkipOrFail(t *testing.T) {
	for _, c := range []struct {
		all, gpu       string
		failAll, failG bool
	}{{"", "", false, false}, {"1", "", true, false}, {"0", "", false, false}, {"", "1", false, true}, {"1", "1", true, true}} {
		t.Setenv("KVSIM_REQUIRE_ALL", c.all)
		t.Setenv("KVSIM_REQUIRE_GPU", c.gpu)
		var r rec
		Missing(&r, "no %s", "fio")
		if (r.failed != "") != c.failAll || (r.skipped != "") == c.failAll {
			t.Errorf("ALL=%q: Missing failed %q, skipped %q", c.all, r.failed, r.skipped)
		}
		r = rec{}
		MissingGPU(&r, "no %s", "GPU")
		if (r.failed != "") != c.failG || (r.skipped != "") == c.failG {
			t.Errorf("ALL=%q GPU=%q: MissingGPU failed %q, skipped %q", c.all, c.gpu, r.failed, r.skipped)
		}
	}
}

// A downloaded trace is found in $KVSIM_TRACES, the repository's traces/
// or the shared data's; when it is in none, the skip names every place
// looked and where the file comes from (the tests used to look in the
// shared folder only, while the README said traces/).
func TestTrace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x_trace.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KVSIM_REQUIRE_ALL", "")
	t.Setenv("KVSIM_TRACES", dir)
	if got := Trace(t, "x_trace.jsonl", "nowhere"); got != filepath.Join(dir, "x_trace.jsonl") {
		t.Errorf("in KVSIM_TRACES: %q", got)
	}
	var r rec
	Trace(&r, "none_trace.jsonl", "example.org/traces")
	for _, want := range []string{dir, Path(t, "traces"), SharedPath(t, "traces"), "example.org/traces", "KVSIM_TRACES"} {
		if !strings.Contains(r.skipped, want) {
			t.Errorf("skip %q does not name %s", r.skipped, want)
		}
	}
}
