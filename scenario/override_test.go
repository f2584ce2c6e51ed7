package scenario

import (
	"strings"
	"testing"
)

const setBase = `name = "base"
[model]
layers = 32
kv_heads = 8
head_dim = 128
[[tier]]
kind = "hbm"
capacity = "40GiB"
[[tier]]
name = "host"
kind = "dram"
[[tier]]
kind = "ssd"
[[link]]
from = "hbm"
to = "host"
bandwidth = "25GB/s"
[[link]]
from = "host"
to = "ssd"
[workload]
trace = "t.jsonl"
[[policy]]
eviction = "lru"
[[policy]]
name = "wt"
eviction = "lru"
write = "through"
`

func TestSets(t *testing.T) {
	s, err := ParseWith([]byte(setBase), "x.toml", []string{
		"seed=9", "name=other", "gpu.prefill_tokens_per_s=1e5", "model.dtype=fp8",
		"tier.host.capacity=1TiB", "tier.ssd.shared_bandwidth=true", "tier.ssd.bandwidth=3GB/s",
		"link.ssd-host.lanes=4", "link.1.latency=2us", "policy.lru.promotion=second-hit", `policy.wt.admission="after:2"`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 9 || s.Name != "other" || s.GPU.PrefillTokensPerSec != 1e5 || s.Model.DType != "fp8" {
		t.Errorf("top/sections: seed %d name %q gpu %g dtype %s", s.Seed, s.Name, s.GPU.PrefillTokensPerSec, s.Model.DType)
	}
	if s.Tiers[1].Capacity != 1<<40 || !s.Tiers[2].Shared || s.Tiers[2].Bandwidth != 3e9 || s.Tiers[0].Shared {
		t.Errorf("tiers: %+v", s.Tiers)
	}
	if s.Links[1].Lanes != 4 || s.Links[0].Latency != 2000 || s.Links[0].Bandwidth != 25e9 {
		t.Errorf("links: %+v", s.Links)
	}
	if s.Policies[0].Promotion != "second-hit" || s.Policies[1].Admission != "after:2" || s.Policies[1].Write != "through" {
		t.Errorf("policies: %+v", s.Policies)
	}
	if d := s.Describe(); !strings.Contains(d, "overrides: seed=9, name=other,") {
		t.Errorf("Describe does not list the overrides:\n%s", d)
	}
	// Without overrides: the file as it is.
	if s, err := ParseWith([]byte(setBase), "x.toml", nil); err != nil || s.Seed != 1 || s.Tiers[2].Shared || s.Sets != nil {
		t.Errorf("no overrides: %+v, %v", s, err)
	}
}

func TestSetErrors(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"seed", `x.toml: --set "seed": want KEY=VALUE`},
		{"=3", `x.toml: --set "=3": want KEY=VALUE`},
		{"tier.nvme.capacity=1TB", `x.toml: --set tier.nvme.capacity: no [[tier]] "nvme" (there are: hbm, host, ssd)`},
		{"policy.arc.write=through", `no [[policy]] "arc" (there are: lru, wt)`},
		{"link.hbm-ssd.lanes=2", `no [[link]] "hbm-ssd" (there are: hbm-host, host-ssd)`},
		{"tier.capacity=1TB", `--set tier.capacity: want tier.NAME.KEY`},
		{"tier=1", `--set tier: names a table`},
		{"model=1", `--set model: names a table`},
		{"a.b.c.d=1", `too many parts`},
		{"gpu.x.y=1", `three parts name an entry of tier, link or policy`},
		// The value is checked like the key it replaces, and the message
		// says where it came from.
		{"tier.ssd.capacity=-1TB", `x.toml (--set): tier "ssd": capacity: must be > 0`},
		{"tier.ssd.shared_bandwidth=yes", `x.toml (--set): tier "ssd": shared_bandwidth: must be true or false, got string "yes"`},
		{"tier.ssd.capacty=1TB", `x.toml (--set): unknown key "capacty" in [[tier]]`},
		{"gpu.speed=1", `x.toml (--set): unknown key "speed" in [gpu]`},
		{"nope.key=1", `x.toml (--set): unknown table [nope]`},
	} {
		_, err := ParseWith([]byte(setBase), "x.toml", []string{tc.set})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--set %s: %v\n want %s", tc.set, err, tc.want)
		}
	}
}

// FuzzSet: any override of a valid scenario either gives a valid scenario
// that records it, or fails with one line that names the file and says the
// problem came from --set; it never panics.
func FuzzSet(f *testing.F) {
	for _, s := range []string{"seed=2", "tier.ssd.capacity=1TB", "link.2.lanes=3", "policy.wt.write=back",
		"gpu.load=serial", "tier..=", "link.0.x=1", "tier.hbm.kind=ssd", "workload=[1]", "model.layers={a=1}",
		"tier.host.name=disk", "tier.hbm.name=gpu", "link.hbm-host.to=ssd", "policy.lru.name=wt", "name=../x",
		"profile=hw.toml", "workload.format=synthetic", "model.block_tokens=0", `tier.ssd.latency="1us"`} {
		f.Add(s)
	}
	if _, err := ParseWith([]byte(setBase), "x.toml", nil); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, set string) {
		s, err := ParseWith([]byte(setBase), "x.toml", []string{set})
		if err != nil {
			checkErr(t, err, "x.toml")
			if msg := err.Error(); !strings.HasPrefix(msg, "x.toml (--set): ") && !strings.HasPrefix(msg, "x.toml: --set ") {
				t.Fatalf("%q: the base is valid, so the override is to blame, but the message does not say so: %q", set, msg)
			}
			return
		}
		checkValid(t, s)
		if len(s.Sets) != 1 || s.Sets[0] != set {
			t.Fatalf("overrides recorded as %q", s.Sets)
		}
	})
}

// TestSetBlame: an override that breaks a part of the file it does not
// touch (a renamed tier its links still name) is named as the cause; a file
// wrong by itself keeps its own line.
func TestSetBlame(t *testing.T) {
	for _, tc := range []struct {
		base string
		sets []string
		want string
	}{
		{setBase, []string{"tier.host.name=disk"}, `x.toml (--set): link 1: to: unknown tier "host" (line 16, after tier.host.name=disk)`},
		{setBase, []string{"seed=3", "tier.hbm.name=gpu", "gpu.load=serial"}, `x.toml (--set): link 1: from: unknown tier "hbm" (line 15, after tier.hbm.name=gpu)`},
		{setBase, []string{"policy.lru.name=wt"}, `x.toml (--set): policy "wt": name: duplicate policy name (policy 1 has it too); give each [[policy]] its own name (line 26, after policy.lru.name=wt)`},
		{setBase, []string{"workload.format=synthetic"}, `x.toml (--set): workload: trace: a synthetic workload is generated from the scenario's seed, not read from a file (line 22, after workload.format=synthetic)`},
		{setBase + "[[tier]]\nkind = \"tape\"\n", []string{"seed=2"}, `x.toml:30: tier 4: kind: unknown kind "tape"`},
	} {
		_, err := ParseWith([]byte(tc.base), "x.toml", tc.sets)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("--set %q:\n got %v\nwant %s", tc.sets, err, tc.want)
		}
	}
}
