package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"kvsim/internal/tomlguard"
	"kvsim/scenario"
)

const oneRequest = `{"timestamp": 0, "input_length": 1000, "output_length": 2, "hash_ids": [1, 2]}` + "\n"

// Inputs that used to exhaust the machine are refused in one line with
// exit 2 before any work: a scenario nested past the limit (5,000 inline
// tables took 1.1 GB and 9 s), lanes past theirs (2^31-1 lanes took over
// 4 GiB); and a scenario at the new limits runs on little memory.
func TestInputsExhaust(t *testing.T) {
	dir := t.TempDir()
	tr := writeFile(t, dir, "t.jsonl", oneRequest)
	base := scenarioTOML("s", tr, "40GiB", "1TiB", "lru")
	cluster := "[cluster]\ninstances = 2\nnic_lanes = %d\n"
	lanes := func(n int) string { // in the [[link]] scenarioTOML writes
		return strings.Replace(base, "bandwidth = \"25GB/s\"\n", fmt.Sprintf("bandwidth = \"25GB/s\"\nlanes = %d\n", n), 1)
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"nesting", base + "x = " + strings.Repeat("{a = ", 5000) + "1" + strings.Repeat("}", 5000) + "\n",
			fmt.Sprintf("nested %d levels deep (table headers, dotted keys, inline tables and arrays); kvsim reads at most %d", tomlguard.MaxDepth+1, tomlguard.MaxDepth)},
		{"lanes", lanes(1<<31 - 1), "link 1: lanes: must be <= 1024"},
		{"nic_lanes", base + fmt.Sprintf(cluster, scenario.MaxLanes+1), "cluster: nic_lanes: must be <= 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, tc.name+".toml", tc.text)
			_, stderr, code := runKvsim("run", "--quiet", "--out", filepath.Join(dir, "out"), p)
			if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "kvsim: "+p+":") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, %q; want 2 and one line naming %s: ... %s", code, stderr, p, tc.want)
			}
		})
	}

	// At the limits: lanes and NIC lanes at their maximum run a request
	// on a few MB (the simulator keeps a slot per lane).
	p := writeFile(t, dir, "max.toml", lanes(scenario.MaxLanes)+fmt.Sprintf(cluster, scenario.MaxLanes))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, stderr, code := runKvsim("run", "--quiet", "--out", filepath.Join(dir, "out-max"), p)
	runtime.ReadMemStats(&after)
	if code != 0 {
		t.Fatalf("at the limits: exit %d: %s", code, stderr)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("at the limits one request allocated %d MB", alloc>>20)
	}
}

// The README's injected replay names the trace by --set relative to the
// shell's working directory, beside no scenario; it used to be looked for
// in the scenario's folder and fail. A trace missing either way is one
// line with the absolute path looked at.
func TestSetTraceRelativeToWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "scenarios")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "here.jsonl", oneRequest)
	writeFile(t, sub, "s.toml", scenarioTOML("s", "beside.jsonl", "40GiB", "", "lru"))
	t.Chdir(dir)
	scen := filepath.Join("scenarios", "s.toml")

	if _, stderr, code := runKvsim("run", "--quiet", "--out", "out", "--set", "workload.trace=here.jsonl", scen); code != 0 {
		t.Errorf("--set workload.trace=here.jsonl: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--out", "out2", scen}, "kvsim: " + scen + ":14: workload: trace: " + filepath.Join(sub, "beside.jsonl") +
			": no such file or directory (a trace path written in the scenario is relative to its folder)\n"},
		{[]string{"run", "--out", "out2", "--set", "workload.trace=gone.jsonl", scen}, "kvsim: " + scen + " (--set): workload: trace: " + filepath.Join(dir, "gone.jsonl") +
			": no such file or directory (a trace path given by --set is relative to the working directory)\n"},
		{[]string{"replay", "--real", "gone.jsonl"}, "kvsim: replay: trace: " + filepath.Join(dir, "gone.jsonl") + ": no such file or directory\n"},
	} {
		_, stderr, code := runKvsim(tc.args...)
		if code != 2 || stderr != tc.want {
			t.Errorf("%v: exit %d, %q\nwant 2, %q", tc.args, code, stderr, tc.want)
		}
	}
}

// Flags that allocate per unit are bounded before any work: calibrate
// --count 1e8 held 17 GB within seconds.
func TestFlagRanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cal")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "--dir", dir, "--count", "100000000"}, "kvsim: calibrate: --count 100000000: must be in 8..65536\n"},
		{[]string{"calibrate", "--dir", dir, "--block-bytes", "2147483648"}, "kvsim: calibrate: --block-bytes 2147483648: must be a multiple of 4096, 8192 to 1073741824 (1 GiB)\n"},
	} {
		_, stderr, code := runKvsim(tc.args...)
		if code != 2 || stderr != tc.want {
			t.Errorf("%v: exit %d, %q; want 2, %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%v: made %s", tc.args, dir)
		}
	}
}
