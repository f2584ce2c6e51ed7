//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package results

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A held folder is refused at once without wait, waited for with it
// (until ctx ends), and taking it removes the temporaries a killed kvsim
// left, nothing else; two names of one folder take one lock.
func TestFolderLock(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{".summary.json.12", ".requests-3.csv", ".kvsim-probe-9", "notes.txt", ".summary.json.old"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	folders, unlock, err := LockAll(context.Background(), []string{dir, dir + "/."}, false)
	if err != nil {
		t.Fatal(err)
	}
	if folders[0] != folders[1] {
		t.Error("two names of one folder got two locks")
	}
	for n, want := range map[string]bool{".summary.json.12": false, ".requests-3.csv": false, ".kvsim-probe-9": false, "notes.txt": true, ".summary.json.old": true} {
		if _, err := os.Stat(filepath.Join(dir, n)); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", n, err == nil, want)
		}
	}
	if _, err := Lock(context.Background(), dir, false); !errors.Is(err, ErrBusy) {
		t.Errorf("a held folder: %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	defer cancel()
	if _, err := Lock(ctx, dir, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting on a held folder: %v, want ctx's error", err)
	}
	go func() { time.Sleep(2 * lockPoll); unlock() }()
	f, err := Lock(context.Background(), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	f.Unlock()
}
