package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/internal/testenv"
)

// fabricTolerance is how far a remote link's predicted per-block time
// (p50, from kvsim calibrate --remote over the same fabric) may be from
// the replay's measured one. The goal is fabricGoal. On a machine shared
// with other work a p50 drifts by up to 30% between two runs seconds apart
// (both ways: it is load, not the model), so the test asserts only what a
// broken model misses by more (a reverse link given the forward latency
// was off by 47%), logs every try against the goal, and calibrates and
// replays up to fabricTries times, passing on the first try within
// tolerance. Performance as such is not asserted.
const (
	fabricGoal      = 0.15
	fabricTolerance = 0.35
	fabricTries     = 3
)

// TestFabricShapedRemote brings up scripts/fabric.sh's fabric at 4 Gbit/s
// (two network namespaces, a tbf-shaped veth pair, redis-server in the far
// one), calibrates the remote link from the near one, replays a scenario
// with a remote_dram tier across it, and checks the per-block times
// against the prediction and against the rate. The fabric is taken down
// when the test ends, failed or not.
func TestFabricShapedRemote(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "needs root (network namespaces, tc)")
	}
	for _, bin := range []string{"ip", "tc", "redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, "needs %s (Debian: iproute2, redis-server)", bin)
		}
	}
	script, err := filepath.Abs("../../scripts/fabric.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Names and addresses of this test's own, so it never touches a fabric
	// someone brought up by hand.
	prefix := fmt.Sprintf("kvt%04x", rand.IntN(1<<16))
	subnet := fmt.Sprintf("10.233.%d", 1+rand.IntN(254))
	env := append(os.Environ(), "KVSIM_FABRIC_PREFIX="+prefix, "KVSIM_FABRIC_NET="+subnet, "KVSIM_FABRIC_STATE="+filepath.Join(t.TempDir(), "fabric"))
	fabric := func(args ...string) (string, error) {
		cmd := exec.Command(script, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := fabric("down"); err != nil {
			t.Errorf("fabric.sh down: %v\n%s", err, out)
		}
		if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), prefix) {
			t.Errorf("namespaces left after down:\n%s", out)
		}
	})
	if out, err := fabric("up", "4gbit"); err != nil {
		t.Fatalf("fabric.sh up: %v\n%s", err, out)
	}
	endpoint := "redis://" + subnet + ".2:6379"
	// kvsim is this test binary (TestMain), run in the near namespace.
	kvsim := func(args ...string) (string, int) {
		cmd := exec.Command("ip", "netns", "exec", prefix+"-near", os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "KVSIM_TEST_CHILD_ARGS="+strings.Join(args, "\x1f"))
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	var tries []string
	for try := 1; try <= fabricTries; try++ {
		errs, figures := fabricTry(t, kvsim, endpoint)
		tries = append(tries, fmt.Sprintf("try %d: %s", try, figures))
		t.Logf("try %d: %s", try, figures)
		if len(errs) == 0 {
			return
		}
		if try == fabricTries {
			t.Errorf("no try predicted both remote links within %.0f%% (the goal is %.0f%%):\n%s\nlast try: %s", 100*fabricTolerance, 100*fabricGoal, strings.Join(tries, "\n"), strings.Join(errs, "; "))
		}
	}
}

// fabricTry calibrates the remote link, replays over it, and says what is
// off (nothing: the try passed) and the figures.
func fabricTry(t *testing.T, kvsim func(...string) (string, int), endpoint string) (errs []string, figures string) {
	dir := replayDir(t)
	prof := filepath.Join(dir, "profile.toml")
	if out, code := kvsim("calibrate", "--remote", endpoint, "--dir", filepath.Join(dir, "cal"), "--out", prof, "--count", "256", "--block-bytes", "65536"); code != 0 {
		t.Fatalf("calibrate: status %d\n%s", code, out)
	}
	rdir := filepath.Join(dir, "replay")
	if out, code := kvsim("replay", "--real", "--scenario", "testdata/remote.toml", "--set", fmt.Sprintf("tier.remote.endpoint=%q", endpoint),
		"--set", "link.dram-remote.lanes=1", "--profile", prof, "--limit", "600", "--block-bytes", "65536", "--dir", rdir, synthetic); code != 0 {
		t.Fatalf("replay: status %d\n%s", code, out)
	}
	r := readReplay(t, filepath.Join(rdir, "replay.json"))
	// The bytes of a full block at the shaped rate: no block crosses faster.
	floorUs := float64(65536*8) / 4e9 * 1e6
	var fig []string
	for _, k := range []string{"dram->remote", "remote->dram"} {
		l := r.Links[k]
		within := "within"
		if l.RelError > fabricGoal {
			within = "outside"
		}
		fig = append(fig, fmt.Sprintf("%s %d moves, p50 measured %.1f us, predicted %.1f us (%.0f%%, %s the %.0f%% goal)",
			k, l.Count, l.P50us, l.PredictedP50us, 100*l.RelError, within, 100*fabricGoal))
		// Not timing: a replay that moved nothing, or lost copies, fails.
		if l.Count < 100 || l.Failed != 0 {
			t.Fatalf("%s: %d moves, %d failed", k, l.Count, l.Failed)
		}
		if l.RelError > fabricTolerance {
			errs = append(errs, fmt.Sprintf("%s off by %.0f%%", k, 100*l.RelError))
		}
		if l.P50us < floorUs {
			errs = append(errs, fmt.Sprintf("%s: p50 %.1f us, faster than 64 KiB at 4 Gbit/s (%.1f us): the link is not shaped", k, l.P50us, floorUs))
		}
	}
	return errs, strings.Join(fig, "; ")
}
