package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/results"
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
