package testenv

import (
	"fmt"
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
