package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kvsim/internal/testenv"
	"kvsim/results"
)

// The link model's accuracy over the fabric is measured, not asserted: on
// a machine shared with other work a p50 drifts by 30% and more between
// runs seconds apart (one fresh clone saw dram->remote 59-77% off on every
// try). BenchmarkFabricShapedRemote prints each try's figures and their
// spread against fabricGoal; TestFabricShapedRemote checks only that the
// fabric, the calibration and the replay work.
const fabricGoal = 0.15

// fabricUp brings up scripts/fabric.sh's fabric at 4 Gbit/s (two network
// namespaces, a tbf-shaped veth pair, redis-server in the far one) under
// names and addresses of its own, so it never touches a fabric someone
// brought up by hand, and takes it down when tb ends, failed or not. kvsim
// runs this test binary (TestMain) in the near namespace.
func fabricUp(tb testing.TB) (kvsim func(...string) (string, int), endpoint, prefix string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(tb, "needs root (network namespaces, tc)")
	}
	for _, bin := range []string{"ip", "tc", "redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(tb, "needs %s (Debian: iproute2, redis-server)", bin)
		}
	}
	script, err := filepath.Abs("../../scripts/fabric.sh")
	if err != nil {
		tb.Fatal(err)
	}
	prefix = fmt.Sprintf("kvt%04x", rand.IntN(1<<16))
	subnet := fmt.Sprintf("10.233.%d", 1+rand.IntN(254))
	env := append(os.Environ(), "KVSIM_FABRIC_PREFIX="+prefix, "KVSIM_FABRIC_NET="+subnet, "KVSIM_FABRIC_STATE="+filepath.Join(tb.TempDir(), "fabric"))
	fabric := func(args ...string) (string, error) {
		cmd := exec.Command(script, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	tb.Cleanup(func() {
		if out, err := fabric("down"); err != nil {
			tb.Errorf("fabric.sh down: %v\n%s", err, out)
		}
		if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), prefix) {
			tb.Errorf("namespaces left after down:\n%s", out)
		}
	})
	if out, err := fabric("up", "4gbit"); err != nil {
		tb.Fatalf("fabric.sh up: %v\n%s", err, out)
	}
	kvsim = func(args ...string) (string, int) {
		cmd := exec.Command("ip", "netns", "exec", prefix+"-near", os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "KVSIM_TEST_CHILD_ARGS="+strings.Join(args, "\x1f"))
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			tb.Fatal(err)
		}
		return string(out), code
	}
	return kvsim, "redis://" + subnet + ".2:6379", prefix
}

// fabricLinks are the remote tier's links, as the replay reports them.
var fabricLinks = []string{"dram->remote", "remote->dram"}

// fabricTry calibrates the remote link, replays over it and returns the
// replay's report; it fails tb if either command fails or a remote link
// moved nothing, lost copies or lacks a figure. Nothing is timed.
func fabricTry(tb testing.TB, kvsim func(...string) (string, int), endpoint string) *results.Replay {
	tb.Helper()
	dir, err := os.MkdirTemp(".", ".replay-test-") // not tmpfs
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	prof := filepath.Join(dir, "profile.toml")
	if out, code := kvsim("calibrate", "--remote", endpoint, "--dir", filepath.Join(dir, "cal"), "--out", prof, "--count", "256", "--block-bytes", "65536"); code != 0 {
		tb.Fatalf("calibrate: status %d\n%s", code, out)
	}
	rdir := filepath.Join(dir, "replay")
	if out, code := kvsim("replay", "--real", "--mirror", "--scenario", "testdata/remote.toml", "--set", fmt.Sprintf("tier.remote.endpoint=%q", endpoint),
		"--set", "link.dram-remote.lanes=1", "--profile", prof, "--limit", "600", "--block-bytes", "65536", "--dir", rdir, synthetic); code != 0 {
		tb.Fatalf("replay: status %d\n%s", code, out)
	}
	r, err := results.ReadReplay(filepath.Join(rdir, "replay.json"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, k := range fabricLinks {
		l, ok := r.Links[k]
		if !ok || l.Count < 100 || l.Failed != 0 || l.Bytes <= 0 || l.P50us <= 0 || l.P99us <= 0 || l.GBps <= 0 || l.PredictedP50us <= 0 {
			tb.Fatalf("%s: %+v", k, l)
		}
	}
	return r
}

// TestFabricShapedRemote: the fabric comes up shaped (tbf at 4 Gbit/s on
// both ends), kvsim calibrate --remote measures the link from the near
// namespace, and a replay with a remote_dram tier across it moves blocks
// both ways, loses none, and reports measured and predicted figures for
// both remote links. How close the prediction is depends on the machine's
// load, so it is logged, not asserted (BenchmarkFabricShapedRemote
// measures it).
func TestFabricShapedRemote(t *testing.T) {
	kvsim, endpoint, prefix := fabricUp(t)
	for _, side := range []string{"near", "far"} {
		veth := prefix + side[:1]
		out, err := exec.Command("ip", "netns", "exec", prefix+"-"+side, "tc", "qdisc", "show", "dev", veth).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), "rate 4Gbit") {
			t.Fatalf("%s end %s: not shaped at 4 Gbit/s: %v\n%s", side, veth, err, out)
		}
	}
	r := fabricTry(t, kvsim, endpoint)
	t.Log(fabricFigures(r))
}

// BenchmarkFabricShapedRemote measures the remote link model's accuracy
// over the fabric: each iteration calibrates and replays, and the figures
// of every try and their spread are printed against the 15% goal (root;
// README "A remote tier over a shaped link"):
//
//	go test ./cmd/kvsim -run '^$' -bench FabricShapedRemote -benchtime 5x
func BenchmarkFabricShapedRemote(b *testing.B) {
	kvsim, endpoint, _ := fabricUp(b)
	errs := map[string][]float64{}
	for i := range b.N {
		r := fabricTry(b, kvsim, endpoint)
		b.Logf("try %d: %s", i+1, fabricFigures(r))
		for _, k := range fabricLinks {
			errs[k] = append(errs[k], r.Links[k].RelError)
		}
	}
	for _, k := range fabricLinks {
		e := slices.Sorted(slices.Values(errs[k]))
		met := 0
		for _, x := range e {
			if x <= fabricGoal {
				met++
			}
		}
		b.Logf("%s over %d tries: rel error min %.0f%%, median %.0f%%, max %.0f%%; within the %.0f%% goal in %d",
			k, len(e), 100*e[0], 100*e[len(e)/2], 100*e[len(e)-1], 100*fabricGoal, met)
		b.ReportMetric(100*e[len(e)/2], k+"-median-err-%")
	}
}

// fabricFigures are the remote links' measured and predicted p50s.
func fabricFigures(r *results.Replay) string {
	var fig []string
	// The bytes of a full block at the shaped rate: a p50 below is a link
	// that is not shaped.
	floorUs := float64(65536*8) / 4e9 * 1e6
	for _, k := range fabricLinks {
		l := r.Links[k]
		fig = append(fig, fmt.Sprintf("%s %d moves, p50 measured %.1f us (a full block's bytes alone take %.1f us at 4 Gbit/s), predicted %.1f us (%.0f%% off; goal %.0f%%)",
			k, l.Count, l.P50us, floorUs, l.PredictedP50us, 100*l.RelError, 100*fabricGoal))
	}
	return strings.Join(fig, "; ")
}
