package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNotebook executes notebooks/analysis.ipynb against a fresh run, so
// the notebook keeps up with summary.json and requests.csv.
func TestNotebook(t *testing.T) {
	nbconvert, err := exec.LookPath("jupyter-nbconvert")
	if err != nil {
		if os.Getenv("KVSIM_REQUIRE_ALL") != "" {
			t.Fatal("jupyter-nbconvert not found (apt-get install jupyter-nbconvert python3-pandas python3-matplotlib python3-ipykernel)")
		}
		t.Skip("jupyter-nbconvert not found: apt-get install jupyter-nbconvert python3-pandas python3-matplotlib python3-ipykernel")
	}
	out := t.TempDir()
	if _, stderr, code := runKvsim("run", "--quiet", "--limit", "400", "--out", out, "../../scenarios/quickstart.toml"); code != 0 {
		t.Fatalf("kvsim run: %s", stderr)
	}
	nb, _ := filepath.Abs("../../notebooks/analysis.ipynb")
	cmd := exec.Command(nbconvert, "--to", "notebook", "--execute", "--output-dir", t.TempDir(), nb)
	cmd.Dir = filepath.Dir(nb)
	cmd.Env = append(os.Environ(), "KVSIM_RESULTS="+filepath.Join(out, "quickstart"), "PYDEVD_DISABLE_FILE_VALIDATION=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("notebook failed: %v\n%s", err, b)
	}
}
