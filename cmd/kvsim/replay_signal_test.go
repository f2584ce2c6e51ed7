package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"kvsim/internal/testenv"
)

// child is a kvsim process started by a test.
type child struct {
	cmd  *exec.Cmd
	done chan error // its Wait's result, once it exits
}

// startMain starts the test binary as kvsim with main's own signal
// handling and exit status; stderr collects what it prints.
func startMain(t *testing.T, stderr *bytes.Buffer, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env, ready := readyFile(t)
	cmd.Env = append(os.Environ(), "KVSIM_TEST_MAIN_ARGS="+strings.Join(args, "\x1f"), env)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	ready()
	return c
}

// exited reports whether the child has exited (without reaping its status).
func (c *child) exited() bool { return len(c.done) > 0 }

// wait waits for the child and returns its exit status and how long that
// took (a figure to log, never to assert); it fails the test if the child
// still runs near go test's deadline.
func (c *child) wait(t *testing.T) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case err := <-c.done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, time.Since(start)
		case errors.As(err, &ee):
			return ee.ExitCode(), time.Since(start)
		}
		t.Fatal(err)
	case <-time.After(time.Until(testenv.Deadline(t))):
		c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("still running %v after the signal", time.Since(start).Round(time.Second))
	}
	return 0, 0
}

// replayFiles are the names a replay folder may hold once no replay runs.
var replayFiles = regexp.MustCompile(`^(replay\.json|tier-ssd|tier-ssd/(kvsim-store|bucket-[0-9]+\.(data|meta)))$`)

// TestReplayInterrupted stops a long replay --real with SIGINT or SIGTERM
// once it writes to its SSD tier, in each mode: kvsim exits 130 at
// once, the replay.json of the replay before it is left as it was (the
// interrupted one writes none), nothing temporary is left, and the next
// replay reopens the store and verifies every block in it.
func TestReplayInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("a replay of several seconds per case")
	}
	trace, err := filepath.Abs("../../traces/synthetic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// Tiers small enough that the SSD tier evicts (its disk use stays
	// small) and blocks large enough that the whole replay takes many
	// seconds: a run that ignores the signal is seen to.
	sc := writeFile(t, t.TempDir(), "small.toml", `name = "small"
[model]
preset = "llama-3.1-8b"
[gpu]
preset = "h100"
tp = 4
[[tier]]
name = "hbm"
kind = "hbm"
capacity = "4GiB"
[[tier]]
name = "dram"
kind = "dram"
capacity = "8GiB"
[[tier]]
name = "ssd"
kind = "ssd"
capacity = "32GiB"
[[link]]
from = "hbm"
to = "dram"
bandwidth = "25GB/s"
latency = "10us"
[[link]]
from = "dram"
to = "ssd"
bandwidth = "7GB/s"
latency = "10us"
lanes = 4
[workload]
trace = "`+filepath.ToSlash(trace)+`"
[[policy]]
eviction = "lru"
`)
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		mode []string
	}{
		{"live/SIGINT", syscall.SIGINT, nil},
		{"live/SIGTERM", syscall.SIGTERM, []string{"--verify"}},
		{"mirror/SIGINT", syscall.SIGINT, []string{"--mirror"}},
		{"verify/SIGINT", syscall.SIGINT, []string{"--mirror", "--verify"}},
		{"sequential/SIGINT", syscall.SIGINT, []string{"--sequential"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := replayDir(t)
			base := []string{"replay", "--real", "--dir", dir, "--block-bytes", "262144", "--scenario", sc}
			if _, stderr, code := runKvsim(append(base, "--mirror", "--limit", "100", trace)...); code != 0 {
				t.Fatalf("first replay: exit %d: %s", code, stderr)
			}
			before, err := os.ReadFile(filepath.Join(dir, "replay.json"))
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			start := time.Now()
			cmd := startMain(t, &stderr, append(append(base, c.mode...), trace)...)
			// Well into the replay: this process writes to the SSD tier.
			for writing := false; !writing; {
				if time.Now().After(testenv.Deadline(t)) {
					t.Fatal("nothing ever written to the SSD tier")
				}
				time.Sleep(5 * time.Millisecond)
				if cmd.exited() {
					t.Fatal("exited before the signal")
				}
				m, _ := filepath.Glob(filepath.Join(dir, "tier-ssd", "*.data"))
				for _, p := range m {
					if fi, err := os.Stat(p); err == nil && fi.ModTime().After(start) {
						writing = true
					}
				}
			}
			time.Sleep(300 * time.Millisecond)
			cmd.cmd.Process.Signal(c.sig)
			code, took := cmd.wait(t)
			t.Logf("stopped %v after %v", took, c.sig)
			if code != 130 {
				t.Fatalf("exit %d after %v, want 130; stderr: %s", code, c.sig, stderr.String())
			}
			if got := strings.TrimSpace(stderr.String()); got != "kvsim: interrupted" {
				t.Errorf("stderr %q, want one line saying it was interrupted", got)
			}
			if after, err := os.ReadFile(filepath.Join(dir, "replay.json")); err != nil || !bytes.Equal(before, after) {
				t.Errorf("the earlier replay.json changed (err %v)", err)
			}
			filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
				if rel, _ := filepath.Rel(dir, p); rel != "." && !replayFiles.MatchString(filepath.ToSlash(rel)) {
					t.Errorf("left behind %s", rel)
				}
				return nil
			})
			_, errs, code := runKvsim(append(base, "--mirror", "--verify", "--limit", "300", trace)...)
			if code != 0 {
				t.Fatalf("the replay after the interrupt: exit %d: %s", code, errs)
			}
			r := readReplay(t, filepath.Join(dir, "replay.json"))
			if st := r.Stores["ssd"]; st.State != "reopened" || st.WarmBlocks == 0 || len(st.Discarded) != 0 ||
				r.Verify == nil || r.Verify.Corrupt != 0 || r.Lost["ssd"] != 0 {
				t.Errorf("after the interrupt: store %+v, verify %+v, lost %v", st, r.Verify, r.Lost)
			}
		})
	}
}
