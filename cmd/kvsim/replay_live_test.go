package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/results"
)

// TestReplayLive: the default replay runs live on the wall clock over
// HBM, DRAM and an SSD tier, verifies every block, loses nothing, writes
// replay.json with the measured and predicted figures side by side, a
// requests.csv with a row per request, and replay.html; its table says
// how late the clock was seen. The figures' values are not asserted (they
// are this machine's timings): their presence and consistency are.
func TestReplayLive(t *testing.T) {
	dir := replayDir(t)
	stdout, stderr, code := runKvsim("replay", "--real", "--scenario", "../../scenarios/hbm_dram_ssd.toml", "--set", "tier.hbm.capacity=2GiB",
		"--set", "tier.dram.capacity=4GiB", "--dir", dir, "--limit", "30", "--speedup", "20", "--block-bytes", "16384", "--verify", synthetic)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := readReplay(t, filepath.Join(dir, "replay.json"))
	if r.Mode != "live" || r.Live == nil || r.Requests != 30 {
		t.Fatalf("mode %q, live %v, %d requests; want a live replay of 30", r.Mode, r.Live != nil, r.Requests)
	}
	if r.Verify == nil || r.Verify.Checked == 0 || r.Verify.Corrupt != 0 {
		t.Errorf("verify %+v", r.Verify)
	}
	for tier, n := range r.Lost {
		if n != 0 {
			t.Errorf("tier %s lost %d copies", tier, n)
		}
	}
	if r.Links["hbm->dram"].Count == 0 {
		t.Errorf("no demotion from a 2 GiB HBM: links %+v", r.Links)
	}
	var c map[string]struct {
		Requests  int                `json:"requests"`
		Measured  map[string]float64 `json:"measured_ms"`
		Predicted map[string]float64 `json:"predicted_ms"`
	}
	if err := json.Unmarshal(r.Live.Compare, &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ttft", "tpot", "e2e", "load_wait"} {
		m := c[k]
		if m.Requests != 30 || !(m.Measured["p50"] >= 0) || !(m.Predicted["p50"] >= 0) {
			t.Errorf("%s: %+v", k, m)
		}
	}
	if ttft := c["ttft"]; !(ttft.Measured["p50"] > 0) || !(ttft.Predicted["p50"] > 0) || ttft.Measured["p99"] < ttft.Measured["p50"] {
		t.Errorf("ttft %+v", ttft)
	}
	for _, p := range []*results.Policy{r.Live.Measured, r.Live.Predicted} {
		if p == nil || p.Requests != 30 || p.TTFTms == nil || p.Name != "lru" || p.BlockAccesses == 0 {
			t.Errorf("live summary %+v", p)
		}
	}
	if m, p := r.Live.Measured, r.Live.Predicted; m != nil && p != nil && m.BlockAccesses != p.BlockAccesses {
		t.Errorf("block accesses: measured %d, predicted %d: the same trace", m.BlockAccesses, p.BlockAccesses)
	}
	var per []json.RawMessage
	if err := json.Unmarshal(r.Live.PerRequest, &per); err != nil || len(per) != 30 {
		t.Errorf("per_request: %d entries (%v)", len(per), err)
	}
	rr, err := results.OpenRequests(filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	n := 0
	for {
		var q results.Request
		if err := rr.Next(&q); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if q.Policy != "lru" || q.TTFTNs <= 0 || q.DoneNs < q.ArrivalNs+q.TTFTNs {
			t.Errorf("requests.csv row %+v", q)
		}
		n++
	}
	if n != 30 {
		t.Errorf("requests.csv has %d rows, want 30", n)
	}
	if !results.IsPage(filepath.Join(dir, "replay.html")) {
		t.Error("no replay.html")
	}
	if !strings.Contains(stdout, "live on the wall clock") || !strings.Contains(stdout, "steps; arrivals late by") || !strings.Contains(stdout, "ttft") {
		t.Errorf("table:\n%s", stdout)
	}
	// A second replay on the folder replaces what the first wrote.
	if _, stderr, code := runKvsim("replay", "--real", "--scenario", "../../scenarios/hbm_dram.toml", "--dir", dir, "--limit", "5", "--speedup", "20", "--block-bytes", "16384", synthetic); code != 0 {
		t.Fatalf("second replay: exit %d: %s", code, stderr)
	}
}

// TestReplayLiveRefuses: flags that cannot go together, a bad --speedup,
// and a requests.csv kvsim did not write are refused with one line and
// exit 2, before anything is replayed; the foreign file is left as it was.
func TestReplayLiveRefuses(t *testing.T) {
	dir := replayDir(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mirror", "--sequential"}, "--mirror and --sequential"},
		{[]string{"--speedup", "-2"}, "--speedup -2: must be a number > 0"},
		{[]string{"--speedup", "NaN"}, "--speedup NaN"},
		{[]string{"--speedup", "0"}, "--speedup 0: must be a number > 0"},
	} {
		_, stderr, code := runKvsim(append(append([]string{"replay", "--real", "--dir", dir}, c.args...), synthetic)...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
	foreign := filepath.Join(dir, "requests.csv")
	if err := os.WriteFile(foreign, []byte("not kvsim's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runKvsim("replay", "--real", "--scenario", "../../scenarios/hbm_dram.toml", "--dir", dir, "--limit", "3", "--speedup", "50", "--block-bytes", "16384", synthetic)
	if code != 2 || !strings.Contains(stderr, "requests.csv") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want exit 2 and one line naming requests.csv", code, stderr)
	}
	if b, _ := os.ReadFile(foreign); string(b) != "not kvsim's\n" {
		t.Errorf("the foreign requests.csv became %q", b)
	}
}
