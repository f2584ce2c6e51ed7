package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"kvsim/internal/testenv"
)

// readyEnv names the file a kvsim started by a test creates once its
// signal handling is in place (signalsReady).
const readyEnv = "KVSIM_TEST_READY"

// readyFile is a fresh path for readyEnv and the wait for it: a test
// signals a child only after the wait, since a race-built binary on a
// loaded machine can take seconds to get there, and a signal before that
// kills it (exit -1) instead of stopping it with 130.
func readyFile(t *testing.T) (env string, wait func()) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ready")
	return readyEnv + "=" + p, func() {
		t.Helper()
		for deadline := testenv.Deadline(t); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(p); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the kvsim started by the test never got to its signal handling")
			}
		}
	}
}
