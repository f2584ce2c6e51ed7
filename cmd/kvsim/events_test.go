package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kvsim/events"
	"kvsim/internal/testenv"
)

// sysPython is Debian's interpreter, the one with python3-zmq and
// python3-msgpack (another python3 may come first on PATH).
const sysPython = "/usr/bin/python3"

// needPyZMQ skips (or fails under KVSIM_REQUIRE_ALL) without pyzmq.
func needPyZMQ(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(sysPython, "-c", "import zmq, msgpack").CombinedOutput(); err != nil {
		testenv.Missing(t, "%s cannot import zmq and msgpack (apt-get install python3-zmq python3-msgpack): %v %s", sysPython, err, bytes.TrimSpace(out))
	}
}

// pyPublisher starts testdata/events/publisher.py; it returns its PUB and
// replay endpoints and a function that stops it.
func pyPublisher(t *testing.T) (pub, replay string, stop func()) {
	t.Helper()
	cmd := exec.Command(sysPython, "testdata/events/publisher.py")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, outp)
		done <- cmd.Wait()
	}()
	line, err := bufio.NewReader(outp).ReadString('\n')
	var p, r int
	if _, serr := fmt.Sscanf(line, "PORTS %d %d", &p, &r); err != nil || serr != nil {
		cmd.Process.Kill()
		t.Fatalf("publisher said %q (%v): %s", line, err, stderr.String())
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		in.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("publisher: %v: %s", err, stderr.String())
			}
		case <-time.After(time.Until(testenv.Deadline(t))):
			cmd.Process.Kill()
			t.Errorf("publisher did not exit")
		}
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return fmt.Sprintf("tcp://127.0.0.1:%d", p), fmt.Sprintf("tcp://127.0.0.1:%d", r), stop
}

// waitForSeq waits until the log at path holds a frame with sequence
// number seq.
func waitForSeq(t *testing.T, path string, seq uint64, alive func() bool) {
	t.Helper()
	for deadline := testenv.Deadline(t); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if f, err := os.Open(path); err == nil {
			rd, err := events.NewReader(f, path)
			var rec events.Record
			for err == nil {
				if err = rd.Next(&rec); err == nil && rec.Type == events.RecFrame && rec.Seq == seq {
					f.Close()
					return
				}
			}
			f.Close()
		}
		if !alive() {
			t.Fatal("the recorder exited early")
		}
	}
	t.Fatalf("no frame with seq %d in %s", seq, path)
}

// checkPublisherLog checks what publisher.py sent, as recorded.
func checkPublisherLog(t *testing.T, st *events.Stats) {
	t.Helper()
	if st.Frames != 19 || st.Replayed != 2 || st.Malformed != 1 || st.Gaps != 1 || st.GapSeqs != 1 {
		t.Errorf("frames %d replayed %d malformed %d gaps %d (%d seqs), want 19, 2, 1, 1 (1)", st.Frames, st.Replayed, st.Malformed, st.Gaps, st.GapSeqs)
	}
	if st.ByEncoding["map"] != 10 || st.ByEncoding["array"] != 9 {
		t.Errorf("encodings %v, want map 10, array 9", st.ByEncoding)
	}
	if st.ByType["BlockStored"] != 20 || st.ByType["BlockRemoved"] != 6 || st.ByMedium["GPU"]+st.ByMedium["CPU"] != 26 {
		t.Errorf("types %v media %v", st.ByType, st.ByMedium)
	}
	if len(st.Instances) != 1 {
		t.Fatalf("instances %+v", st.Instances)
	}
	is := st.Instances[0]
	if is.BlocksStored != 40 || is.BlocksRemoved != 6 || is.Restores != 1 || is.Resident["GPU"] != 15 || is.Resident["CPU"] != 18 {
		t.Errorf("instance %+v", is)
	}
}

// A publisher written from vLLM's schema in Python (both encodings, a gap
// the replay socket refills, one it cannot, a malformed frame) is recorded
// by kvsim events record; the log's statistics are what it sent.
func TestEventsRecordPythonPublisher(t *testing.T) {
	needPyZMQ(t)
	pub, replay, stop := pyPublisher(t)
	defer stop()
	log := filepath.Join(t.TempDir(), "ev.log")
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"events", "record", "--endpoint", pub, "--replay", replay, "--out", log, "--flush", "20ms"}, io.Discard, &stderr)
	}()
	waitForSeq(t, log, 19, func() bool { return len(done) == 0 })
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("record: %v: %s", err, stderr.String())
	}
	stop()
	for _, want := range []string{"could not be refilled", "malformed", "19 frames, 26 events, 1 malformed, 2 gaps (2 refilled, 1 lost)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	st, err := events.StatsFile(log)
	if err != nil {
		t.Fatal(err)
	}
	checkPublisherLog(t, st)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"events", "stats", log}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "BlockStored") || !strings.Contains(out.String(), "GPU 15, CPU 18") && !strings.Contains(out.String(), "CPU 18, GPU 15") {
		t.Errorf("stats:\n%s", out.String())
	}
}

// SIGINT ends a recording with status 130 and a complete log; a kill -9
// keeps everything flushed before it.
func TestEventsRecordSignals(t *testing.T) {
	needPyZMQ(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			pub, replay, stop := pyPublisher(t)
			defer stop()
			log := filepath.Join(t.TempDir(), "ev.log")
			var stderr bytes.Buffer
			c := startMain(t, &stderr, "events", "record", "--endpoint", pub, "--replay", replay, "--out", log, "--flush", "20ms")
			waitForSeq(t, log, 19, func() bool { return !c.exited() })
			c.cmd.Process.Signal(sig)
			code, _ := c.wait(t)
			want := 130
			if sig == syscall.SIGKILL {
				want = -1
			}
			if code != want {
				t.Fatalf("exit %d, want %d: %s", code, want, stderr.String())
			}
			st, err := events.StatsFile(log)
			if err != nil {
				t.Fatal(err)
			}
			checkPublisherLog(t, st)
		})
	}
}

// Bad input is one line and status 2, never a panic.
func TestEventsBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.log")
	os.WriteFile(junk, []byte("not a log"), 0o644)
	good := filepath.Join(dir, "good.log")
	w, err := events.Create(good)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(&events.Record{Type: events.RecFrame, Rank: -1, Payload: []byte{0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x90}})
	w.Close()
	b, _ := os.ReadFile(good)
	b[len(b)-1] ^= 0xff // the checksum no longer matches
	flipped := filepath.Join(dir, "flipped.log")
	os.WriteFile(flipped, b, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"events"}, "no subcommand"},
		{[]string{"events", "nope"}, "unknown subcommand"},
		{[]string{"events", "record", "--out", "x"}, "--endpoint: at least one"},
		{[]string{"events", "record", "--endpoint", "tcp://h:1"}, "--out: required"},
		{[]string{"events", "record", "--endpoint", "ipc:///x", "--out", "x"}, "want tcp://HOST:PORT"},
		{[]string{"events", "record", "--endpoint", "tcp://h:1", "--replay", "a", "--replay", "b", "--out", "x"}, "2 given for 1"},
		{[]string{"events", "stats"}, "want exactly one LOG"},
		{[]string{"events", "stats", filepath.Join(dir, "missing")}, "missing"},
		{[]string{"events", "stats", junk}, "junk.log: not a kvsim event log"},
		{[]string{"events", "stats", flipped}, "flipped.log: record at byte 8: checksum mismatch"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), c.args, io.Discard, io.Discard)
		code := exitCode(err, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
