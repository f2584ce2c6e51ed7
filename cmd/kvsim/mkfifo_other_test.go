//go:build !unix

package main

import (
	"os"
	"testing"
)

// mkfifo stands in for a named pipe where there are none: a folder, which
// is no regular file either.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}
