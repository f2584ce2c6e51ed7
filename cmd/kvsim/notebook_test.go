package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"kvsim/internal/testenv"
)

// TestNotebook executes notebooks/analysis.ipynb against a fresh run, so
// the notebook keeps up with summary.json and requests.csv.
func TestNotebook(t *testing.T) {
	nbconvert, err := exec.LookPath("jupyter-nbconvert")
	if err != nil {
		testenv.Missing(t, "jupyter-nbconvert not found: apt-get install jupyter-nbconvert python3-pandas python3-matplotlib python3-ipykernel")
	}
	// A run where every request was rejected (null TTFT, exit 2) must not
	// break it either.
	for _, tc := range []struct {
		set  string
		code int
	}{{"seed=1", 0}, {"tier.hbm.capacity=1MiB", 2}} {
		out := t.TempDir()
		if _, stderr, code := runKvsim("run", "--quiet", "--limit", "400", "--out", out, "--set", tc.set, "../../scenarios/quickstart.toml"); code != tc.code {
			t.Fatalf("kvsim run --set %s: exit %d, want %d: %s", tc.set, code, tc.code, stderr)
		}
		nb, _ := filepath.Abs("../../notebooks/analysis.ipynb")
		cmd := exec.Command(nbconvert, "--to", "notebook", "--execute", "--output-dir", t.TempDir(), nb)
		cmd.Dir = filepath.Dir(nb)
		cmd.Env = append(os.Environ(), "KVSIM_RESULTS="+filepath.Join(out, "quickstart"), "PYDEVD_DISABLE_FILE_VALIDATION=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("--set %s: notebook failed: %v\n%s", tc.set, err, b)
		}
	}
}
