package main

import (
	"context"
	"io"
)

// traceConvert stands in for kvsim trace convert until the binary trace
// cache lands (it replaces this file).
func traceConvert(_ context.Context, _ []string, _, _ io.Writer) error {
	return badInputf("trace convert: not available in this build")
}
