package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/experiment"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// replayDir is a directory for storage tiers: not tmpfs, so O_DIRECT works.
func replayDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(".", ".replay-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func readReplay(t *testing.T, path string) *results.Replay {
	t.Helper()
	r, err := results.ReadReplay(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// simOnly runs a scenario's policy through the simulator alone.
func simOnly(t *testing.T, path string, policy, limit int) core.Stats {
	t.Helper()
	sc, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(experiment.SimConfig(sc, sc.Policies[policy], nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := trace.Open(sc.Workload.Trace, trace.Options{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := s.Run(workload.NewSource(r, trace.NewDict()))
	if err != nil {
		t.Fatal(err)
	}
	return res.Stats
}

// TestReplayConformance: the same scenario through the simulated mover
// alone and through the real one makes the same decisions (hits, misses,
// evictions per tier); every block read back verifies.
func TestReplayConformance(t *testing.T) {
	for _, path := range []string{"../../scenarios/hbm_dram.toml", "../../scenarios/quickstart.toml", "../../scenarios/hbm_dram_ssd.toml"} {
		sc, err := scenario.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for pi, pol := range sc.Policies { // write-through, promotion and prefetch variants too
			t.Run(filepath.Base(path)+"/"+pol.Name, func(t *testing.T) {
				want := simOnly(t, path, pi, 600)
				dir := replayDir(t)
				_, stderr, code := runKvsim("replay", "--real", "--mirror", "--scenario", path, "--policy", pol.Name, "--dir", dir, "--limit", "600", "--verify", "--block-bytes", "16384", "../../traces/synthetic.jsonl")
				if code != 0 {
					t.Fatalf("status %d: %s", code, stderr)
				}
				r := readReplay(t, filepath.Join(dir, "replay.json"))
				if r.Verify.Corrupt != 0 || r.Verify.Checked == 0 {
					t.Errorf("verify: %+v", r.Verify)
				}
				for i, ti := range sc.Tiers {
					if r.Hits[ti.Name] != want.Hits[i] || r.Evictions[ti.Name] != want.Evictions[i] || r.Lost[ti.Name] != 0 {
						t.Errorf("tier %s: real hits %d evictions %d lost %d; simulated hits %d evictions %d",
							ti.Name, r.Hits[ti.Name], r.Evictions[ti.Name], r.Lost[ti.Name], want.Hits[i], want.Evictions[i])
					}
				}
				if r.Misses != want.Misses {
					t.Errorf("misses: real %d, simulated %d", r.Misses, want.Misses)
				}
				if len(r.Links) == 0 {
					t.Error("no link carried traffic")
				}
				for name, l := range r.Links {
					if l.Count == 0 || l.P50us <= 0 || l.PredictedP50us <= 0 {
						t.Errorf("link %s: %+v", name, l)
					}
				}
			})
		}
	}
}

func TestReplayBadInput(t *testing.T) {
	dir := replayDir(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"replay", "../../traces/synthetic.jsonl"}, "--real is required"},
		{[]string{"replay", "--real", "--dir", dir, "--block-bytes", "5000", "../../traces/synthetic.jsonl"}, "multiple of 4096"},
		{[]string{"replay", "--real", "--dir", dir, "nope.jsonl"}, "nope.jsonl"},
		{[]string{"replay", "--real", "--dir", dir, "--scenario", "nope.toml", "../../traces/synthetic.jsonl"}, "nope.toml"},
		{[]string{"replay", "--real", "--dir", dir, "--policy", "zz", "--scenario", "../../scenarios/hbm_dram.toml", "../../traces/synthetic.jsonl"}, `"zz"`},
		{[]string{"replay", "--real", "--dir", dir, "--profile", "nope.toml", "../../traces/synthetic.jsonl"}, "nope.toml"},
		{[]string{"replay", "--real", "--dir", dir, "--set", "tier.dram.capacity=0", "../../traces/synthetic.jsonl"}, `replay-default.toml (--set): tier "dram": capacity: must be > 0`},
		{[]string{"replay", "--real", "--dir", dir, "--set", "tier.x.capacity=1GB", "--scenario", "../../scenarios/hbm_dram.toml", "../../traces/synthetic.jsonl"}, `--set tier.x.capacity: no [[tier]] "x"`},
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		shm, err := os.MkdirTemp("/dev/shm", "kvsim-test-")
		if err == nil {
			defer os.RemoveAll(shm)
			cases = append(cases, struct {
				args []string
				want string
			}{[]string{"replay", "--real", "--dir", shm, "--scenario", "../../scenarios/hbm_dram_ssd.toml", "../../traces/synthetic.jsonl"}, "tmpfs"})
		}
	}
	for _, tc := range cases {
		_, stderr, code := runKvsim(tc.args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: status %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestReplayHugepagesRequired: with --hugepages require the DRAM pool is on
// hugepages or the replay fails saying how many are reserved and what to
// run. Other test packages may reserve pages meanwhile, so both outcomes
// are checked for what they must show.
func TestReplayHugepagesRequired(t *testing.T) {
	dir := replayDir(t)
	_, stderr, code := runKvsim("replay", "--real", "--mirror", "--dir", dir, "--limit", "50", "--hugepages", "require",
		"--scenario", "../../scenarios/hbm_dram.toml", "../../traces/synthetic.jsonl")
	switch code {
	case 0:
		r := readReplay(t, filepath.Join(dir, "replay.json"))
		if !strings.Contains(r.Backends["dram"], "hugetlb") {
			t.Errorf("require succeeded without hugepages: %v", r.Backends)
		}
	case 2:
		if !strings.Contains(stderr, "vm.nr_hugepages") || !strings.Contains(stderr, "reserved") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("shortage error should say what is reserved and the sysctl to run: %q", stderr)
		}
	default:
		t.Errorf("status %d: %s", code, stderr)
	}
}

// TestReplayConversationVerify replays the start of the Mooncake trace on
// real memory and SSD with every block checked.
func TestReplayConversationVerify(t *testing.T) {
	tr := needSharedTrace(t)
	dir := replayDir(t)
	_, stderr, code := runKvsim("replay", "--real", "--mirror", "--verify", "--limit", "3000", "--block-bytes", "4096", "--dir", dir, tr)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	r := readReplay(t, filepath.Join(dir, "replay.json"))
	if r.Requests != 3000 || r.Verify.Checked == 0 || r.Verify.Corrupt != 0 || r.Lost["ssd"] != 0 {
		t.Errorf("requests %d, verify %+v, lost %v", r.Requests, r.Verify, r.Lost)
	}
	// SSD hits are staged through DRAM (stage = "copy", the default).
	if r.Links["dram->ssd"].Count == 0 || r.Links["ssd->dram"].Count == 0 {
		t.Errorf("the SSD tier should be written and read: %v", r.Links)
	}
}

// TestReplaySet: --set reaches the replay's scenario, the default one too.
func TestReplaySet(t *testing.T) {
	dir := replayDir(t)
	_, stderr, code := runKvsim("replay", "--real", "--mirror", "--dir", dir, "--limit", "40", "--block-bytes", "8192",
		"--set", "policy.lru.eviction=fifo", "--set", "tier.dram.capacity=1GiB", "../../traces/synthetic.jsonl")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if r := readReplay(t, filepath.Join(dir, "replay.json")); r.Policy != "fifo" {
		t.Errorf("policy %q, want fifo", r.Policy)
	}
}
