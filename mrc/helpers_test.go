package mrc

import (
	"sync"
	"testing"

	"kvsim/internal/testenv"
)

var (
	convOnce sync.Once
	conv     *Trace
	convErr  error
)

// conversation loads the shared conversation trace once per test binary.
func conversation(tb testing.TB) *Trace {
	tb.Helper()
	traceFile := testenv.ConversationTrace(tb)
	convOnce.Do(func() { conv, convErr = Load(traceFile) })
	if convErr != nil {
		tb.Fatal(convErr)
	}
	return conv
}
