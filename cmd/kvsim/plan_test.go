package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/experiment"
	"kvsim/results"
)

var planArgs = []string{"plan", "../../scenarios/hbm_dram.toml", "--limit", "400", "--parallel", "2",
	"--vary", "tier.hbm.capacity=5GiB..40GiB", "--vary", "tier.dram.capacity=16GiB..128GiB"}

// TestPlanCommand: the table names the cheapest point meeting the SLO,
// why the next cheaper one fails, and the Pareto front (exit 0); a target
// nothing meets exits 1 after the table; the output is the same on every
// run, as a table and as JSON.
func TestPlanCommand(t *testing.T) {
	args := append(planArgs, "--slo", "ttft_p99=400")
	stdout, stderr, code := runKvsim(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"grid hbm 5GiB..40GiB (4) x dram 16GiB..128GiB (4) = 16 points x 3 policies",
		"simulated 7 of 16 points; skipped 9",
		"cheapest meeting the SLO: hbm=20GiB dram=16GiB with lru: $515, TTFT p99 355.5 ms",
		"next cheaper: hbm=5GiB dram=64GiB ($451) fails with lru: ttft_p99 9630.1 ms > 400 ms (+9230.1 ms)\n",
		"Pareto front",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in:\n%s", want, stdout)
		}
	}
	again, _, _ := runKvsim(args...)
	if again != stdout {
		t.Errorf("two runs differ:\n%s\n%s", stdout, again)
	}
	j1, _, code := runKvsim(append(args, "--json")...)
	j2, _, _ := runKvsim(append(args, "--json")...)
	var r experiment.PlanResult
	if err := json.Unmarshal([]byte(j1), &r); err != nil || code != 0 || j1 != j2 {
		t.Errorf("--json: exit %d, %v, same %v", code, err, j1 == j2)
	}
	if r.Best == nil || r.Best.Point.Value != "20GiB,16GiB" || r.Simulated != 7 || len(r.Pareto) == 0 {
		t.Errorf("--json: %+v", r)
	}
	// DRAM past the 400 requests' footprint (155.18 GiB): 512 GiB repeats
	// 256 GiB, at each of the 4 HBM capacities.
	fp := []string{"plan", "../../scenarios/hbm_dram.toml", "--limit", "400", "--parallel", "2", "--slo", "ttft_p99=400",
		"--vary", "tier.hbm.capacity=5GiB..40GiB", "--vary", "tier.dram.capacity=64GiB..512GiB"}
	stdout, _, _ = runKvsim(fp...)
	if !strings.Contains(stdout, ", 4 past the trace's footprint of 155.18 GiB, ") {
		t.Errorf("no footprint count in:\n%s", stdout)
	}
	j1, _, _ = runKvsim(append(fp, "--json")...)
	r = experiment.PlanResult{}
	if err := json.Unmarshal([]byte(j1), &r); err != nil || r.BeyondFootprint != 4 || r.FootprintBytes != 166628556800 {
		t.Errorf("--json: %v: beyond_footprint %d, footprint_bytes %d", err, r.BeyondFootprint, r.FootprintBytes)
	}
	stdout, stderr, code = runKvsim(append(planArgs, "--slo", "ttft_p99=100")...)
	if code != 1 || !strings.Contains(stdout, "no configuration in the grid meets the SLO") || !strings.Contains(stderr, "kvsim: plan: no configuration") {
		t.Errorf("nothing meets: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// --budget leaves points out; --out writes each simulated point as a sweep
// point's folder, and a rerun reuses them all.
func TestPlanBudgetAndFolders(t *testing.T) {
	out := t.TempDir()
	args := append(planArgs, "--slo", "ttft_p99=300", "--budget", "1100", "--out", out)
	stdout, stderr, code := runKvsim(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "within the $1100 budget (3 over it)") {
		t.Errorf("table:\n%s", stdout)
	}
	// Each simulated point is a sweep point's folder.
	n := 0
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		s, err := results.ReadSummary(filepath.Join(out, e.Name(), results.SummaryFile))
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		if s.Sweep == nil || s.Sweep.Key != "tier.hbm.capacity,tier.dram.capacity" || !strings.HasPrefix(e.Name(), "hbm_dram-hbm-") {
			t.Errorf("%s: sweep %+v", e.Name(), s.Sweep)
		}
		n++
	}
	if !strings.Contains(stdout, fmt.Sprintf("simulated %d of 13 points", n)) {
		t.Errorf("%d folders; table:\n%s", n, stdout)
	}
	// Run again: every point is reused, the answer the same.
	again, _, _ := runKvsim(args...)
	if again != stdout {
		t.Errorf("rerun differs:\n%s\n%s", stdout, again)
	}
}

// Bad input: one line naming the flag, exit 2, nothing simulated.
func TestPlanBadInput(t *testing.T) {
	s := "../../scenarios/hbm_dram.toml"
	v := "tier.dram.capacity=16GiB..64GiB"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{s, "--vary", v}, "--slo: required"},
		{[]string{s, "--vary", v, "--slo", "ttft=5"}, `--slo: unknown term "ttft"`},
		{[]string{s, "--vary", v, "--slo", "ttft_p99"}, "--slo"},
		{[]string{s, "--vary", v, "--slo", "ttft_p99=fast"}, "--slo ttft_p99"},
		{[]string{s, "--vary", v, "--slo", "ttft_p99=5GiB"}, "--slo ttft_p99"},
		{[]string{s, "--vary", v, "--slo", "ttft_p99=-1"}, "--slo ttft_p99"},
		{[]string{s, "--vary", v, "--slo", "ttft_p99=500,attainment=1.5"}, "--slo attainment"},
		{[]string{s, "--slo", "ttft_p99=500"}, "--vary: give at least one"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", "tier.ssd.capacity=1TB..2TB"}, `has no tier "ssd"`},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", "tier.dram.capacity=64GiB..16GiB"}, "reversed"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", "tier.dram.capacity=16..64ms"}, "--vary"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", "tier.dram.bandwidth=1..2"}, "want tier.NAME.capacity=A..B"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", "tier.dram.capacity=16GiB"}, "--vary"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", v, "--vary", v}, "varied twice"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", v, "--budget", "lots"}, "--budget"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", v, "--steps", "1"}, "--steps"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", v, "--margin", "-0.1"}, "--margin"},
		{[]string{s, "--slo", "ttft_p99=500", "--vary", v, "--margin", "NaN"}, "--margin"},
		{[]string{"--slo", "ttft_p99=500", "--vary", v}, "exactly one SCENARIO"},
	} {
		stdout, stderr, code := runKvsim(append([]string{"plan"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// Interrupted: exit 130.
func TestPlanInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	err := run(ctx, append(planArgs, "--slo", "ttft_p99=400"), &out, &errb)
	if code := exitCode(err, &errb); code != 130 {
		t.Errorf("exit %d: %v", code, err)
	}
}

// TestPlanHTML: --html writes a page kvsim made (its generator mark, the
// Pareto chart), the same bytes on every run; a file kvsim did not write
// is refused before anything is simulated (exit 2), and --assets needs
// --html.
func TestPlanHTML(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "plan.html")
	args := append(append([]string{}, planArgs...), "--slo", "ttft_p99=400", "--html", page)
	var pages []string
	for range 2 {
		if _, stderr, code := runKvsim(args...); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, string(b))
	}
	if pages[0] != pages[1] {
		t.Error("two runs wrote different pages")
	}
	for _, want := range []string{results.PageGenerator, "plan_pareto", "Pareto front", "TTFT target", "cheapest meeting the SLO"} {
		if !strings.Contains(pages[0], want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	foreign := filepath.Join(dir, "notes.html")
	os.WriteFile(foreign, []byte("<p>mine</p>"), 0o644)
	_, stderr, code := runKvsim(append(append([]string{}, planArgs...), "--slo", "ttft_p99=400", "--html", foreign)...)
	if b, _ := os.ReadFile(foreign); code != 2 || string(b) != "<p>mine</p>" || strings.Contains(stderr, "simulated") {
		t.Errorf("a foreign --html: exit %d, %q, file %q", code, stderr, b)
	}
	if _, stderr, code := runKvsim(append(append([]string{}, planArgs...), "--slo", "ttft_p99=400", "--assets", dir)...); code != 2 || !strings.Contains(stderr, "--assets is for the --html page") {
		t.Errorf("--assets without --html: exit %d, %q", code, stderr)
	}
}
