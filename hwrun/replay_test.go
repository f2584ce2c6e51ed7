package hwrun

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"kvsim/hw"
	"kvsim/scenario"
	"kvsim/tierkind"
)

// Every tier kind a scenario accepts has a real store registered in hw
// (and none more): a new kind is a spec (tierkind) plus one hw file.
func TestTierKindsMatch(t *testing.T) {
	kinds := slices.Sorted(slices.Values(tierkind.Names()))
	if got := hw.TierKinds(); !slices.Equal(got, kinds) {
		t.Errorf("hw registers tier kinds %v, scenario accepts %v", got, kinds)
	}
}

// The store identity (a trace hash) is computed only for a scenario with a
// tier whose kind keeps its blocks on disk, as its registration says.
func TestStoreIdentityOnDisk(t *testing.T) {
	var mem []scenario.Tier
	for _, k := range tierkind.Names() {
		if s, _ := tierkind.Lookup(k); !s.OnDisk {
			mem = append(mem, scenario.Tier{Kind: k})
		}
	}
	sc := &scenario.Scenario{Tiers: mem}
	sc.Workload.Trace = "no such trace" // not read: no tier needs an identity
	if f, err := storeIdentity(context.Background(), sc, ReplayOptions{BlockBytes: 4096}); f != nil || err != nil {
		t.Errorf("memory tiers only: %v, %v", f, err)
	}
	sc.Tiers = append(sc.Tiers, scenario.Tier{Kind: "nvmeof"})
	if _, err := storeIdentity(context.Background(), sc, ReplayOptions{BlockBytes: 4096}); err == nil {
		t.Error("an nvmeof tier: the missing trace was not read")
	}
}

// Without a scenario, replay runs HBM, DRAM and SSD with LRU over the
// trace, --set applying to it like to a file.
func TestDefaultReplayScenario(t *testing.T) {
	sc, err := DefaultReplayScenario("t.jsonl", []string{"tier.ssd.capacity=1TB"})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ti := range sc.Tiers {
		kinds = append(kinds, ti.Kind)
	}
	if !slices.Equal(kinds, []string{"hbm", "dram", "ssd"}) || sc.Tiers[2].Capacity != 1e12 || len(sc.Policies) != 1 ||
		sc.Policies[0].Eviction != "lru" || !filepath.IsAbs(sc.Workload.Trace) || filepath.Base(sc.Workload.Trace) != "t.jsonl" {
		t.Errorf("default replay scenario: tiers %v, %+v, policies %+v, trace %s", kinds, sc.Tiers, sc.Policies, sc.Workload.Trace)
	}
	if _, err := DefaultReplayScenario("t.jsonl", []string{"tier.tape.capacity=1TB"}); err == nil {
		t.Error("a --set naming no tier was accepted")
	}
}

// A store's blocks under [workload.inject] are the injector's draws: its
// table and the seed enter the identity (and stay out without one).
func TestStoreIdentityInject(t *testing.T) {
	tr, err := filepath.Abs("../traces/synthetic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	id := func(sets ...string) string {
		t.Helper()
		sc, err := DefaultReplayScenario(tr, sets)
		if err != nil {
			t.Fatal(err)
		}
		f, err := storeIdentity(context.Background(), sc, ReplayOptions{BlockBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(f)
		return string(b)
	}
	inj := []string{"workload.inject.sessions=20", "workload.inject.system_tokens=1024"}
	if id() != id("seed=2") {
		t.Error("without injection the seed changed the identity")
	}
	if a, b := id(inj...), id(append(inj, "seed=2")...); a == b || a == id() {
		t.Errorf("injection: seeds 1 and 2 share an identity, or it is the plain trace's: %s", a)
	}
	if id(inj...) == id("workload.inject.sessions=30", "workload.inject.system_tokens=1024") {
		t.Error("another injection table, the same identity")
	}
}
