package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kvsim/hw/bucket"
	"kvsim/hw/payload"
	"kvsim/internal/testenv"
)

// TestMain lets the test binary act as a kvsim process for the kill test.
func TestMain(m *testing.M) {
	if args := os.Getenv("KVSIM_TEST_MAIN_ARGS"); args != "" {
		if p := os.Getenv(readyEnv); p != "" {
			signalsReady = func() { os.WriteFile(p, nil, 0o644) }
		}
		os.Args = append([]string{"kvsim"}, strings.Split(args, "\x1f")...)
		main() // with main's own signal handling and exit status
	}
	if args := os.Getenv("KVSIM_TEST_CHILD_ARGS"); args != "" {
		err := run(context.Background(), strings.Split(args, "\x1f"), io.Discard, os.Stderr)
		os.Exit(exitCode(err, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestReplayKilledMidWrite SIGKILLs a replay while its SSD tier writes
// buckets, then reopens the store: no block it serves is corrupt, and torn
// buckets are discarded and reported. Each round starts with --fresh on
// what the last kill left; a last replay reopens it and verifies.
func TestReplayKilledMidWrite(t *testing.T) {
	dir := replayDir(t)
	args := []string{"replay", "--real", "--mirror", "--dir", dir, "--fresh", "--block-bytes", "16384", "--scenario", "../../scenarios/hbm_dram_ssd.toml", "../../traces/synthetic.jsonl"}
	tier := filepath.Join(dir, "tier-ssd")
	torn := 0
	for round := 0; round < 8 && (round < 3 || torn == 0); round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "KVSIM_TEST_CHILD_ARGS="+strings.Join(args, "\x1f"))
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for some buckets sealed by this child, then kill at a
		// varying moment.
		deadline := testenv.Deadline(t)
		for time.Now().Before(deadline) {
			m, _ := filepath.Glob(filepath.Join(tier, "*.meta"))
			n := 0
			for _, p := range m {
				if fi, err := os.Stat(p); err == nil && !fi.ModTime().Before(start) {
					n++
				}
			}
			if n >= 2+round {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(round*3) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		s, rep, err := bucket.Open(bucket.DefaultStoreOptions(tier))
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		torn += len(rep.DiscardedBuckets)
		for _, d := range rep.DiscardedBuckets {
			t.Logf("round %d: discarded %s", round, d)
		}
		buf := make([]byte, 16384)
		served := 0
		for _, k := range s.Keys() {
			n, err := s.Get(k, buf)
			if err != nil {
				t.Errorf("round %d: block %d: %v", round, k, err)
				continue
			}
			if !payload.Verify(buf[:n], int32(k)) {
				t.Errorf("round %d: block %d served corrupt", round, k)
			}
			served++
		}
		s.Close()
		if served == 0 {
			t.Errorf("round %d: nothing survived the kill", round)
		}
	}
	t.Logf("torn buckets discarded over all rounds: %d", torn)
	// The store the kills left is reopened as it is, and every block it
	// serves verifies.
	_, stderr, code := runKvsim("replay", "--real", "--mirror", "--dir", dir, "--verify", "--block-bytes", "16384", "--limit", "300",
		"--scenario", "../../scenarios/hbm_dram_ssd.toml", "../../traces/synthetic.jsonl")
	if code != 0 {
		t.Fatalf("reopening after the kills: status %d: %s", code, stderr)
	}
	r := readReplay(t, filepath.Join(dir, "replay.json"))
	if st := r.Stores["ssd"]; st.State != "reopened" || st.WarmBlocks == 0 || r.Verify == nil || r.Verify.Corrupt != 0 || r.Lost["ssd"] != 0 {
		t.Errorf("after the kills: store %+v, verify %+v, lost %v", st, r.Verify, r.Lost)
	}
}
