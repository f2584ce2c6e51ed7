// Package testenv is what kvsim's tests share about their environment:
// whether a missing prerequisite skips or fails (KVSIM_REQUIRE_ALL, and
// KVSIM_REQUIRE_GPU for an accelerator), where
// the module and the shared data beside it are, and golden files.
//
// Only tests import it.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
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

// ConversationTrace is the shared Mooncake conversation trace (Shared).
func ConversationTrace(tb testing.TB) string {
	tb.Helper()
	return Shared(tb, "traces", "conversation_trace.jsonl")
}

// Reference is a shared reference result, shared/reference/NAME (Shared).
func Reference(tb testing.TB, name string) string {
	tb.Helper()
	return Shared(tb, "reference", name)
}
