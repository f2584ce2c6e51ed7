package results

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoneCompleted: latencies are null only where no request completed,
// and the reason names the cause a user can act on.
func TestNoneCompleted(t *testing.T) {
	s := &Summary{Scenario: "x", Tiers: []Tier{{Name: "hbm", CapacityBytes: 3 << 30}},
		Trace:    Trace{Requests: 5},
		Policies: []Policy{{Name: "a", Rejected: 5}, {Name: "b", Rejected: 5}}}
	if got, want := s.NoneCompleted(), `all 5 requests were rejected: each needs more HBM for its prompt and output KV than tier "hbm" holds (3 GiB)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A cluster's router refused them (all, or some beside those too large).
	s.Policies[0].Router = &Router{Name: "mooncake", Rejected: 5}
	if got, want := s.NoneCompleted(), `all 5 requests were rejected: router "mooncake" refused 5 (slo_reject: no instance's estimate met [slo] ttft_ms)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s.Policies[0].Router.Rejected = 3
	if got, want := s.NoneCompleted(), `all 5 requests were rejected: router "mooncake" refused 3, and 2 needed more HBM than an instance holds (slo_reject: no instance's estimate met [slo] ttft_ms)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s.Policies[1].Requests = 1
	if got := s.NoneCompleted(); got != "" {
		t.Errorf("one policy completed a request, got %q", got)
	}
	s = &Summary{Scenario: "x", Policies: []Policy{{Name: "a"}}, Trace: Trace{SkippedLines: 3, FirstSkipped: "t.jsonl:1: bad"}}
	if got := s.NoneCompleted(); got != "all 3 lines of the trace were malformed and skipped (the first: t.jsonl:1: bad)" {
		t.Errorf("got %q", got)
	}

	// null survives a write and a read, and reads as NaN, not 0.
	s.Policies[0].QueueMs = &Quantiles{P99: 2}
	p := filepath.Join(t.TempDir(), "summary.json")
	if err := WriteSummary(p, s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), `"ttft_ms": null`) {
		t.Fatalf("no null in\n%s", b)
	}
	r, err := ReadSummary(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Policies[0].TTFTms != nil || !math.IsNaN(r.Policies[0].TTFTms.OrNaN().P50) || r.Policies[0].QueueMs.OrNaN().P99 != 2 {
		t.Errorf("read back %+v %+v", r.Policies[0].TTFTms, r.Policies[0].QueueMs)
	}
}

// TestOldSummaryReads: a summary.json of a kvsim before TPOT, E2E, load
// waits, preemptions and SLOs reads, with those latencies absent (nil, not
// 0) and no SLO; a run without [slo] writes slo_attainment as null.
func TestOldSummaryReads(t *testing.T) {
	p := filepath.Join(t.TempDir(), "summary.json")
	old := `{"scenario": "s", "policies": [{"name": "lru", "requests": 2, "ttft_ms": {"mean": 1, "p50": 1, "p90": 1, "p99": 1, "max": 1}}],
		"series": [{"policy": "lru", "times_s": [1], "queued_requests": [0], "running_requests": [1]}]}`
	if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSummary(p)
	if err != nil {
		t.Fatal(err)
	}
	pol := s.Policies[0]
	if pol.TTFTms == nil || pol.TPOTms != nil || pol.E2Ems != nil || pol.LoadWaitMs != nil || pol.SLOAttainment != nil ||
		pol.Preemptions != 0 || s.SLO != nil || s.Series[0].PrefillTokens != nil || s.Series[0].Preemptions != nil {
		t.Errorf("old summary read as %+v, slo %v, series %+v", pol, s.SLO, s.Series[0])
	}
	if err := WriteSummary(p, s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	for _, want := range []string{`"tpot_ms": null`, `"e2e_ms": null`, `"load_wait_ms": null`, `"slo_attainment": null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("written summary lacks %s", want)
		}
	}
	if strings.Contains(string(b), `"slo":`) || strings.Contains(string(b), "prefill_tokens_per_step") {
		t.Errorf("absent SLO or batch series written:\n%s", b)
	}
}

// A failed write names the file asked for, never the temporary one, and
// leaves no temporary file behind.
func TestWriteFileAtomicNamesPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := os.Mkdir(path, 0o755); err != nil { // rename onto a folder fails
		t.Fatal(err)
	}
	err := WriteFileAtomic(path, []byte("{}"))
	if err == nil {
		t.Fatal("writing over a folder succeeded")
	}
	if !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), ".summary.json.") {
		t.Fatalf("error %q should name %s and not the temporary file", err, path)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left %d entries, want only the folder", len(ents))
	}
}

// A temporary file that cannot be made (no such folder) also names the
// file asked for, not the temporary name pattern.
func TestWriteFileAtomicNoFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "summary.json")
	err := WriteFileAtomic(path, []byte("{}"))
	if err == nil {
		t.Fatal("writing into a missing folder succeeded")
	}
	if !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "*") {
		t.Fatalf("error %q should name %s and not the temporary pattern", err, path)
	}
}
