package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	br := bufio.NewReader(outp)
	line, err := br.ReadString('\n')
	done := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, br)
		done <- cmd.Wait()
	}()
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

// waitForSeq waits until the log at path holds a frame of instance 0 with
// sequence number seq.
func waitForSeq(t *testing.T, path string, seq uint64, alive func() bool) {
	t.Helper()
	waitForInstSeq(t, path, 0, seq, alive)
}

// waitForInstSeq waits until the log at path holds a frame of instance
// inst with sequence number seq.
func waitForInstSeq(t *testing.T, path string, inst uint32, seq uint64, alive func() bool) {
	t.Helper()
	for deadline := testenv.Deadline(t); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if f, err := os.Open(path); err == nil {
			rd, err := events.NewReader(f, path)
			var rec events.Record
			for err == nil {
				if err = rd.Next(&rec); err == nil && rec.Type == events.RecFrame && rec.Instance == inst && rec.Seq == seq {
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
		{[]string{"events", "record", "--endpoint", "tcp://127.0.0.1:1", "--out", junk}, "junk.log: exists and is not an event log kvsim recorded"},
		{[]string{"events", "stats"}, "want exactly one LOG"},
		{[]string{"events", "stats", filepath.Join(dir, "missing")}, "missing"},
		{[]string{"events", "stats", junk}, "junk.log: not a kvsim event log"},
		{[]string{"events", "stats", flipped}, "flipped.log: record at byte 8: checksum mismatch"},
		{[]string{"events", "whatif", good, "--capacities", "0"}, "--capacities: \"0\" is not a block count"},
		{[]string{"events", "whatif", junk}, "junk.log: not a kvsim event log"},
		{[]string{"events", "whatif", good, "--requests-offset", "1"}, "need --requests"},
		{[]string{"events", "whatif", good, "--prompt-blocks", "half"}, "--prompt-blocks: want full or ceil"},
		{[]string{"events", "whatif", good, "--requests", filepath.Join(dir, "none.csv")}, "none.csv"},
		{[]string{"events", "whatif", good, "--requests", junk, "--requests-format", "csv", "--requests-offset", "x"}, "--requests-offset: want seconds"},
		{[]string{"events", "record", "--endpoint", "tcp://h:1", "--out", "x", "--redial-max", "1ms"}, "--redial-max: must be at least 100ms"},
		{[]string{"run", "--events-pace", "0", "testdata/events/cluster.toml"}, "--events-pace: want max or a positive speed factor"},
		{[]string{"run", "--events-encoding", "json", "testdata/events/cluster.toml"}, "--events-encoding: want map or array"},
		{[]string{"run", "--events-hash", "sha1", "testdata/events/cluster.toml"}, "--events-hash: want kvsim or vllm"},
		{[]string{"run", "--publish-events", "tcp://127.0.0.1:1", "--events-hash", "vllm", "--out", dir, "testdata/events/cluster.toml"}, "needs a Mooncake JSONL trace or a kvevents log"},
		{[]string{"run", "--publish-events", "udp://x:1", "--out", dir, "testdata/events/cluster.toml"}, "want tcp://HOST:PORT"},
		{[]string{"run", "--publish-events", "tcp://127.0.0.1:1", "--events-policy", "nope", "--out", dir, "testdata/events/cluster.toml"}, "has no policy \"nope\""},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), c.args, io.Discard, io.Discard)
		code := exitCode(err, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	if b, _ := os.ReadFile(junk); string(b) != "not a log" {
		t.Errorf("record replaced a file it did not write: %q", b)
	}
}

// freePorts finds a base port whose next n ports were free a moment ago.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 20; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := base+n <= 65535
		var ls []net.Listener
		for p := base; ok && p < base+n; p++ {
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
				ls = append(ls, l)
			} else {
				ok = false
			}
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// subResult is what subscriber.py prints.
type subResult struct {
	Live, Replayed int
	Resident       map[string]map[string][]uint64
}

// kvsim run --publish-events, subscribed to by pyzmq: every frame decodes
// to vLLM's schema, sequence numbers are contiguous (what the subscriber
// joined too late for comes from the replay socket), and the stored and
// removed blocks leave the residency kvsim's cores ended with. The
// results are byte for byte those of a run that does not publish.
func TestEventsPublishPythonSubscriber(t *testing.T) {
	needPyZMQ(t)
	scen := "testdata/events/cluster.toml"
	plain := t.TempDir()
	if err := run(context.Background(), []string{"run", "--quiet", "--out", plain, scen}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{"map", "array"} {
		t.Run(enc, func(t *testing.T) {
			base := freePorts(t, 4)
			ep := fmt.Sprintf("tcp://127.0.0.1:%d", base)
			args := []string{"testdata/events/subscriber.py"}
			for i := range 2 {
				args = append(args, fmt.Sprintf("tcp://127.0.0.1:%d", base+i))
			}
			args = append(args, "--replay")
			for i := range 2 {
				args = append(args, fmt.Sprintf("tcp://127.0.0.1:%d", base+2+i))
			}
			cmd := exec.Command(sysPython, args...)
			in, _ := cmd.StdinPipe()
			outp, _ := cmd.StdoutPipe()
			var perr bytes.Buffer
			cmd.Stderr = &perr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			rd := bufio.NewReader(outp)
			if line, err := rd.ReadString('\n'); err != nil || line != "READY\n" {
				t.Fatalf("subscriber: %q %v: %s", line, err, perr.String())
			}
			var got subResult
			var want [2]map[string][]uint64
			called := false
			defer func(f func(*events.Publisher)) { eventsPublished = f }(eventsPublished)
			eventsPublished = func(p *events.Publisher) {
				called = true
				for i := range 2 {
					want[i] = map[string][]uint64{"GPU": p.Resident(i, 0), "CPU": p.Resident(i, 1)}
				}
				fmt.Fprintf(in, "END %d %d\n", p.Batches(0), p.Batches(1))
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Fatalf("subscriber: %v: %s", err, perr.String())
				}
				if err := json.Unmarshal([]byte(line), &got); err != nil {
					t.Fatalf("subscriber said %q: %v", line, err)
				}
			}
			out := t.TempDir()
			runArgs := []string{"run", "--quiet", "--out", out, "--events-linger", "0s", "--events-encoding", enc}
			if enc == "map" {
				runArgs = append(runArgs, "--publish-events", ep)
			} else { // the scenario key instead of the flag
				runArgs = append(runArgs, "--set", "cluster.events="+ep)
			}
			var stderr bytes.Buffer
			if err := run(context.Background(), append(runArgs, scen), io.Discard, &stderr); err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			if !called {
				t.Fatalf("nothing published: %s", stderr.String())
			}
			t.Logf("%s; subscriber: %d live frames, %d replayed", strings.TrimSpace(stderr.String()), got.Live, got.Replayed)
			for i := range 2 {
				for _, m := range []string{"GPU", "CPU"} {
					g, w := got.Resident[fmt.Sprint(i)][m], want[i][m]
					slices.Sort(w)
					if len(w) == 0 || !slices.Equal(g, w) {
						t.Errorf("instance %d %s: subscriber holds %d blocks, kvsim %d", i, m, len(g), len(w))
					}
				}
			}
			// The flag leaves every output as it was but the wall-clock
			// figures ("run", different on every run); --set also
			// records its override.
			skip := []string{"run"}
			files := []string{"summary.json", "requests.csv", "report.html"}
			if enc != "map" {
				skip = append(skip, "overrides", "description")
				files = files[:2]
			}
			for _, f := range files {
				a := readOutput(t, filepath.Join(plain, "events_cluster", f), skip)
				b := readOutput(t, filepath.Join(out, "events_cluster", f), skip)
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("%s differs with events published (%d vs %d bytes)", f, len(a), len(b))
				}
			}
		})
	}
}

// readOutput reads a results file; a JSON one loses the keys in skip.
func readOutput(t *testing.T, path string, skip []string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, ".json") {
		return b
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range skip {
		if _, ok := m[k]; !ok && k == "run" {
			t.Fatalf("%s has no %q", path, k)
		}
		delete(m, k)
	}
	out, _ := json.Marshal(m)
	return out
}

// Round trip: kvsim events record takes kvsim run's own events (nothing
// lost: what the recorder joined too late for comes from the replay
// sockets), and the what-if over the recording sees what the stream can:
// every block that entered HBM (kvsim's DRAM hits plus its recomputed
// blocks), and loads from DRAM counted from above (see docs/events.md).
// HBM hits publish nothing, so they are not in the recording.
func TestEventsRoundTrip(t *testing.T) {
	scen := "testdata/events/cluster.toml"
	base := freePorts(t, 4)
	log := filepath.Join(t.TempDir(), "ev.log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var recErr bytes.Buffer
	recDone := make(chan error, 1)
	recArgs := []string{"events", "record", "--out", log, "--flush", "20ms", "--quiet"}
	for i := range 2 {
		recArgs = append(recArgs, "--endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", base+i), "--replay", fmt.Sprintf("tcp://127.0.0.1:%d", base+2+i))
	}
	go func() { recDone <- run(ctx, recArgs, io.Discard, &recErr) }()
	defer func(f func(*events.Publisher)) { eventsPublished = f }(eventsPublished)
	var recResult error
	eventsPublished = func(p *events.Publisher) {
		// Replays stay served until every batch is in the log.
		for i := range 2 {
			waitForInstSeq(t, log, uint32(i), p.Batches(i)-1, func() bool { return len(recDone) == 0 })
		}
		// Stop the recorder while the publishers are still up: once they
		// close, it would redial them until stopped.
		cancel()
		recResult = <-recDone
	}
	out := t.TempDir()
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"run", "--quiet", "--out", out, "--events-linger", "0s",
		"--publish-events", fmt.Sprintf("tcp://127.0.0.1:%d", base), scen}, io.Discard, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if !errors.Is(recResult, context.Canceled) {
		t.Fatalf("record: %v: %s", recResult, recErr.String())
	}
	st, err := events.StatsFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if st.GapSeqs != 0 || st.Malformed != 0 {
		t.Errorf("recording lost %d batches, %d malformed", st.GapSeqs, st.Malformed)
	}
	wi, err := events.WhatIfFile(log, events.WhatIfOptions{Capacities: []int64{64}, BlockTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Policies []struct {
			Name      string
			Instances []struct {
				Hits    map[string]int64
				Sources map[string]int64
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(out, "events_cluster", "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	lru := sum.Policies[0]
	for i, o := range wi.Instances {
		kv := lru.Instances[i]
		t.Logf("instance %d: kvsim hits hbm %d dram %d, recomputed %d; events: GPU stores %d, served from CPU %d, recomputed %d (re-stores %d), left %d",
			i, kv.Hits["hbm"], kv.Hits["dram"], kv.Sources["recomputed"], o.GPUStores, o.Served["CPU"], o.Recomputed, o.Restores, o.Left)
		// Every block entering HBM was loaded or recomputed.
		if o.GPUStores != kv.Hits["dram"]+kv.Sources["recomputed"] {
			t.Errorf("instance %d: %d GPU stores in the events, kvsim loaded %d and recomputed %d", i, o.GPUStores, kv.Hits["dram"], kv.Sources["recomputed"])
		}
		// A store into GPU memory while CPU memory holds the block reads
		// as a load, but the engine recomputes a block past the first
		// missing one of a prefix: events see no prefix, so they can only
		// over-count loads.
		if o.Served["CPU"] < kv.Hits["dram"] {
			t.Errorf("instance %d: the events show %d loads from CPU memory, fewer than kvsim's %d DRAM hits", i, o.Served["CPU"], kv.Hits["dram"])
		}
	}
	t.Logf("candidate tier of 64 blocks per instance below DRAM: %+v", wi.Candidates[0])
	var stores int64
	for _, o := range wi.Instances {
		stores += o.GPUStores
	}
	kvEventsReplay(t, log, stores) // the recording as a trace: kvsim mrc and kvsim run
	kvEventsJoin(t, log, filepath.Join(out, "events_cluster", "requests.csv"), stores)
}

// An engine that goes away and comes back (restarted: its sequence
// numbers start again at 0) is redialled, not the end of the recording:
// the outage and the new epoch are in the log and on stderr, and the
// restart is not a gap.
func TestEventsRecordReconnect(t *testing.T) {
	needPyZMQ(t)
	port := freePorts(t, 1)
	cmd := exec.Command(sysPython, "testdata/events/restarting.py", fmt.Sprint(port))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var pyErr bytes.Buffer
	cmd.Stderr = &pyErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	said := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(outp)
		for sc.Scan() {
			said <- sc.Text()
		}
		close(said)
	}()
	if l := <-said; l != "UP 1" {
		t.Fatalf("publisher said %q: %s", l, pyErr.String())
	}
	log := filepath.Join(t.TempDir(), "ev.log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"events", "record", "--endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--out", log, "--flush", "20ms", "--redial-max", "200ms"}, io.Discard, &stderr)
	}()
	for _, want := range []string{"DOWN", "UP 2", "DONE"} {
		select {
		case l := <-said:
			if l != want {
				t.Fatalf("publisher said %q, want %q: %s", l, want, pyErr.String())
			}
		case err := <-done:
			t.Fatalf("the recorder ended before the publisher said %s: %v: %s", want, err, stderr.String())
		case <-time.After(time.Until(testenv.Deadline(t))):
			t.Fatalf("publisher never said %s: %s", want, stderr.String())
		}
	}
	// The recorder outlives the first life and records the second.
	var st *events.Stats
	for deadline := testenv.Deadline(t); ; time.Sleep(20 * time.Millisecond) {
		if st, err = events.StatsFile(log); err == nil && st.Frames == 8 {
			break
		}
		if len(done) > 0 || time.Now().After(deadline) {
			t.Fatalf("recorder: %v, stats %+v: %s", err, st, stderr.String())
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("record: %v: %s", err, stderr.String())
	}
	if st.Outages != 1 || st.Epochs != 1 || st.Gaps != 0 || st.GapSeqs != 0 {
		t.Errorf("outages %d epochs %d gaps %d (%d seqs), want 1, 1, 0 (0)", st.Outages, st.Epochs, st.Gaps, st.GapSeqs)
	}
	// Five blocks of the first life went with the restart; three of the
	// second are resident.
	if is := st.Instances[0]; is.BlocksStored != 8 || is.Resident["GPU"] != 3 {
		t.Errorf("instance %+v, want 8 stored, GPU 3 resident", is)
	}
	for _, want := range []string{"connection lost", "reconnected after", "went back from 4 to 0: engine restarted, a new epoch", "8 frames, 8 events, 0 malformed, 0 gaps (0 refilled, 0 lost), 1 restarts, 0 duplicates skipped, 1 connections lost"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	// The what-if sees the restart as the first life's blocks leaving.
	if wi, err := events.WhatIfFile(log, events.WhatIfOptions{Capacities: []int64{8}}); err != nil || wi.Instances[0].Left != 5 || wi.Instances[0].GPUStores != 8 {
		t.Errorf("whatif: %v %+v, want 5 blocks left, 8 GPU stores", err, wi)
	}
	// The log's records, in order: the outage before the second life's
	// first frame, and the epoch with it.
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := events.NewReader(f, log)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for {
		var rec events.Record
		if rd.Next(&rec) != nil {
			break
		}
		switch rec.Type {
		case events.RecFrame:
			kinds = append(kinds, fmt.Sprint(rec.Seq))
		case events.RecOutage:
			kinds = append(kinds, fmt.Sprintf("outage@%d", rec.Seq))
		case events.RecEpoch:
			kinds = append(kinds, fmt.Sprintf("epoch%d/%d", rec.Seq, rec.Count))
		}
	}
	if got, want := strings.Join(kinds, " "), "0 1 2 3 4 outage@5 epoch0/5 0 1 2"; got != want {
		t.Errorf("records %q, want %q", got, want)
	}
}

// kvsim run --publish-events with a subscriber that never reads: the run
// ends, and what it reports adds up: every batch was either handed to
// the sockets or counted as withheld while the subscriber stalled. Some
// are withheld once the socket buffers are full, which a late connection
// can postpone past the run's end: up to three runs for that, each of
// which must add up.
func TestEventsPublishStalledSubscriberCounted(t *testing.T) {
	needPyZMQ(t)
	for try := 1; ; try++ {
		stalled := stalledRun(t)
		if stalled > 0 {
			break
		}
		if try == 3 {
			t.Fatal("no batch withheld in three runs to a subscriber that does not read")
		}
	}
}

func stalledRun(t *testing.T) uint64 {
	t.Helper()
	base := freePorts(t, 4)
	sub := exec.Command(sysPython, "-c", fmt.Sprintf(`
import sys, zmq
c = zmq.Context(); s = c.socket(zmq.SUB)
s.setsockopt(zmq.RCVHWM, 1); s.setsockopt(zmq.RCVBUF, 4096)
s.setsockopt(zmq.SUBSCRIBE, b""); s.connect("tcp://127.0.0.1:%d")
print("READY", flush=True)
sys.stdin.read()
`, base))
	in, _ := sub.StdinPipe()
	outp, _ := sub.StdoutPipe()
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); sub.Process.Kill(); sub.Wait() }()
	bufio.NewReader(outp).ReadString('\n')
	defer func(f func(*events.Publisher)) { eventsPublished = f }(eventsPublished)
	var batches uint64
	eventsPublished = func(p *events.Publisher) { batches = p.Batches(0) + p.Batches(1) }
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"run", "--quiet", "--out", t.TempDir(), "--events-linger", "0s",
		"--set", "workload.requests=6000", "--set", "model.block_tokens=128", "--publish-events", fmt.Sprintf("tcp://127.0.0.1:%d", base),
		"testdata/events/cluster.toml"}, io.Discard, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var frames, evs, paced, stalled uint64
	i := strings.Index(stderr.String(), "published ")
	if i < 0 {
		t.Fatalf("no report: %s", stderr.String())
	}
	if _, err := fmt.Sscanf(stderr.String()[i:], "published %d batches, %d events (%d dropped by pacing, %d while a subscriber stalled)", &frames, &evs, &paced, &stalled); err != nil {
		t.Fatalf("report %q: %v", stderr.String()[i:], err)
	}
	if frames+paced+stalled != batches {
		t.Errorf("%d batches published; reported %d sent, %d dropped by pacing, %d withheld: want the three adding up", batches, frames, paced, stalled)
	}
	t.Logf("%d batches: %d sent, %d dropped by pacing, %d withheld", batches, frames, paced, stalled)
	return stalled
}
