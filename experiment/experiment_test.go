package experiment

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"kvsim/core"
	"kvsim/results"
	"kvsim/scenario"
)

func load(t *testing.T, path string, sets ...string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.LoadWith(path, sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// With Out set, Run writes summary.json as it returns it and requests.csv
// holding exactly the records OnRecord saw, policy by policy in scenario
// order; without, it writes nothing and returns the same summary.
func TestRunFilesMatchRecords(t *testing.T) {
	sc := load(t, "../scenarios/hbm_dram.toml")
	var mu sync.Mutex
	seen := map[int][]results.Request{}
	out := t.TempDir()
	o := Options{Out: out, Limit: 300, Workers: 3, OnRecord: func(p int, r *core.Record) {
		mu.Lock()
		defer mu.Unlock()
		seen[p] = append(seen[p], results.Request{Policy: sc.Policies[p].Name, Seq: r.Seq, TTFTNs: r.TTFT(), Rejected: r.Rejected})
	}}
	sum, err := Run(context.Background(), sc, o)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, sc.Name)
	disk, err := results.ReadSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(disk, sum) {
		t.Error("summary.json differs from the summary Run returned")
	}
	rr, err := results.OpenRequests(filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	var want []results.Request
	for p := range sc.Policies {
		want = append(want, seen[p]...)
	}
	var q results.Request
	for i := 0; ; i++ {
		err := rr.Next(&q)
		if err == io.EOF {
			if i != len(want) || i == 0 {
				t.Fatalf("requests.csv has %d rows, OnRecord saw %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		w := want[i]
		if q.Policy != w.Policy || q.Seq != w.Seq || q.TTFTNs != w.TTFTNs || q.Rejected != w.Rejected || q.RunID != sum.RunID {
			t.Fatalf("row %d: %+v, OnRecord saw %+v (run_id %s)", i, q, w, sum.RunID)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".requests*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	o.Out, o.OnRecord = "", nil
	mem, err := Run(context.Background(), sc, o)
	if err != nil {
		t.Fatal(err)
	}
	mem.Run, sum.Run = results.Run{}, results.Run{}
	if !reflect.DeepEqual(mem, sum) {
		t.Error("the summary depends on whether files are written")
	}
}

// The library's errors keep their kind: bad input is an *InputError, an
// interrupted run ctx's error, and neither is mistaken for the other.
func TestRunErrorKinds(t *testing.T) {
	sc := load(t, "../scenarios/quickstart.toml")
	sc.Workload.Trace = filepath.Join(t.TempDir(), "missing.jsonl")
	_, err := Run(context.Background(), sc, Options{})
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Errorf("a missing trace: %v (%T), want an InputError", err, err)
	}

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{not json\n"), 0o644)
	sc = load(t, "../scenarios/quickstart.toml")
	sc.Workload.Trace = bad
	if _, err := Run(context.Background(), sc, Options{}); !errors.As(err, &ie) {
		t.Errorf("a malformed trace: %v (%T), want an InputError", err, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sc = load(t, "../scenarios/quickstart.toml")
	if _, err := Run(ctx, sc, Options{}); !errors.Is(err, context.Canceled) || errors.As(err, &ie) {
		t.Errorf("interrupted: %v, want context.Canceled alone", err)
	}
}

func TestCheckLoss(t *testing.T) {
	if err := CheckLoss(&results.Replay{Lost: map[string]int64{"ssd": 0}}); err != nil {
		t.Errorf("nothing lost: %v", err)
	}
	err := CheckLoss(&results.Replay{Lost: map[string]int64{"ssd": 2, "dram": 1}, Errors: []string{"EIO"}})
	var le *LossError
	if !errors.As(err, &le) || le.Lost != 3 || le.First != "EIO" {
		t.Errorf("3 lost: %#v", err)
	}
}

// A sweep's points are named by tag and value and carry the value in
// their summaries.
func TestSweep(t *testing.T) {
	sw, err := LoadSweep("../scenarios/quickstart.toml", nil, "workload.speedup", "workload.speedup", []string{" 0.5", "2 "})
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	sums, err := sw.Run(context.Background(), Options{Limit: 50}, func(i int, s *results.Summary) error {
		done = append(done, s.Scenario)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"quickstart-workload.speedup-0.5", "quickstart-workload.speedup-2"}
	if !reflect.DeepEqual(done, want) || len(sums) != 2 {
		t.Fatalf("points %v, want %v", done, want)
	}
	for i, v := range []string{"0.5", "2"} {
		if p := sums[i].Sweep; p == nil || p.Key != "workload.speedup" || p.Value != v {
			t.Errorf("point %d: sweep %+v", i, p)
		}
	}
	if sums[0].RunID == sums[1].RunID {
		t.Error("two points share a run_id")
	}
	if _, err := LoadSweep("../scenarios/quickstart.toml", nil, "workload.speedup", "x", []string{"-1"}); !errors.As(err, new(*InputError)) {
		t.Errorf("a bad value: %v, want an InputError", err)
	}
}

// A synthetic workload is generated as it is read: arrivals past the
// simulated-time limit fail the run with the generator's message (bad
// input), and a limit that stops before them runs.
func TestSyntheticTimeLimit(t *testing.T) {
	sc := load(t, "../scenarios/synthetic_seed.toml", "workload.rate=1e-12", "seed=3")
	_, err := Run(context.Background(), sc, Options{})
	const want = "workload: synthetic: arrivals pass the simulated-time limit of 146.1 years after 2 requests: raise the rate or shorten think"
	var ie *InputError
	if !errors.As(err, &ie) || err.Error() != sc.Path+": "+want {
		t.Fatalf("err = %v, want bad input %q", err, want)
	}
	if _, err := Run(context.Background(), sc, Options{Limit: 2}); err != nil {
		t.Fatalf("limit 2: %v", err)
	}
}

// TestRunInterruptedAtTheEnd cancels a run in the events after its last
// request was read (when the last request finishes): Run returns ctx's
// error and writes nothing, as at any earlier moment.
func TestRunInterruptedAtTheEnd(t *testing.T) {
	sc := load(t, "../scenarios/hbm_dram.toml")
	sc.Policies = sc.Policies[:1]
	var n int
	if _, err := Run(context.Background(), sc, Options{Limit: 200, OnRecord: func(int, *core.Record) { n++ }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, seen := t.TempDir(), 0
	_, err := Run(ctx, sc, Options{Out: out, Limit: 200, OnRecord: func(int, *core.Record) {
		if seen++; seen == n {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want %v", err, context.Canceled)
	}
	ents, _ := os.ReadDir(filepath.Join(out, sc.Name))
	for _, e := range ents {
		if e.Name() != results.LockFile { // the folder's lock, which holds nothing
			t.Errorf("wrote %s", e.Name())
		}
	}
}
