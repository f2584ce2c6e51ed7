package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kvsim/results"
	"kvsim/sim"
)

// TestOneInstanceCluster: a scenario with a one-instance [cluster] writes
// the summary.json and requests.csv of the same scenario without one, but
// for what names the run (description, overrides, run_id, the wall clock)
// and the cluster's own block (instances, router).
func TestOneInstanceCluster(t *testing.T) {
	read := func(sets ...string) (map[string]any, string, *results.Summary) {
		sc := load(t, "../scenarios/quickstart.toml", sets...)
		out := t.TempDir()
		sum, err := Run(context.Background(), sc, Options{Out: out, Limit: 400, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		js, err := os.ReadFile(filepath.Join(out, sc.Name, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "description")
		delete(m, "run_id")
		delete(m, "run")
		delete(m, "overrides")
		for _, p := range m["policies"].([]any) {
			delete(p.(map[string]any), "instances")
			delete(p.(map[string]any), "router")
			delete(p.(map[string]any), "routing")
		}
		csv, err := os.ReadFile(filepath.Join(out, sc.Name, "requests.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return m, strings.ReplaceAll(string(csv), sum.RunID, "RUNID"), sum
	}
	m0, csv0, _ := read()
	m1, csv1, sum1 := read("cluster.instances=1")
	for k := range m0 {
		j0, _ := json.Marshal(m0[k])
		j1, _ := json.Marshal(m1[k])
		if !bytes.Equal(j0, j1) {
			t.Errorf("summary.json's %s differs", k)
		}
	}
	if len(m0) != len(m1) {
		t.Errorf("summary.json's keys differ: %d and %d", len(m0), len(m1))
	}
	if csv0 != csv1 {
		t.Error("requests.csv differs")
	}
	if !strings.Contains(csv0, ",instance,run_id\n") {
		t.Error("requests.csv lacks the instance column")
	}
	p := sum1.Policies[0]
	if len(p.Instances) != 1 || p.Router == nil || p.Router.Name != "round_robin" ||
		p.Instances[0].Requests != p.Requests || p.Instances[0].Chosen != p.Requests+p.Rejected ||
		p.Instances[0].GPUBusyShare == nil || *p.Instances[0].GPUBusyShare <= 0 || *p.Instances[0].GPUBusyShare > 1 {
		t.Errorf("cluster block: %+v %+v", p.Instances, p.Router)
	}
}

// TestClusterRun: four instances split the requests (round robin: evenly),
// requests.csv names each row's instance, the totals are the instances'
// sums, and an offline policy is refused.
func TestClusterRun(t *testing.T) {
	sc := load(t, "../scenarios/quickstart.toml", "cluster.instances=4")
	out := t.TempDir()
	sum, err := Run(context.Background(), sc, Options{Out: out, Limit: 400, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sum.Policies {
		var req, chosen int64
		for i, in := range p.Instances {
			req += in.Requests
			chosen += in.Chosen
			if in.Chosen != 100 || p.Router.Decisions[i] != 100 {
				t.Errorf("%s: instance %d chosen %d", p.Name, i, in.Chosen)
			}
		}
		if len(p.Instances) != 4 || req != p.Requests || chosen != p.Requests+p.Rejected || p.Requests+p.Rejected != 400 {
			t.Errorf("%s: %d instances, %d requests, %d chosen; policy %d+%d", p.Name, len(p.Instances), req, chosen, p.Requests, p.Rejected)
		}
	}
	rr, err := results.OpenRequests(filepath.Join(out, sc.Name, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	per := map[int]int{}
	var q results.Request
	for rr.Next(&q) == nil {
		if q.Policy == sc.Policies[0].Name {
			per[q.Instance]++
		}
	}
	if len(per) != 4 || per[0] != 100 || per[3] != 100 {
		t.Errorf("rows per instance %v", per)
	}
	bel := load(t, "../scenarios/quickstart.toml", "cluster.instances=2", "policy.lru.eviction=belady")
	if _, err := Run(context.Background(), bel, Options{Limit: 50}); err == nil || !strings.Contains(err.Error(), "[cluster]") {
		t.Errorf("belady in a cluster: %v", err)
	}
}

// TestMergeSeries: counts add up, shares average over the instances, and
// an instance whose series ended earlier counts as idle with its tiers as
// at its last point.
func TestMergeSeries(t *testing.T) {
	a := &sim.Series{Interval: 1e9, Times: []int64{1e9, 2e9, 3e9}, Pipes: []string{"hbm->dram"},
		TierUsed: [][]float64{{0.2, 0.4, 0.6}}, LinkUtil: [][]float64{{0.5, 0.5, 1}},
		Queued: []int{1, 2, 3}, Running: []int{4, 5, 6}, Preemptions: []int64{0, 1, 1},
		PrefillTokens: []float64{10, 20, 30}, DecodeSeqs: []float64{1, 1, 1}}
	b := &sim.Series{Interval: 1e9, Times: []int64{1e9}, Pipes: []string{"hbm->dram"},
		TierUsed: [][]float64{{0.8}}, LinkUtil: [][]float64{{0.1}},
		Queued: []int{7}, Running: []int{1}, Preemptions: []int64{2},
		PrefillTokens: []float64{30}, DecodeSeqs: []float64{3}}
	if got := mergeSeries([]*sim.Series{a}); got != a {
		t.Error("one instance's series is not returned as it is")
	}
	m := mergeSeries([]*sim.Series{a, b})
	want := &sim.Series{Interval: 1e9, Times: a.Times, Pipes: a.Pipes,
		TierUsed: [][]float64{{0.5, 0.6, 0.7}}, LinkUtil: [][]float64{{0.3, 0.25, 0.5}},
		Queued: []int{8, 2, 3}, Running: []int{5, 5, 6}, Preemptions: []int64{2, 3, 3},
		PrefillTokens: []float64{20, 10, 15}, DecodeSeqs: []float64{2, 0.5, 0.5}}
	near := func(x, y []float64) bool {
		for i := range x {
			if d := x[i] - y[i]; d > 1e-12 || d < -1e-12 {
				return false
			}
		}
		return len(x) == len(y)
	}
	if !near(m.TierUsed[0], want.TierUsed[0]) || !near(m.LinkUtil[0], want.LinkUtil[0]) ||
		!near(m.PrefillTokens, want.PrefillTokens) || !near(m.DecodeSeqs, want.DecodeSeqs) ||
		!reflect.DeepEqual(m.Queued, want.Queued) || !reflect.DeepEqual(m.Running, want.Running) ||
		!reflect.DeepEqual(m.Preemptions, want.Preemptions) || !reflect.DeepEqual(m.Times, want.Times) {
		t.Errorf("merged %+v\nwant %+v", m, want)
	}
}

// TestClusterRouterRejects: requests the router refuses count as rejected
// in the policy's totals and as SLO misses, and their requests.csv rows
// name instance -1.
func TestClusterRouterRejects(t *testing.T) {
	sc := load(t, "../scenarios/quickstart.toml", "cluster.instances=2", "cluster.router=mooncake",
		"cluster.slo_reject=true", "slo.ttft_ms=20")
	out := t.TempDir()
	sum, err := Run(context.Background(), sc, Options{Out: out, Limit: 400, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := sum.Policies[0]
	var instRejected int64
	for _, in := range p.Instances {
		instRejected += in.Rejected
	}
	if p.Router.Rejected == 0 || p.Rejected != p.Router.Rejected+instRejected || p.Requests+p.Rejected != 400 {
		t.Fatalf("router refused %d, instances rejected %d, policy %d finished + %d rejected", p.Router.Rejected, instRejected, p.Requests, p.Rejected)
	}
	if p.SLOAttainment == nil || *p.SLOAttainment > float64(p.Requests)/400 {
		t.Errorf("SLO attainment %v with %d of 400 finished", p.SLOAttainment, p.Requests)
	}
	rr, err := results.OpenRequests(filepath.Join(out, sc.Name, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	var refused int64
	var q results.Request
	for rr.Next(&q) == nil {
		if q.Policy == p.Name && q.Instance == -1 {
			if !q.Rejected {
				t.Fatalf("row of seq %d: instance -1 but not rejected", q.Seq)
			}
			refused++
		}
	}
	if refused != p.Router.Rejected {
		t.Errorf("%d rows with instance -1, router refused %d", refused, p.Router.Rejected)
	}
}
