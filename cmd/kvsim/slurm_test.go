package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kvsim/internal/testenv"
)

// TestSlurmSweep: a real single-node Slurm runs the array script kvsim
// sweep --emit slurm writes (4 shards) and the merge job after it, and
// the merged folder equals the unsharded sweep's (scripts/slurm-test.sh,
// which starts and stops its own munged, slurmctld and slurmd).
func TestSlurmSweep(t *testing.T) {
	if _, err := exec.LookPath("slurmctld"); err != nil {
		testenv.Missing(t, "slurmctld not installed (apt-get install slurm-wlm munge)")
	}
	if os.Geteuid() != 0 {
		testenv.Missing(t, "the Slurm test starts slurmd, which needs root")
	}
	gotool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "no go command to build the kvsim the jobs run")
	}
	dir := t.TempDir()
	kvsim := filepath.Join(dir, "kvsim")
	if out, err := exec.Command(gotool, "build", "-o", kvsim, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// The script bounds its own waits a little before ours, so that it
	// stops its daemons and prints their logs itself.
	deadline := testenv.Deadline(t)
	left := time.Until(deadline) - 30*time.Second
	if left < 30*time.Second {
		t.Fatalf("too little time left before the test's deadline (%v)", time.Until(deadline))
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(testenv.Root(t), "scripts", "slurm-test.sh"), kvsim, work, strconv.Itoa(int(left.Seconds())))
	// SIGTERM, not a kill: the script then stops its daemons.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/slurm-test.sh: %v after %v\n%s", err, time.Since(start).Round(time.Second), out)
	}
	if !strings.Contains(string(out), "== ok:") {
		t.Fatalf("scripts/slurm-test.sh did not say ok:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
