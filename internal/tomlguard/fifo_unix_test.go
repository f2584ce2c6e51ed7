//go:build unix

package tomlguard

import (
	"path/filepath"
	"syscall"
	"testing"
)

// A named pipe nobody writes is refused at once: the open used to wait
// for a writer forever, and SIGINT did not stop it.
func TestReadFileIdlePipe(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.toml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := ReadFile(p); err == nil || err.Error() != "not a regular file, and nothing was written to it" {
		t.Errorf("an idle pipe: %v", err)
	}
}
