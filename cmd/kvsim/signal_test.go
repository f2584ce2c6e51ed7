package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterrupted stops a long run with SIGINT (and SIGTERM): kvsim exits
// 130 saying so, the results an earlier run left in the folder are intact,
// and no temporary file of its own is left behind.
func TestInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			out := t.TempDir()
			sc := "../../scenarios/synthetic_seed.toml"
			if _, stderr, code := runKvsim("run", "--quiet", "--out", out, "--set", "workload.requests=200", sc); code != 0 {
				t.Fatalf("first run: exit %d: %s", code, stderr)
			}
			dir := filepath.Join(out, "synthetic_seed")
			before, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--quiet", "--out", out, "--set", "workload.requests=1000000", sc}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			env, ready := readyFile(t)
			cmd.Env = append(os.Environ(), "KVSIM_TEST_MAIN_ARGS="+strings.Join(args, "\x1f"), env)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ready()
			time.Sleep(1500 * time.Millisecond) // well into the simulation
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 60 s after %v", sig)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v after %v, want 130; stderr: %s", err, sig, stderr.String())
			}
			if got := strings.TrimSpace(stderr.String()); got != "kvsim: interrupted" {
				t.Fatalf("stderr %q, want one line saying it was interrupted", got)
			}
			after, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil || !bytes.Equal(before, after) {
				t.Fatalf("the earlier run's summary.json changed (err %v)", err)
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") && e.Name() != ".kvsim.lock" {
					t.Errorf("left behind %s", e.Name())
				}
			}
		})
	}
}

// TestRunDiskFull writes results onto a full disk (a 64 KiB tmpfs): exit 1,
// the file named as the user knows it, the cause, and no temporary file left.
func TestRunDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	_, stderr, code := runKvsim("run", "--quiet", "--out", dir, "--limit", "300", "../../scenarios/quickstart.toml")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	want := "writing " + filepath.Join(dir, "quickstart", "requests.csv") + ": no space left on device"
	if !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("stderr %q, want one line with %q", stderr, want)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "quickstart"))
	for _, e := range ents {
		if e.Name() != ".kvsim.lock" {
			t.Errorf("left behind %s", e.Name())
		}
	}
}
