//go:build unix

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

	"kvsim/results"
)

// trace300 is the shipped trace's first 300 requests.
func trace300(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(synthetic)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for range 300 {
		i += bytes.IndexByte(b[i:], '\n') + 1
	}
	return b[:i]
}

// feedFIFO makes a named pipe at path that a writer fills with data once.
func feedFIFO(t *testing.T, path string, data []byte) {
	t.Helper()
	mkfifo(t, path)
	go func() {
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Write(data)
			f.Close()
		}
	}()
}

// runKvsimWithin is runKvsim, failing the test if it has not ended in d
// (the old reading of a pipe waited for ever).
func runKvsimWithin(t *testing.T, d time.Duration, args ...string) (string, string, int) {
	t.Helper()
	type res struct {
		out, err string
		code     int
	}
	ch := make(chan res, 1)
	go func() {
		o, e, c := runKvsim(args...)
		ch <- res{o, e, c}
	}()
	select {
	case r := <-ch:
		return r.out, r.err, r.code
	case <-time.After(d):
		t.Fatalf("%v: still running after %v", args, d)
		return "", "", 0
	}
}

// TestPipedTrace: a trace through a named pipe is read once and gives
// run, trace stats and mrc exactly what the same bytes in a file give; no
// temporary copy is left, and no cache is written.
func TestPipedTrace(t *testing.T) {
	data := trace300(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fileDir, pipeDir := t.TempDir(), t.TempDir()
	file := writeFile(t, fileDir, "t.jsonl", string(data))
	pipe := filepath.Join(pipeDir, "t.jsonl") // the same base name: the same printed name
	same := func(what, a, b string) {
		t.Helper()
		if b = strings.ReplaceAll(b, pipeDir, fileDir); a != b {
			t.Errorf("%s: the pipe's output differs from the file's:\n%s\nfile:\n%s", what, b, a)
		}
	}
	// run, with its trace line and every policy reading the trace.
	sc := func(dir, trace string) string {
		return writeFile(t, dir, "s.toml", scenarioTOML("s", trace, "2GiB", "8GiB", "lru", "fifo"))
	}
	fo, fe, fc := runKvsimWithin(t, time.Minute, "run", "--out", filepath.Join(fileDir, "out"), sc(fileDir, file))
	feedFIFO(t, pipe, data)
	po, pe, pc := runKvsimWithin(t, time.Minute, "run", "--out", filepath.Join(pipeDir, "out"), sc(pipeDir, pipe))
	if fc != 0 || pc != 0 {
		t.Fatalf("run: file exit %d, pipe exit %d: %s", fc, pc, pe)
	}
	same("run stdout", fo, po)
	same("run stderr", fe, pe)
	for _, f := range []string{"requests.csv"} {
		a, _ := os.ReadFile(filepath.Join(fileDir, "out", "s", f))
		b, _ := os.ReadFile(filepath.Join(pipeDir, "out", "s", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("run: %s differs (%d and %d bytes)", f, len(a), len(b))
		}
	}
	// trace stats and mrc.
	for _, args := range [][]string{{"trace", "stats", "--json"}, {"mrc", "--policies", "lru,fifo", "--sizes", "10%,50%", "--trace"}} {
		fo, fe, fc := runKvsimWithin(t, time.Minute, append(args, file)...)
		feedFIFO(t, pipe+"2", data)
		po, pe, pc := runKvsimWithin(t, time.Minute, append(args, pipe+"2")...)
		if fc != 0 || pc != 0 {
			t.Fatalf("%v: file exit %d, pipe exit %d: %s", args, fc, pc, pe)
		}
		same(strings.Join(args, " "), fo, strings.ReplaceAll(po, "t.jsonl2", "t.jsonl"))
		same(strings.Join(args, " ")+" stderr", fe, pe)
		os.Remove(pipe + "2")
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "kvsim-trace-*")); len(m) > 0 {
		t.Errorf("temporary copies left: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "*.kvtc")); len(m) > 0 {
		t.Errorf("a cache beside the copy: %v", m)
	}
}

// kvsimProcess starts the test binary as kvsim (main's signal handling and
// exit status) with args, stdin and TMPDIR.
func kvsimProcess(t *testing.T, stdin []byte, tmp string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env, ready := readyFile(t)
	cmd.Env = append(os.Environ(), "KVSIM_TEST_MAIN_ARGS="+strings.Join(args, "\x1f"), "TMPDIR="+tmp, env)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin) // a pipe
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready()
	return cmd, &stdout, &stderr
}

// waitExit waits up to a generous bound for cmd and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd, what string) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return 0
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s: still running after 30 s", what)
		return 0
	}
}

// TestStdinTrace: a scenario whose trace is /dev/stdin, fed through a
// pipe, runs on every request (it once said "the trace has no requests");
// so do trace stats and replay.
func TestStdinTrace(t *testing.T) {
	tmp := t.TempDir()
	dir := t.TempDir()
	p := writeFile(t, dir, "s.toml", scenarioTOML("s", "/dev/stdin", "2GiB", "8GiB", "lru", "fifo"))
	rp := replayDir(t)
	for _, args := range [][]string{{"run", "--out", filepath.Join(dir, "out"), p}, {"trace", "stats", "/dev/stdin"},
		{"replay", "--real", "--mirror", "--dir", rp, "--block-bytes", "16384", "/dev/stdin"}} {
		cmd, stdout, stderr := kvsimProcess(t, trace300(t), tmp, args...)
		if code := waitExit(t, cmd, args[0]); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if want := "300 requests"; args[0] == "run" && !strings.Contains(stdout.String(), want) ||
			args[0] == "trace" && !strings.Contains(stdout.String(), "requests         300") {
			t.Errorf("%v: stdout lacks the 300 requests:\n%s", args, stdout)
		}
	}
	if r := readReplay(t, filepath.Join(rp, "replay.json")); r.Requests != 300 {
		t.Errorf("replay: %d requests, want 300", r.Requests)
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestEndlessDevice: /dev/zero and /dev/urandom as a trace are refused at
// once by every command that reads one: exit 2, one line naming it.
func TestEndlessDevice(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(dev); err != nil {
			t.Skip(err)
		}
		sc := writeFile(t, dir, "s.toml", scenarioTOML("s", dev, "2GiB", "", "lru"))
		for _, args := range [][]string{
			{"run", "--out", filepath.Join(dir, "out"), sc},
			{"run", "--quiet", "--out", filepath.Join(dir, "out"), sc},
			{"sweep", "--out", filepath.Join(dir, "sw"), "--vary", "seed", "--values", "1,2", sc},
			{"trace", "stats", dev},
			{"trace", "fit", "--trace", dev},
			{"trace", "convert", dev, filepath.Join(dir, "x.kvtc")},
			{"mrc", "--trace", dev, "--policies", "lru", "--sizes", "10"},
			{"replay", "--real", "--mirror", "--dir", filepath.Join(dir, "rp"), dev},
		} {
			stdout, stderr, code := runKvsimWithin(t, 30*time.Second, args...)
			if code != 2 || !strings.Contains(stderr, dev+": not a text trace") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stdout != "" {
				t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and one line naming %s", args, code, stderr, stdout, dev)
			}
		}
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "rp")); err == nil {
		t.Error("replay made its --dir for a trace it refused")
	}
}

// TestPipeNoWriterSignal: a named pipe no writer opens holds open(2); SIGINT
// or SIGTERM still stops every command that reads a trace with 130,
// leaving no temporary copy.
func TestPipeNoWriterSignal(t *testing.T) {
	tmp := t.TempDir()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	sc := writeFile(t, dir, "s.toml", scenarioTOML("s", fifo, "2GiB", "", "lru"))
	for i, args := range [][]string{
		{"run", "--out", filepath.Join(dir, "out"), sc},
		{"trace", "stats", fifo},
		{"mrc", "--trace", fifo, "--policies", "lru", "--sizes", "10"},
		{"sweep", "--out", filepath.Join(dir, "sw"), "--vary", "seed", "--values", "1,2", sc},
		{"trace", "fit", "--trace", fifo},
		{"trace", "convert", fifo, filepath.Join(dir, "x.kvtc")},
		{"replay", "--real", "--mirror", "--dir", filepath.Join(dir, "rp"), fifo},
	} {
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		cmd, _, stderr := kvsimProcess(t, nil, tmp, args...)
		time.Sleep(500 * time.Millisecond) // into the wait for a writer
		cmd.Process.Signal(sig)
		if code := waitExit(t, cmd, args[0]); code != 130 || strings.TrimSpace(stderr.String()) != "kvsim: interrupted" {
			t.Errorf("%v after %v: exit %d, stderr %q; want 130, interrupted", args, sig, code, stderr)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestPipedSweep: every point of a sweep over a piped trace reads the one
// copy (a second read of the pipe found it drained).
func TestPipedSweep(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	feedFIFO(t, fifo, trace300(t))
	sc := writeFile(t, dir, "s.toml", scenarioTOML("s", fifo, "2GiB", "", "lru"))
	out := filepath.Join(dir, "out")
	if _, stderr, code := runKvsimWithin(t, time.Minute, "sweep", "--quiet", "--out", out, "--vary", "seed", "--values", "1,2", sc); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, p := range []string{"s-seed-1", "s-seed-2"} {
		s, err := results.ReadSummary(filepath.Join(out, p, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if s.Trace.Requests != 300 {
			t.Errorf("%s: %d requests, want 300", p, s.Trace.Requests)
		}
	}
}
