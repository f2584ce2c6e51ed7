package validate

import (
	"context"
	"math"
	"os"
	"testing"

	"kvsim/internal/testenv"
	"kvsim/scenario"
)

// TestValidateReferenceRun replays the one real run kvsim is calibrated
// on (vLLM 0.19, RTX PRO 6000, Llama-3.1-8B; kept outside the repository)
// with the shipped scenario, and with the default efficiencies, and holds
// the mean E2E error to the acceptance bar of 10%.
func TestValidateReferenceRun(t *testing.T) {
	dir := testenv.SharedPath(t, "reference", "vllm-rtxpro6000-llama-3.1-8b")
	if _, err := os.Stat(dir); err != nil {
		testenv.Missing(t, "the real vLLM run %s is not present (LLMServingSim's bench/examples/RTXPRO6000/Llama-3.1-8B/vllm, kept beside the repository as shared data): %v", dir, err)
	}
	rs, err := Load(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	scPath := testenv.Path(t, "scenarios", "validate-rtxpro6000-llama-3.1-8b.toml")
	for _, c := range []struct {
		name string
		sets []string
	}{{"shipped", nil}, {"default efficiencies", []string{"gpu.compute_efficiency=0.5", "gpu.memory_efficiency=0.8"}}} {
		sc, err := scenario.LoadWith(scPath, c.sets)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), sc, rs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Warnings) != 0 {
			t.Errorf("%s: warnings: %q", c.name, r.Warnings)
		}
		for _, m := range r.Metrics() {
			x := m.M
			t.Logf("%s: %s over %d: mean %.2f ms measured, %.2f predicted (%+.1f%%); MAPE %.1f%%, bias %+.1f%%, KS %.3f",
				c.name, m.Name, x.Requests, x.Measured.Mean, x.Predicted.Mean, x.MeanErrorPct, x.MAPEPct, x.BiasPct, x.KS)
		}
		if e := float64(r.E2E.MeanErrorPct); !(math.Abs(e) <= 10) {
			t.Errorf("%s: mean E2E off by %+.1f%%: past the acceptance bar of 10%%", c.name, e)
		}
	}
}
