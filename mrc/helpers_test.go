package mrc

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Shared data lives beside the repository, never inside it.
var (
	traceFile = filepath.Join("..", "..", "shared", "traces", "conversation_trace.jsonl")
	refFile   = filepath.Join("..", "..", "shared", "reference", "conversation_libcachesim.json")
)

// need skips when a shared file is absent, unless KVSIM_REQUIRE_ALL=1.
func need(tb testing.TB, path string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("KVSIM_REQUIRE_ALL") == "1" {
			tb.Fatalf("%s is required (KVSIM_REQUIRE_ALL=1): %v", path, err)
		}
		tb.Skipf("skipping: %s not present (shared data lives outside the repo; set KVSIM_REQUIRE_ALL=1 to fail instead)", path)
	}
}

var (
	convOnce sync.Once
	conv     *Trace
	convErr  error
)

// conversation loads the shared conversation trace once per test binary.
func conversation(tb testing.TB) *Trace {
	tb.Helper()
	need(tb, traceFile)
	convOnce.Do(func() { conv, convErr = Load(traceFile) })
	if convErr != nil {
		tb.Fatal(convErr)
	}
	return conv
}
