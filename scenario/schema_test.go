package scenario

import (
	"encoding/json"
	"strings"
	"testing"

	"kvsim/core"
)

// A loaded policy carries core's strategy values, parsed from its keys.
func TestPolicyStrategy(t *testing.T) {
	s, err := Parse([]byte(doc("[[policy]]\neviction = \"lru\"\n"+
		"[[policy]]\nname = \"all\"\neviction = \"lru\"\nadmission = \"after:3\"\nwrite = \"through\"\npromotion = \"second-hit\"\n"+
		"prefetch = \"timeout\"\nprefetch_timeout = \"5ms\"\nrecompute = \"when-cheaper\"\n"+
		"[[policy]]\nname = \"never\"\neviction = \"lru\"\npromotion = \"never\"\nprefetch = \"wait_complete\"\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	want := []core.Strategy{
		{},
		{AdmitAfter: 3, WriteThrough: true, Promotion: core.PromoteSecondHit, Prefetch: core.PrefetchTimeout, PrefetchTimeout: 5e6, RecomputeWhenCheaper: true},
		{Promotion: core.PromoteNever, Prefetch: core.PrefetchWaitComplete},
	}
	for i, p := range s.Policies {
		if p.Strategy != want[i] {
			t.Errorf("policy %s: strategy %+v, want %+v", p.Name, p.Strategy, want[i])
		}
	}
}

// The parsed strategy stays out of the scenario's JSON: kvsim's run_id
// hashes it, and results of earlier runs must keep their ids.
func TestStrategyNotInJSON(t *testing.T) {
	s, err := Parse([]byte(doc("[[policy]]\neviction = \"lru\"\nwrite = \"through\"\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Strategy") || strings.Contains(string(b), "WriteThrough") {
		t.Errorf("the scenario's JSON has the parsed strategy: %s", b)
	}
}
