package main

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"kvsim/results"
)

// clusterTrace reuses blocks across requests, so that round-robin routing
// gives both instances hits in every tier.
const clusterTrace = `{"timestamp": 0, "input_length": 2000, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 100, "input_length": 2000, "output_length": 2, "hash_ids": [3, 4]}
{"timestamp": 200, "input_length": 2000, "output_length": 1, "hash_ids": [5, 6]}
{"timestamp": 300, "input_length": 2000, "output_length": 3, "hash_ids": [1, 2]}
{"timestamp": 400, "input_length": 2000, "output_length": 1, "hash_ids": [3, 4]}
{"timestamp": 500, "input_length": 2000, "output_length": 3, "hash_ids": [1, 2]}
{"timestamp": 600, "input_length": 2000, "output_length": 2, "hash_ids": [5, 6]}
{"timestamp": 700, "input_length": 2000, "output_length": 1, "hash_ids": [3, 4]}
`

// clusterRun runs the golden hierarchy as the [cluster] given, with
// --trace-events, and returns its results folder.
func clusterRun(t *testing.T, cluster string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "t.jsonl", clusterTrace)
	p := writeFile(t, dir, "s.toml", goldenScenario+cluster)
	if _, stderr, code := runKvsim("run", "--quiet", "--trace-events", "--out", filepath.Join(dir, "out"), p); code != 0 {
		t.Fatalf("kvsim run: status %d: %s", code, stderr)
	}
	return filepath.Join(dir, "out", "golden")
}

// csvRows reads requests.csv as maps by column.
func csvRows(t *testing.T, dir string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// csvMs is a requests.csv time (ms) as explain writes it.
func csvMs(t *testing.T, v string) string {
	t.Helper()
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("requests.csv: %q: %v", v, err)
	}
	return ms(int64(math.Round(f * 1e6)))
}

// TestExplainClusterRequestTimes: in a [cluster] run's log, explain
// --request finds, by itself, the instance requests.csv says ran the
// request, and its timeline gives requests.csv's arrival, queue wait, TTFT
// and end-to-end time to the microsecond, for every request of every
// policy. Disaggregated, the request is told on its prefill instance and
// then on its decode instance, whose times are requests.csv's.
func TestExplainClusterRequestTimes(t *testing.T) {
	for _, c := range []struct {
		name, cluster string
		sections      int
	}{
		{"round-robin", "[cluster]\ninstances = 2\nrouter = \"round_robin\"\n[[policy]]\neviction = \"fifo\"\nstage = \"pass\"\n", 1},
		{"disaggregated", "[cluster]\nprefill_instances = 1\ndecode_instances = 1\nrouter = \"round_robin\"\nnic_bandwidth = \"1GB/s\"\nnic_latency = \"0s\"\n", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := clusterRun(t, c.cluster)
			rows := csvRows(t, res)
			if len(rows) == 0 {
				t.Fatal("no rows")
			}
			seen := map[string]bool{}
			for _, r := range rows {
				if r["rejected"] != "false" {
					t.Fatalf("request %s rejected", r["seq"])
				}
				seen[r["instance"]] = true
				stdout, stderr, code := runKvsim("explain", res, "--request", r["seq"], "--policy", r["policy"])
				if code != 0 {
					t.Fatalf("explain --request %s: status %d: %s", r["seq"], code, stderr)
				}
				heads := strings.Count(stdout, "request "+r["seq"]+", policy "+r["policy"]+", instance ")
				if heads != c.sections {
					t.Fatalf("request %s: %d sections, want %d:\n%s", r["seq"], heads, c.sections, stdout)
				}
				// The last section is the instance whose record requests.csv holds.
				last := stdout[strings.LastIndex(stdout, "request "+r["seq"]+", policy"):]
				if !strings.HasPrefix(last, "request "+r["seq"]+", policy "+r["policy"]+", instance "+r["instance"]) {
					t.Errorf("request %s ran on instance %s; explain says:\n%s", r["seq"], r["instance"], last)
				}
				arrival := "  " + csvMs(t, r["arrival_ms"]) + "  arrival"
				if c.sections == 2 {
					arrival = "(the request arrived at " + csvMs(t, r["arrival_ms"]) + ")"
				}
				for _, want := range []string{
					arrival,
					"admitted: waited " + csvMs(t, r["queue_ms"]) + " in the queue",
					"first token: TTFT " + csvMs(t, r["ttft_ms"]) + "\n",
					"done: " + csvMs(t, r["e2e_ms"]) + " after arrival",
				} {
					if !strings.Contains(last, want) {
						t.Errorf("request %s (%s): no %q in:\n%s", r["seq"], r["policy"], want, last)
					}
				}
			}
			if len(seen) != 2 && c.sections == 1 {
				t.Errorf("the router used instances %v: want both", seen)
			}
			// Limited to an instance that did not run it: not there.
			other := "1"
			if rows[0]["instance"] == "1" {
				other = "0"
			}
			if c.sections == 1 {
				_, stderr, code := runKvsim("explain", res, "--request", rows[0]["seq"], "--policy", rows[0]["policy"], "--instance", other)
				if code != 2 || !strings.Contains(stderr, "not in the log of policy") || !strings.Contains(stderr, "on instance "+other) {
					t.Errorf("--instance %s: status %d: %s", other, code, stderr)
				}
			}
			_, stderr, code := runKvsim("explain", res, "--instance", "2")
			if code != 2 || !strings.Contains(stderr, "--instance 2: the run had 2 instances") {
				t.Errorf("--instance 2: status %d: %s", code, stderr)
			}
		})
	}
}

// TestExplainClusterBlockAndSummary: a block is told on each instance that
// held it (or on one, with --instance), and the summary weighs every
// instance's loads, their sum the instances' own counts.
func TestExplainClusterBlockAndSummary(t *testing.T) {
	res := clusterRun(t, "[cluster]\ninstances = 2\nrouter = \"round_robin\"\n")
	stdout, stderr, code := runKvsim("explain", res, "--block", "0")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	// Block 0 (trace id 1): requests 0 (instance 0), 3 and 5 (instance 1).
	for _, want := range []string{"block 0, policy lru, instance 0\n", "block 0, policy lru, instance 1\n",
		"request 0 references it", "request 3 references it", "request 5 references it"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in:\n%s", want, stdout)
		}
	}
	one, _, code := runKvsim("explain", res, "--block", "0", "--instance", "1")
	if code != 0 || strings.Contains(one, "instance 0") || !strings.Contains(one, "request 3 references it") {
		t.Errorf("--instance 1: status %d:\n%s", code, one)
	}
	all, _, _ := runKvsim("explain", res)
	i0, _, _ := runKvsim("explain", res, "--instance", "0")
	i1, _, _ := runKvsim("explain", res, "--instance", "1")
	if !strings.Contains(all, "every instance of the cluster") || !strings.Contains(i1, "instance 1 of the cluster") {
		t.Errorf("summary headings:\n%s\n%s", all, i1)
	}
	if a, b, c := loadedBlocks(t, all), loadedBlocks(t, i0), loadedBlocks(t, i1); a != b+c || a == 0 {
		t.Errorf("loaded blocks: all %d, instance 0 %d + instance 1 %d", a, b, c)
	}
	// A single run's log has one instance.
	if _, stderr, code := runKvsim("explain", goldenRun(t, "--trace-events"), "--request", "2", "--instance", "1"); code != 2 || !strings.Contains(stderr, "is not a [cluster] run's") {
		t.Errorf("--instance on a single run: status %d: %s", code, stderr)
	}
}

// loadedBlocks sums the summary's loaded-blocks column.
func loadedBlocks(t *testing.T, out string) int {
	t.Helper()
	n := 0
	for _, ln := range strings.Split(out, "\n") {
		f := strings.Fields(ln)
		if len(f) == 5 && f[0] == "lru" {
			v, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("%q: %v", ln, err)
			}
			n += v
		}
	}
	return n
}

// TestSweepTraceEvents: kvsim sweep --trace-events writes each point's
// events.bin, tied to its summary.json, and a point at the golden
// scenario's own capacity explains exactly as the plain run does; without
// the flag the points' outputs are the same bytes (wall-clock aside) and
// no log is written. A shard rerun with the flag reruns the points done
// without it, for their logs, and merge --into carries the logs.
func TestSweepTraceEvents(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "t.jsonl", goldenTrace)
	p := writeFile(t, dir, "s.toml", goldenScenario)
	sweep := func(out string, extra ...string) {
		t.Helper()
		args := append([]string{"sweep", "--quiet", "--tier", "dram", "--capacities", "1000000,3000000", "--out", filepath.Join(dir, out), p}, extra...)
		if _, stderr, code := runKvsim(args...); code != 0 {
			t.Fatalf("%v: status %d: %s", args, code, stderr)
		}
	}
	sweep("on", "--trace-events")
	sweep("off")
	plain := goldenRun(t, "--trace-events")
	for _, v := range []string{"1000000", "3000000"} {
		on, off := filepath.Join(dir, "on", "golden-dram-"+v), filepath.Join(dir, "off", "golden-dram-"+v)
		sum, err := results.ReadSummary(filepath.Join(on, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if id := results.EventsRunID(filepath.Join(on, results.EventsFile)); id != sum.RunID {
			t.Errorf("%s: events.bin of run %q beside summary.json of %q", v, id, sum.RunID)
		}
		if _, err := os.Stat(filepath.Join(off, results.EventsFile)); err == nil {
			t.Errorf("%s: events.bin written without --trace-events", v)
		}
		for _, name := range goldenOutputs {
			a, _ := os.ReadFile(filepath.Join(off, name))
			b, _ := os.ReadFile(filepath.Join(on, name))
			if len(a) == 0 || !bytes.Equal(normalizeOutput(t, name, a), normalizeOutput(t, name, b)) {
				t.Errorf("%s: %s differs with --trace-events", v, name)
			}
		}
	}
	point := filepath.Join(dir, "on", "golden-dram-1000000")
	for _, args := range [][]string{{"--request", "2"}, {"--block", "0"}, nil} {
		a, stderr, code := runKvsim(append([]string{"explain", point}, args...)...)
		if code != 0 {
			t.Fatalf("explain %v: status %d: %s", args, code, stderr)
		}
		b, _, _ := runKvsim(append([]string{"explain", plain}, args...)...)
		if a != b {
			t.Errorf("explain %v: the sweep point says\n%s\nthe plain run\n%s", args, a, b)
		}
	}
	// Shards: the points done without the flag are run again, for their logs.
	sweep("sh", "--shard", "0/1")
	sweep("sh", "--shard", "0/1", "--trace-events")
	for _, v := range []string{"1000000", "3000000"} {
		d := filepath.Join(dir, "sh", "golden-dram-"+v)
		sum, _ := results.ReadSummary(filepath.Join(d, results.SummaryFile))
		if sum == nil || results.EventsRunID(filepath.Join(d, results.EventsFile)) != sum.RunID {
			t.Errorf("shard point %s: no events.bin of its run", v)
		}
	}
	// Shards in separate folders, assembled by merge --into: each point's
	// log comes with its set.
	sweep("a", "--shard", "0/2", "--trace-events")
	sweep("b", "--shard", "1/2", "--trace-events")
	into := filepath.Join(dir, "into")
	if _, stderr, code := runKvsim("merge", "--into", into, filepath.Join(dir, "a"), filepath.Join(dir, "b")); code != 0 {
		t.Fatalf("merge --into: status %d: %s", code, stderr)
	}
	for _, v := range []string{"1000000", "3000000"} {
		d := filepath.Join(into, "golden-dram-"+v)
		sum, _ := results.ReadSummary(filepath.Join(d, results.SummaryFile))
		if sum == nil || results.EventsRunID(filepath.Join(d, results.EventsFile)) != sum.RunID {
			t.Errorf("merged point %s: no events.bin of its run", v)
		}
	}
	if _, stderr, code := runKvsim("sweep", "--trace-events-max", "0", "--tier", "dram", "--capacities", "1MB", p); code != 2 || !strings.Contains(stderr, "--trace-events-max must be >= 1") {
		t.Errorf("--trace-events-max 0: status %d: %s", code, stderr)
	}
}
