// Package testenv is what kvsim's tests share about their environment:
// whether a missing prerequisite skips or fails (KVSIM_REQUIRE_ALL, and
// KVSIM_REQUIRE_GPU for an accelerator), where the module, the shared data
// beside it and downloaded traces (KVSIM_TRACES) are.
//
// Only tests import it.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireAll reports whether KVSIM_REQUIRE_ALL is set (to anything but ""
// or "0"): then a test whose prerequisite is missing fails instead of
// skipping, so a CI run proves that everything ran.
func RequireAll() bool {
	v := os.Getenv("KVSIM_REQUIRE_ALL")
	return v != "" && v != "0"
}

// Missing skips tb, or fails it under KVSIM_REQUIRE_ALL, saying what is
// missing (format and args, as for Skipf).
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if RequireAll() {
		tb.Fatalf("%s (KVSIM_REQUIRE_ALL is set, so this fails instead of skipping)", msg)
	}
	tb.Skipf("skipping: %s (set KVSIM_REQUIRE_ALL=1 to fail instead)", msg)
}

// RequireGPU reports whether KVSIM_REQUIRE_GPU is "1": set on a machine
// with an accelerator (hw/accel/gpucheck.sh), it makes a test that finds
// none fail instead of skipping. KVSIM_REQUIRE_ALL does not imply it: CI
// runs without a GPU.
func RequireGPU() bool { return os.Getenv("KVSIM_REQUIRE_GPU") == "1" }

// MissingGPU is Missing for a test that needs a real accelerator: it skips,
// or fails under KVSIM_REQUIRE_GPU=1, saying why none was found.
func MissingGPU(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if RequireGPU() {
		tb.Fatalf("KVSIM_REQUIRE_GPU=1, but %s", msg)
	}
	tb.Skip(msg)
}

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

// Root is the module root (the folder holding go.mod), found upward from
// the working directory, which go test sets to the package's folder.
func Root(tb testing.TB) string {
	tb.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				return
			}
			up := filepath.Dir(dir)
			if up == dir {
				rootErr = fmt.Errorf("no go.mod above the working directory")
				return
			}
			dir = up
		}
	})
	if rootErr != nil {
		tb.Fatalf("testenv: %v", rootErr)
	}
	return root
}

// Path is a path inside the module: Path(tb, "scenarios", "quickstart.toml").
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	return filepath.Join(append([]string{Root(tb)}, elem...)...)
}

// SharedPath is where a file of the shared data lives: the folder "shared"
// beside the module root, which holds what the repository does not ship
// (the Mooncake conversation trace, reference results). It does not check
// that the file is there; Shared does.
func SharedPath(tb testing.TB, elem ...string) string {
	tb.Helper()
	return filepath.Join(append([]string{filepath.Dir(Root(tb)), "shared"}, elem...)...)
}

// Shared is SharedPath of a file that must exist: when it does not, the
// test skips (or fails, under KVSIM_REQUIRE_ALL).
func Shared(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := SharedPath(tb, elem...)
	if _, err := os.Stat(p); err != nil {
		Missing(tb, "%s not present (shared data lives outside the repository; the Mooncake trace comes from kvcache-ai/Mooncake FAST25-release/traces): %v", p, err)
	}
	return p
}

// TraceDirs are the folders a third-party trace is looked for in, in
// order: $KVSIM_TRACES if set, the repository's traces/ (where the README
// says to put a download; git-ignored), and traces/ of the shared data
// beside the repository.
func TraceDirs(tb testing.TB) []string {
	tb.Helper()
	var dirs []string
	if d := os.Getenv("KVSIM_TRACES"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		dirs = append(dirs, d)
	}
	return append(dirs, Path(tb, "traces"), SharedPath(tb, "traces"))
}

// Trace is the first of TraceDirs holding the trace file name: when none
// does, the test skips (or fails, under KVSIM_REQUIRE_ALL) naming every
// place it looked and where the file comes from.
func Trace(tb testing.TB, name, source string) string {
	tb.Helper()
	dirs := TraceDirs(tb)
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	Missing(tb, "%s not found in %s: download it from %s into one of them (or name its folder with KVSIM_TRACES)",
		name, strings.Join(dirs, ", "), source)
	return ""
}

// ConversationTrace is the Mooncake conversation trace (Trace).
func ConversationTrace(tb testing.TB) string {
	tb.Helper()
	return Trace(tb, "conversation_trace.jsonl", "kvcache-ai/Mooncake, folder FAST25-release/traces")
}

// Reference is a shared reference result, shared/reference/NAME (Shared).
func Reference(tb testing.TB, name string) string {
	tb.Helper()
	return Shared(tb, "reference", name)
}

// Deadline is when a test waiting for something (a child process, a
// server, a file) gives up and says what it waited for: shortly before
// go test's -timeout would stop the whole binary, so no test bounds how
// long work may take on a loaded machine. Without a -timeout, an hour.
func Deadline(t *testing.T) time.Time {
	d, ok := t.Deadline()
	if !ok {
		return time.Now().Add(time.Hour)
	}
	// The margin leaves time to report and clean up (10%, at most a minute).
	return d.Add(-min(time.Until(d)/10, time.Minute))
}
