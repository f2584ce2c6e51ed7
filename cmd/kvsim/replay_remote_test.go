package main

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"kvsim/hw/remote/remotetest"
	"kvsim/internal/testenv"
	"kvsim/results"
)

// replayRemote replays testdata/remote.toml (HBM, DRAM, a remote_dram tier
// at endpoint) and returns its report (nil if it wrote none) and output.
func replayRemote(t *testing.T, endpoint string, extra ...string) (*results.Replay, string, string, int) {
	t.Helper()
	dir := replayDir(t)
	args := append([]string{"replay", "--real", "--mirror", "--scenario", "testdata/remote.toml", "--set", fmt.Sprintf("tier.remote.endpoint=%q", endpoint),
		"--limit", "600", "--block-bytes", "16384", "--dir", dir}, extra...)
	stdout, stderr, code := runKvsim(append(args, synthetic)...)
	var r *results.Replay
	if code == 0 || code == 3 {
		r = readReplay(t, filepath.Join(dir, "replay.json"))
	}
	return r, stdout, stderr, code
}

// TestReplayRemoteRoundTrip: the remote tier's blocks go to the server
// and come back, every one verifying; the figures of its links are
// measured and predicted; the run's keys are gone from the server after.
func TestReplayRemoteRoundTrip(t *testing.T) {
	srv := remotetest.Start(t)
	r, out, stderr, code := replayRemote(t, srv.Endpoint(), "--verify")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if b := r.Backends["remote"]; !strings.HasPrefix(b, "redis ") || !strings.Contains(b, srv.Addr) {
		t.Errorf("backend %q", b)
	}
	for _, k := range []string{"dram->remote", "remote->dram"} {
		l := r.Links[k]
		if l.Count == 0 || l.Failed != 0 || l.P50us <= 0 || l.PredictedP50us <= 0 {
			t.Errorf("link %s: %+v", k, l)
		}
	}
	if r.Hits["remote"] == 0 {
		t.Errorf("no hits in the remote tier: %v", r.Hits)
	}
	if r.Verify == nil || r.Verify.Checked == 0 || r.Verify.Corrupt != 0 || r.Lost["remote"] != 0 {
		t.Errorf("verify %+v, lost %v", r.Verify, r.Lost)
	}
	if !strings.Contains(out, "kvsim:{") || !strings.Contains(out, ":kv_bytes") {
		t.Errorf("the output does not name the keys:\n%s", out)
	}
	if n := srv.Keys(t); n != 0 {
		t.Errorf("%d keys left on the server", n)
	}
}

// flushing runs FLUSHALL on srv every few ms until stop is called.
func flushing(t *testing.T, srv *remotetest.Server) (stop func() int) {
	c := srv.Client()
	done := make(chan struct{})
	var wg sync.WaitGroup
	n := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if c.FlushAll(t.Context()).Err() == nil {
				n++
			}
		}
	}()
	return func() int { close(done); wg.Wait(); c.Close(); return n }
}

// TestReplayRemoteFlushed: a store flushed behind kvsim's back loses the
// copies: the core forgets them, they count as lost (exit 3, or 0 with
// --allow-loss) and none is served: --verify finds nothing corrupt.
func TestReplayRemoteFlushed(t *testing.T) {
	srv := remotetest.Start(t)
	for _, allow := range []bool{false, true} {
		extra := []string{"--verify"}
		if allow {
			extra = append(extra, "--allow-loss")
		}
		stop := flushing(t, srv)
		r, out, stderr, code := replayRemote(t, srv.Endpoint(), extra...)
		flushes := stop()
		want := 3
		if allow {
			want = 0
		}
		if code != want {
			t.Fatalf("--allow-loss %v: status %d, want %d: %s", allow, code, want, stderr)
		}
		if flushes == 0 || r.Lost["remote"] == 0 {
			t.Fatalf("%d flushes, lost %v", flushes, r.Lost)
		}
		if r.Verify == nil || r.Verify.Corrupt != 0 || r.Verify.Checked == 0 {
			t.Errorf("verify %+v: a flushed copy was served or counted corrupt", r.Verify)
		}
		if !strings.Contains(out, "LOST copies") || !strings.Contains(strings.Join(r.Errors, "\n"), "no longer holds it") {
			t.Errorf("the loss is not reported:\n%s\nerrors %q", out, r.Errors)
		}
	}
}

// TestReplayRemoteEvicting: a server whose maxmemory evicts the tier's
// keys: the same, found at a read or at the end-of-replay check.
func TestReplayRemoteEvicting(t *testing.T) {
	srv := remotetest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru")
	r, _, stderr, code := replayRemote(t, srv.Endpoint(), "--verify", "--allow-loss")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if r.Lost["remote"] == 0 || r.Verify.Corrupt != 0 {
		t.Errorf("lost %v, verify %+v", r.Lost, r.Verify)
	}
}

// TestReplayRemoteDownAtStart: nothing listening is bad input, exit 2,
// one line naming the tier and the endpoint.
func TestReplayRemoteDownAtStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "redis://" + l.Addr().String()
	l.Close()
	_, _, stderr, code := replayRemote(t, endpoint)
	msg := strings.TrimSpace(stderr)
	if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, `tier "remote"`) || !strings.Contains(msg, endpoint) || !strings.Contains(msg, "does not answer") {
		t.Errorf("status %d, stderr %q", code, stderr)
	}
}

// TestReplayRemoteDownMidRun: a server that dies mid-replay loses what it
// held and refuses what comes after: lost copies, exit 3, and the replay
// carries on (recomputing) to the end.
func TestReplayRemoteDownMidRun(t *testing.T) {
	srv := remotetest.Start(t)
	c := srv.Client()
	defer c.Close()
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for deadline := testenv.Deadline(t); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if n, err := c.DBSize(t.Context()).Result(); err == nil && n >= 40 {
				srv.Stop()
				return
			}
		}
	}()
	r, out, stderr, code := replayRemote(t, srv.Endpoint(), "--verify")
	<-killed
	if code != 3 {
		t.Fatalf("status %d, want 3: %s", code, stderr)
	}
	if r.Requests != 600 || r.Lost["remote"] == 0 || r.Verify.Corrupt != 0 {
		t.Errorf("requests %d, lost %v, verify %+v", r.Requests, r.Lost, r.Verify)
	}
	if !strings.Contains(out, "LOST copies") || !strings.Contains(strings.Join(r.Errors, "\n"), "remote store") {
		t.Errorf("the loss is not reported:\n%s\nerrors %q", out, r.Errors)
	}
}

// TestReplayRemoteStalledAtEnd: a server that stalls (SIGSTOP) after the
// last request keeps the run's keys. The replay still ends (its end-of-run
// check and cleanup are bounded), says in replay.json and on stderr how
// many keys it left, under which pattern, on which server, and the command
// that removes them, and no note claims they were deleted. The command,
// run once the server is back, removes them.
func TestReplayRemoteStalledAtEnd(t *testing.T) {
	srv := remotetest.Start(t)
	replayBeforeEnd = func() { srv.Signal(t, syscall.SIGSTOP) }
	defer func() { replayBeforeEnd = nil }()
	t.Cleanup(func() { srv.Signal(t, syscall.SIGCONT) })
	r, out, stderr, code := replayRemote(t, srv.Endpoint(), "--allow-loss")
	srv.Signal(t, syscall.SIGCONT)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if len(r.LeftOnServer) != 1 {
		t.Fatalf("left on server: %+v\n%s", r.LeftOnServer, out)
	}
	l := r.LeftOnServer[0]
	if l.Tier != "remote" || l.Server != srv.Addr || l.Keys == 0 || !strings.HasPrefix(l.Pattern, "kvsim:{") || !strings.Contains(l.Remove, l.Pattern) {
		t.Fatalf("left %+v", l)
	}
	if !strings.Contains(stderr, "remove them with: "+l.Remove) || !strings.Contains(stderr, l.Pattern) || !strings.Contains(stderr, srv.Addr) {
		t.Errorf("stderr does not say what was left: %q", stderr)
	}
	if strings.Contains(out, "deleted") || slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "deleted") }) {
		t.Errorf("a note claims the keys were deleted:\n%s", out)
	}
	if n := srv.Keys(t); n == 0 || n > int64(l.Keys) {
		t.Errorf("%d keys on the server, %d reported left", n, l.Keys)
	}
	if _, err := exec.LookPath("redis-cli"); err == nil {
		if b, err := exec.Command("sh", "-c", l.Remove).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", l.Remove, err, b)
		}
		if n := srv.Keys(t); n != 0 {
			t.Errorf("%d keys left after %s", n, l.Remove)
		}
	}
}

// TestReplayRemoteTooSmall: a server whose maxmemory cannot hold the tier
// and which refuses writes when full is bad input, exit 2, one line naming
// the tier, the endpoint and both sizes, before anything is written.
func TestReplayRemoteTooSmall(t *testing.T) {
	srv := remotetest.Start(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	_, _, stderr, code := replayRemote(t, srv.Endpoint())
	msg := strings.TrimSpace(stderr)
	if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, `tier "remote"`) || !strings.Contains(msg, srv.Endpoint()) ||
		!strings.Contains(msg, "maxmemory 4 MiB") || !strings.Contains(msg, "noeviction") {
		t.Errorf("status %d, stderr %q", code, stderr)
	}
	if n := srv.Keys(t); n != 0 {
		t.Errorf("%d keys written", n)
	}
}
