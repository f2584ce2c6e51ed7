package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/results"
)

// The golden scenario is small enough to time by hand:
//
//   - a block is 1,000 tokens x 1,000 bytes (2 x 1 layer x 1 KV head x 250
//     x 2 bytes) = 1e6 bytes; generated tokens take 16-token pages of
//     16,000 bytes;
//   - hbm holds 2,016,000 bytes (two blocks and a page), dram one block,
//     ssd plenty;
//   - hbm<->dram moves a block in 1 ms (1 GB/s, no latency); dram<->ssd in
//     2 ms (500 MB/s) after 1 ms of latency; a load from ssd to hbm goes
//     through dram, block by block (store and forward);
//   - a step takes 1 ms + 1 us per prefill token (linear step model).
//
// Blocks are named by the run's dense ids (the trace's 1 2 3 4 are 0 1 2 3).
// Request 0 (t=0, blocks 0 1) computes 2,000 tokens: one step, 1 + 2 = 3 ms.
// Request 1 (t=100 ms, blocks 2 3) needs all of hbm: 0 and 1 are evicted
// and demoted; dram holds one block, so 0 goes on to ssd.
// Request 2 (t=200 ms, blocks 0 1) finds 0 in ssd and 1 in dram.
const goldenTrace = `{"timestamp": 0, "input_length": 2000, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 100, "input_length": 2000, "output_length": 1, "hash_ids": [3, 4]}
{"timestamp": 200, "input_length": 2000, "output_length": 3, "hash_ids": [1, 2]}
`

const goldenScenario = `name = "golden"
[model]
layers = 1
kv_heads = 1
head_dim = 250
dtype = "bf16"
block_tokens = 1000
[gpu]
engine = "batched"
page_tokens = 16
c0 = "1ms"
c_prefill = "1us"
[[tier]]
name = "hbm"
kind = "hbm"
capacity = "2016000"
[[tier]]
name = "dram"
kind = "dram"
capacity = "1000000"
[[tier]]
name = "ssd"
kind = "ssd"
capacity = "100000000"
[[link]]
from = "hbm"
to = "dram"
bandwidth = "1GB/s"
latency = "0s"
[[link]]
from = "dram"
to = "ssd"
bandwidth = "500MB/s"
latency = "1ms"
[workload]
trace = "t.jsonl"
[[policy]]
eviction = "lru"
stage = "pass"
`

// Request 2, by hand:
//   - 200: arrives; hbm holds blocks 2 and 3 (request 1's), which go
//     (dram's one slot holds block 1, pinned by this request's load: they
//     are dropped, and free at once): admitted with no wait;
//   - block 1, dram->hbm: 200 -> 201 (1 ms);
//   - block 0, ssd->dram: latency 200 -> 201, bytes 201 -> 203 (2 ms);
//     then dram->hbm 203 -> 204 (1 ms): the loads end at 204, 4 ms;
//   - the prefill computes the last token only (1,999 cached): one step of
//     1 ms + 1 us, 204 -> 205.001: TTFT 5.001 ms; its two more output
//     tokens take a 1 ms decode step each: done at 207.001;
//   - break-even: recomputing the 1,999 loaded tokens turns that step into
//     one of 2,000 tokens, 1 + 2 = 3 ms: 1.999 ms more, against 4 ms of
//     loads: slower than recompute.
const goldenRequest2 = `request 2, policy lru
  blocks at arrival (id:tiers holding it): 0:ssd 1:dram
    200.000 ms  arrival: 2,000 prompt tokens, 3 output tokens
    200.000 ms  admitted: waited 0.000 ms in the queue (for HBM space or a running slot)
    200.000 ms  hit: 1 block of its prefix in dram
    200.000 ms  hit: 1 block of its prefix in ssd
    200.000 ms  load of block 0 issued: ssd -> hbm, 1,000,000 bytes
    200.000 ms  load of block 1 issued: dram -> hbm, 1,000,000 bytes
    200.000 ms  block 1 on dram->hbm: joined the link at 200.000 ms; waited 0.000 ms for a lane, 0.000 ms of latency, 0.000 ms for the busy pipe; bytes moving from 200.000 ms
    200.000 ms  prefill issued: 1,999 tokens cached, 1 to compute
    201.000 ms  block 0 on ssd->dram: joined the link at 200.000 ms; waited 0.000 ms for a lane, 1.000 ms of latency, 0.000 ms for the busy pipe; bytes moving from 201.000 ms
    201.000 ms  block 1 landed in hbm (load)
    203.000 ms  block 0 on dram->hbm: joined the link at 203.000 ms; waited 0.000 ms for a lane, 0.000 ms of latency, 0.000 ms for the busy pipe; bytes moving from 203.000 ms
    204.000 ms  block 0 landed in hbm (load)
    204.000 ms  step 204.000 ms-205.001 ms: prefill chunk of 1 token
    205.001 ms  first token: TTFT 5.001 ms
    205.001 ms  decoding: in the 2 steps from here to its done (one token each)
    207.001 ms  done: 7.001 ms after arrival, 1 prompt token recomputed, 0 preemptions
break-even: the hit of 2 blocks (dram 1, ssd 1) took 4.000 ms to load; recomputing 1,999 tokens would have taken 1.999 ms: slower than recompute
`

// Request 1, by hand: at 100 its blocks need all of hbm. Block 0's copy
// leaves hbm 100 -> 101, block 1's 101 -> 102 (one link); with hbm_free =
// "landed" the HBM is free only then: a 2 ms queue. Its prefill of 2,000
// tokens takes 3 ms: 102 -> 105.
const goldenRequest1 = `request 1, policy lru
  blocks at arrival (id:tiers holding it): 2:none 3:none
    100.000 ms  arrival: 2,000 prompt tokens, 1 output token
    102.000 ms  admitted: waited 2.000 ms in the queue (for HBM space or a running slot)
    102.000 ms  prefill issued: 0 tokens cached, 2,000 to compute
    102.000 ms  step 102.000 ms-105.000 ms: prefill chunk of 2,000 tokens
    105.000 ms  first token: TTFT 5.000 ms
    105.000 ms  done: 5.000 ms after arrival, 2,000 prompt tokens recomputed, 0 preemptions
break-even: no loads into HBM: nothing to weigh
`

// Block 0, by hand: computed by request 0; at 100 demoted to dram (100 ->
// 101) and, dram being full with block 1's demotion, on to ssd: that move
// waits for the dram copy (101), its latency (102), its bytes (104).
// Request 2 loads it from ssd at 200 (above: 204).
const goldenBlock0 = `block 0, policy lru
      0.000 ms  request 0 references it: a miss: computed into hbm
    100.000 ms  demotion issued background: hbm -> dram; a copy placed in dram, arriving
    100.000 ms  bytes moving on hbm->dram (joined 100.000 ms; waited 0.000 ms for a lane, 0.000 ms of latency, 0.000 ms for the busy pipe)
    100.000 ms  copy in hbm gone: evicted to make room: demoted to dram; now in dram
    100.000 ms  demotion issued background: dram -> ssd; a copy placed in ssd, arriving
    100.000 ms  copy in dram gone: evicted to make room: demoted to ssd; now in ssd
    101.000 ms  the demotion's bytes all in dram
    102.000 ms  bytes moving on dram->ssd (joined 101.000 ms; waited 0.000 ms for a lane, 1.000 ms of latency, 0.000 ms for the busy pipe)
    104.000 ms  the demotion's bytes all in ssd
    200.000 ms  request 2 references it: a hit, held by ssd
    200.000 ms  load issued for request 2: ssd -> hbm; a copy placed in hbm, arriving
    201.000 ms  bytes moving on ssd->dram (joined 200.000 ms; waited 0.000 ms for a lane, 1.000 ms of latency, 0.000 ms for the busy pipe)
    203.000 ms  bytes moving on dram->hbm (joined 203.000 ms; waited 0.000 ms for a lane, 0.000 ms of latency, 0.000 ms for the busy pipe)
    204.000 ms  the load's bytes all in hbm
at the log's end: in hbm+ssd
`

// Block 1, by hand: demoted right after block 0 on the same link, whose
// one lane block 0 holds until 101: it waits 1 ms for the lane and lands
// in dram at 102. Request 2 loads it back, 200 -> 201.
const goldenBlock1 = `block 1, policy lru
      0.000 ms  request 0 references it: a miss: computed into hbm
    100.000 ms  demotion issued background: hbm -> dram; a copy placed in dram, arriving
    100.000 ms  copy in hbm gone: evicted to make room: demoted to dram; now in dram
    101.000 ms  bytes moving on hbm->dram (joined 100.000 ms; waited 1.000 ms for a lane, 0.000 ms of latency, 0.000 ms for the busy pipe)
    102.000 ms  the demotion's bytes all in dram
    200.000 ms  request 2 references it: a hit, held by dram
    200.000 ms  load issued for request 2: dram -> hbm; a copy placed in hbm, arriving
    200.000 ms  bytes moving on dram->hbm (joined 200.000 ms; waited 0.000 ms for a lane, 0.000 ms of latency, 0.000 ms for the busy pipe)
    201.000 ms  the load's bytes all in hbm
at the log's end: in hbm+dram
`

const goldenSummary = `hits slower than recompute (a request's loads took longer than recomputing their tokens in the same step model)
policy           tier        loaded blocks  slower blocks   requests
lru              dram                    1              1          1
lru              ssd                     1              1          1
`

// goldenRun runs the golden scenario (extra flags appended) and returns its
// results folder.
func goldenRun(t *testing.T, extra ...string) string {
	t.Helper()
	return goldenRunIn(t, t.TempDir(), "out", extra...)
}

// goldenRunIn is goldenRun in dir, into dir/out: paths in the outputs are
// then the same for two runs.
func goldenRunIn(t *testing.T, dir, out string, extra ...string) string {
	t.Helper()
	writeFile(t, dir, "t.jsonl", goldenTrace)
	p := writeFile(t, dir, "s.toml", goldenScenario)
	out = filepath.Join(dir, out)
	if _, stderr, code := runKvsim(append([]string{"run", "--quiet", "--out", out, p}, extra...)...); code != 0 {
		t.Fatalf("kvsim run: status %d: %s", code, stderr)
	}
	return filepath.Join(out, "golden")
}

func TestExplainGolden(t *testing.T) {
	res := goldenRun(t, "--trace-events")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--request", "2"}, goldenRequest2},
		{[]string{"--request", "1", "--policy", "lru"}, goldenRequest1},
		{[]string{"--block", "0"}, goldenBlock0},
		{[]string{"--block", "1"}, goldenBlock1},
		{nil, goldenSummary},
	} {
		stdout, stderr, code := runKvsim(append([]string{"explain", res}, c.args...)...)
		if code != 0 {
			t.Fatalf("explain %v: status %d: %s", c.args, code, stderr)
		}
		if stdout != c.want {
			t.Errorf("explain %v:\n%s\nwant:\n%s", c.args, stdout, c.want)
		}
	}
}

func TestExplainHTML(t *testing.T) {
	res := goldenRun(t, "--trace-events")
	page := filepath.Join(t.TempDir(), "r.html")
	if _, stderr, code := runKvsim("explain", res, "--request", "2", "--html", page); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if !results.IsPage(page) {
		t.Fatal("the page lacks kvsim's generator tag")
	}
	b, _ := os.ReadFile(page)
	if !bytes.Contains(b, []byte("slower than recompute")) || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("page lacks the timeline or the text:\n%s", b)
	}
	// Again over its own page: replaced. Over a file kvsim did not write: refused.
	if _, stderr, code := runKvsim("explain", res, "--request", "2", "--html", page); code != 0 {
		t.Fatalf("rewrite: status %d: %s", code, stderr)
	}
	mine := writeFile(t, t.TempDir(), "mine.html", "<p>my notes</p>")
	_, stderr, code := runKvsim("explain", res, "--request", "2", "--html", mine)
	if code != 2 || !strings.Contains(stderr, "not written by kvsim") {
		t.Errorf("foreign page: status %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(mine); string(b) != "<p>my notes</p>" {
		t.Error("a foreign page was overwritten")
	}
}

// TestTraceEventsOutputsIdentical: the flag adds events.bin and changes
// nothing else (summary.json's wall-clock run block aside).
func TestTraceEventsOutputsIdentical(t *testing.T) {
	dir := t.TempDir()
	off, on := goldenRunIn(t, dir, "off"), goldenRunIn(t, dir, "on", "--trace-events")
	if _, err := os.Stat(filepath.Join(off, results.EventsFile)); err == nil {
		t.Error("events.bin written without --trace-events")
	}
	for _, name := range goldenOutputs {
		a, err := os.ReadFile(filepath.Join(off, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(on, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(normalizeOutput(t, name, a), normalizeOutput(t, name, b)) {
			t.Errorf("%s differs with --trace-events", name)
		}
	}
}

func TestExplainBadInput(t *testing.T) {
	off := goldenRun(t)
	on := goldenRun(t, "--trace-events")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{off, "--request", "2"}, "has no events.bin: rerun with kvsim run --trace-events"},
		{[]string{on, "--request", "9"}, "request 9: not in the log"},
		{[]string{on, "--block", "99"}, "block 99: not in the log"},
		{[]string{on, "--request", "x"}, `--request "x": want an integer >= 0`},
		{[]string{on, "--block", "-1"}, `--block "-1": want an integer >= 0`},
		{[]string{on, "--request", "1", "--block", "2"}, "exclude each other"},
		{[]string{on, "--policy", "nope"}, `no policy "nope"`},
		{[]string{on, "--html", "x.html"}, "--html needs --request or --block"},
		{[]string{on, "--nope"}, "flag provided but not defined"},
		{nil, "want one results folder"},
		{[]string{t.TempDir()}, "not a results folder"},
	} {
		_, stderr, code := runKvsim(append([]string{"explain"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("explain %v: status %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 && !strings.Contains(c.want, "flag") {
			t.Errorf("explain %v: want one line, got %q", c.args, stderr)
		}
	}
	// A log of another run beside summary.json (a kill between the two,
	// or a later run without the flag) is refused, not read.
	b, err := os.ReadFile(filepath.Join(on, results.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	l, err := results.ParseEvents(b)
	if err != nil {
		t.Fatal(err)
	}
	l.Header.RunID = "0000000000000000"
	if err := results.WriteEvents(filepath.Join(on, results.EventsFile), l); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runKvsim("explain", on, "--request", "2"); code != 2 || !strings.Contains(stderr, "from another run") {
		t.Errorf("stale log: status %d: %s", code, stderr)
	}
}

// TestTraceEventsCap: past --trace-events-max, events are counted, not
// kept, and explain says so.
func TestTraceEventsCap(t *testing.T) {
	res := goldenRun(t, "--trace-events", "--trace-events-max", "5")
	stdout, stderr, code := runKvsim("explain", res, "--request", "0")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "kept the first 5 events") {
		t.Errorf("no truncation note:\n%s", stdout)
	}
	if _, stderr, code := runKvsim("run", "--trace-events-max", "0", "x.toml"); code != 2 || !strings.Contains(stderr, "--trace-events-max must be >= 1") {
		t.Errorf("--trace-events-max 0: status %d: %s", code, stderr)
	}
}

// TestTraceEventsNotOurs: an events.bin kvsim did not write stops the run
// before it simulates.
func TestTraceEventsNotOurs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "t.jsonl", goldenTrace)
	p := writeFile(t, dir, "s.toml", goldenScenario)
	if err := os.MkdirAll(filepath.Join(dir, "out", "golden"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "out", "golden"), results.EventsFile, "mine")
	_, stderr, code := runKvsim("run", "--quiet", "--trace-events", "--out", filepath.Join(dir, "out"), p)
	if code != 2 || !strings.Contains(stderr, "not written by kvsim") {
		t.Errorf("status %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "golden", results.SummaryFile)); err == nil {
		t.Error("simulated and wrote the set anyway")
	}
}
