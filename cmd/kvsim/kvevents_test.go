package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/internal/golden"
	"kvsim/trace"
)

// TestKVEventsFixture reads the kvevents format's fixture (a hand-made
// log, events' TestToTraceHandMade) against its golden, as the trace
// package's TestFormatsCovered does for the line formats.
func TestKVEventsFixture(t *testing.T) {
	r, err := trace.Open("../../trace/testdata/kvevents_tiny.kvev", trace.Options{Format: "kvevents", BlockTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var b strings.Builder
	var q trace.Request
	for {
		err := r.Next(&q)
		if err == io.EOF {
			fmt.Fprintf(&b, "EOF skipped=%d\n", r.Skipped())
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "line=%d at=%d in=%d out=%d parent=%d think=%d ids=%v\n",
			q.Line, q.Arrival, q.InputTokens, q.OutputTokens, q.Parent, q.Think, q.HashIDs)
	}
	golden.Check(t, "../../trace/testdata/kvevents_tiny.golden", []byte(b.String()))
}

// TestKVEventsBadLog: a file that is not a log, and a corrupt record, read
// as kvevents by kvsim mrc: one line naming the file and offset, exit 2.
func TestKVEventsBadLog(t *testing.T) {
	dir := t.TempDir()
	notLog := filepath.Join(dir, "t.jsonl")
	os.WriteFile(notLog, []byte(`{"timestamp":0,"input_length":1,"output_length":1,"hash_ids":[1]}`+"\n"), 0o644)
	fix, err := os.ReadFile("../../trace/testdata/kvevents_tiny.kvev")
	if err != nil {
		t.Fatal(err)
	}
	fix[len(fix)-3] ^= 0xff
	bad := filepath.Join(dir, "bad.kvev")
	os.WriteFile(bad, fix, 0o644)
	for _, p := range []string{notLog, bad} {
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"mrc", "--format", "kvevents", "--block-tokens", "16", "--policies", "lru", "--sizes", "4", "--trace", p}, io.Discard, &stderr)
		code := exitCode(err, &stderr)
		msg := stderr.String()
		if code != 2 || !strings.Contains(msg, p) || !strings.Contains(msg, "byte ") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
			t.Errorf("%s: exit %d: %q", p, code, msg)
		}
	}
}

// TestKVEventsNoBinaryTrace: kvsim trace convert refuses an event log
// (its requests are derived on every read), exit 2.
func TestKVEventsNoBinaryTrace(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.kvtc")
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"trace", "convert", "--format", "kvevents", "../../trace/testdata/kvevents_tiny.kvev", out}, io.Discard, &stderr)
	if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "not converted to a binary trace") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("wrote a binary trace")
	}
}

// kvEventsReplay runs kvsim mrc and kvsim run with format = "kvevents" on
// log (a recording of kvsim's own events, TestEventsRoundTrip), twice, and
// checks the outputs are byte-identical, that the trace holds exactly the
// gpuStores blocks that entered GPU memory (kvsim publishes no parents, so
// no prefix is added), and that kvsim run replayed every request.
func kvEventsReplay(t *testing.T, log string, gpuStores int64) {
	var mrcOut [2]bytes.Buffer
	for i := range mrcOut {
		var stderr bytes.Buffer
		if err := run(context.Background(), []string{"mrc", "--format", "kvevents", "--trace", log, "--policies", "lru,fifo", "--sizes", "16,64,256"}, &mrcOut[i], &stderr); err != nil {
			t.Fatalf("mrc: %v: %s", err, stderr.String())
		}
	}
	if mrcOut[0].String() != mrcOut[1].String() || mrcOut[0].Len() == 0 {
		t.Errorf("mrc over the recording differs between runs or is empty:\n%s\n%s", mrcOut[0].String(), mrcOut[1].String())
	}
	t.Logf("kvsim mrc over the recording:\n%s", mrcOut[0].String())
	var reqs, refs int64
	if _, err := fmt.Sscanf(mrcOut[0].String(), filepath.Base(log)+": %d requests, %d references", &reqs, &refs); err != nil || refs != gpuStores {
		t.Errorf("the trace holds %d block references (%v), the recording %d GPU stores", refs, err, gpuStores)
	}
	sc, err := os.ReadFile("testdata/events/cluster.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(sc)
	i := strings.Index(s, "[workload]")
	j := strings.Index(s, "[cluster]")
	s = s[:i] + fmt.Sprintf("[workload]\nformat = \"kvevents\"\ntrace = %q\n\n", log) + s[j:]
	scen := filepath.Join(t.TempDir(), "replay.toml")
	os.WriteFile(scen, []byte(s), 0o644)
	var csv [2][]byte
	for k := range csv {
		out := t.TempDir()
		var stderr bytes.Buffer
		if err := run(context.Background(), []string{"run", "--quiet", "--out", out, scen}, io.Discard, &stderr); err != nil {
			t.Fatalf("run: %v: %s", err, stderr.String())
		}
		if csv[k], err = os.ReadFile(filepath.Join(out, "events_cluster", "requests.csv")); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(csv[0], csv[1]) || int64(bytes.Count(csv[0], []byte("\n"))) != 1+2*reqs { // a header, then each request under each of the 2 policies
		t.Errorf("kvsim run over the recording: requests.csv differs between runs or has %d lines for %d requests", bytes.Count(csv[0], []byte("\n")), reqs)
	}
}

// TestKVEventsCancelled: a cancelled context ends the conversion with its
// error, not with a trace cut short.
func TestKVEventsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := trace.OpenCachedContext(ctx, "../../trace/testdata/kvevents_tiny.kvev", trace.Options{Format: "kvevents", BlockTokens: 16})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
