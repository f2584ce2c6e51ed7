package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"kvsim/hw/remote/remotetest"
	"kvsim/scenario"
)

// TestCalibrateRemote: --remote measures the moves between memory and a
// Redis server into the profile's remote_dram links, which a replay over
// that server then predicts with.
func TestCalibrateRemote(t *testing.T) {
	srv := remotetest.Start(t)
	dir := replayDir(t)
	prof := filepath.Join(dir, "hw.toml")
	stdout, stderr, code := runKvsim("calibrate", "--dir", dir, "--out", prof, "--count", "16", "--block-bytes", "16384", "--remote", srv.Endpoint())
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, want := range []string{"remote: " + srv.Endpoint() + " (redis ", "dram->remote", "remote->dram", "hbm->remote", "remote->pinned"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if n := srv.Keys(t); n != 0 {
		t.Errorf("calibrate left %d keys on the server", n)
	}
	p, err := scenario.LoadProfile(prof)
	if err != nil {
		t.Fatal(err)
	}
	var got, pinned *scenario.ProfileLink
	for i, l := range p.Links {
		switch {
		case l.From == "dram" && l.To == "remote_dram":
			got = &p.Links[i]
		case l.From == "pinned" && l.To == "dram":
			pinned = &p.Links[i]
		}
	}
	if got == nil || pinned == nil {
		t.Fatalf("profile lacks dram-remote_dram or pinned-dram: %+v", p.Links)
	}
	// Measured over the server: it ran the moves (each an MSET), and the
	// link has figures of its own, not the pinned store's. Which is faster
	// is not asserted: timings on a shared machine are not.
	if n := commandCalls(t, srv, "mset"); n < 16 {
		t.Errorf("the server ran %d MSETs for a calibration of 16 moves each way", n)
	}
	if got.Latency <= 0 || got.Bandwidth <= 0 || (got.Latency == pinned.Latency && got.Bandwidth == pinned.Bandwidth) {
		t.Errorf("dram->remote %+v: not measured over the server (dram->pinned %+v)", got, pinned)
	}
	r, _, stderr, code := replayRemote(t, srv.Endpoint(), "--profile", prof)
	if code != 0 {
		t.Fatalf("replay --profile: status %d: %s", code, stderr)
	}
	for _, k := range []string{"dram->remote", "remote->dram"} {
		if l := r.Links[k]; l.Count == 0 || l.PredictedP50us <= 0 {
			t.Errorf("link %s: %+v", k, l)
		}
	}
}

// TestCalibrateRemoteBad: a malformed endpoint, or a server that does not
// answer, is bad input: exit 2, one line, before any measuring.
func TestCalibrateRemoteBad(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "redis://" + l.Addr().String()
	l.Close()
	for _, c := range []struct{ endpoint, want string }{
		{"http://127.0.0.1:1", "calibrate: --remote: "},
		{"redis://127.0.0.1", "no port"},
		{down, fmt.Sprintf("%s does not answer", down)},
		// No verbs path here (or, where there is one, no server): either
		// way nothing remote is measured under the remote's name.
		{"rdma://" + l.Addr().String(), "rdma://" + l.Addr().String()},
	} {
		_, stderr, code := runKvsim("calibrate", "--dir", replayDir(t), "--count", "8", "--remote", c.endpoint)
		if msg := strings.TrimSpace(stderr); code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
			t.Errorf("--remote %s: status %d, stderr %q; want 2 and %q", c.endpoint, code, stderr, c.want)
		}
	}
}

// commandCalls is how many times srv ran command (INFO commandstats).
func commandCalls(t *testing.T, srv *remotetest.Server, command string) int {
	t.Helper()
	info, _ := srv.Do(t, "INFO", "commandstats").(string)
	for l := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_"+command+":calls="); ok {
			n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
			return n
		}
	}
	return 0
}
