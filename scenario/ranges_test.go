package scenario

import (
	"fmt"
	"strings"
	"testing"
)

// Every count that costs memory or time per unit has a range the program
// can hold: the largest value loads, one more is refused naming the file,
// line and key (the old ranges went to 2147483647 and 4096 instances,
// which took gigabytes).
func TestCountRanges(t *testing.T) {
	link := "[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n[[link]]\nfrom = \"hbm\"\nto = \"dram\"\n"
	synth := "[workload]\nformat = \"synthetic\"\n"
	for _, tc := range []struct {
		head, key string
		max       int64
		line      int
		want      string // the refusal after "KEY: "
	}{
		{link, "lanes", MaxLanes, 8, "link 1: lanes: must be <= 1024"},
		{"[cluster]\ninstances = 2\n", "nic_lanes", MaxLanes, 3, "cluster: nic_lanes: must be <= 1024"},
		{"[cluster]\n", "instances", MaxInstances, 2, "cluster: instances: must be <= 256"},
		{"[cluster]\ndecode_instances = 1\n", "prefill_instances", MaxInstances - 1, 3, "cluster: prefill_instances: must be <= 256"},
		{synth, "requests", MaxSyntheticRequests, 3, "workload: requests: must be in 0..1000000"},
		{synth + "max_context = 1048576\n", "system_tokens", MaxSyntheticTokens - 1, 4, "workload: system_tokens: must be in 0..1048576"},
		{synth, "user_tokens", MaxSyntheticTokens, 3, "workload: user_tokens: must be in 0..1048576"},
		{synth, "output_tokens", MaxSyntheticTokens, 3, "workload: output_tokens: must be in 0..1048576"},
		{synth, "max_context", MaxSyntheticTokens, 3, "workload: max_context: must be in 0..1048576"},
		{synth, "turns", 10000, 3, "workload: turns: must be <= 10000"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			at := func(v int64) string { return doc(fmt.Sprintf("%s%s = %d\n", tc.head, tc.key, v)) }
			if _, err := Parse([]byte(at(tc.max)), path); err != nil {
				t.Errorf("%s = %d: %v", tc.key, tc.max, err)
			}
			over := tc.max + 1
			if tc.key == "prefill_instances" || tc.key == "system_tokens" { // max+1 breaks a rule between keys first
				over++
			}
			for _, v := range []int64{over, 1<<31 - 1} {
				_, err := Parse([]byte(at(v)), path)
				if want := fmt.Sprintf("%s:%d: %s", path, tc.line, tc.want); err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("%s = %d: %v, want %s", tc.key, v, err, want)
				}
			}
		})
	}
}

// A scenario holds at most MaxPolicies policies, each a whole simulation
// (2,000 took 0.9 GB on 100 requests); one more is refused naming the
// first extra entry.
func TestPolicyCount(t *testing.T) {
	pols := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "[[policy]]\nname = \"p%d\"\neviction = \"lru\"\n", i)
		}
		return b.String()
	}
	if s, err := Parse([]byte(doc(pols(MaxPolicies))), path); err != nil || len(s.Policies) != MaxPolicies {
		t.Fatalf("%d policies: %v", MaxPolicies, err)
	}
	want := fmt.Sprintf("%s:%d: policy %d: too many policies: at most %d", path, 3*MaxPolicies+1, MaxPolicies+1, MaxPolicies)
	if _, err := Parse([]byte(doc(pols(MaxPolicies+1))), path); err == nil || err.Error() != want {
		t.Errorf("%d policies: %v, want %s", MaxPolicies+1, err, want)
	}
}

// At most MaxSets overrides: finding the one behind an error reparses the
// file once per override, so 20,000 of them ran for minutes.
func TestSetCount(t *testing.T) {
	sets := make([]string, MaxSets+1)
	for i := range sets {
		sets[i] = "seed=1"
	}
	if _, err := ParseWith([]byte(doc("")), path, sets[:MaxSets]); err != nil {
		t.Errorf("%d overrides: %v", MaxSets, err)
	}
	want := fmt.Sprintf("%s: %d --set overrides: at most %d", path, MaxSets+1, MaxSets)
	if _, err := ParseWith([]byte(doc("")), path, sets); err == nil || err.Error() != want {
		t.Errorf("%d overrides: %v, want %s", MaxSets+1, err, want)
	}
}
