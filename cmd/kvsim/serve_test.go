//go:build linux && (amd64 || arm64)

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"kvsim/hw/payload"
	"kvsim/hw/rdma/rdmatest"
	"kvsim/hw/rdmastore"
	"kvsim/results"
)

// These tests drive the verbs path through the fake libibverbs
// (hw/rdma/rdmatest), which works within one process only: the server
// and the replay run here side by side, as two contexts of its device.

// syncBuffer is a bytes.Buffer safe for a command writing on one
// goroutine while the test reads on another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rdmaServer serves capacity bytes on a loopback port through the fake's
// device mlx5_0, until the test ends.
func rdmaServer(t *testing.T, capacity int64) *rdmastore.Server {
	t.Helper()
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0"})
	srv, err := rdmastore.Listen(rdmastore.ServerOptions{Addr: "127.0.0.1:0", Capacity: capacity, Hugepages: "off"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return srv
}

// replayRDMA replays testdata/remote.toml with its remote tier at
// endpoint, 8 GiB of it (2 MiB, 128 slots, real at 16 KiB blocks).
func replayRDMA(t *testing.T, endpoint string, extra ...string) (*results.Replay, string, string, int) {
	return replayRemote(t, endpoint, append([]string{"--set", `tier.remote.capacity="8GiB"`}, extra...)...)
}

// slotsWritten counts the server's 16 KiB slots that hold a block's
// bytes (a payload's second 8 bytes are its length, never 0).
func slotsWritten(mem []byte) int {
	n := 0
	for off := 0; off+16384 <= len(mem); off += 16384 {
		if binary.LittleEndian.Uint64(mem[off+8:]) != 0 {
			n++
		}
	}
	return n
}

// TestReplayRDMA: a remote tier in a kvsim serve's memory: its blocks go
// there and come back by RDMA, all verifying; each slot written holds a
// block's payload, byte for byte.
func TestReplayRDMA(t *testing.T) {
	srv := rdmaServer(t, 4<<20)
	r, out, stderr, code := replayRDMA(t, srv.Endpoint(), "--verify")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if b := r.Backends["remote"]; !strings.HasPrefix(b, "rdma mlx5_0 port 1") || !strings.Contains(b, srv.Addr()) || !strings.Contains(b, "2 queue pairs") {
		t.Errorf("backend %q", b)
	}
	for _, k := range []string{"dram->remote", "remote->dram"} {
		if l := r.Links[k]; l.Count == 0 || l.Failed != 0 || l.P50us <= 0 {
			t.Errorf("link %s: %+v", k, l)
		}
	}
	if r.Hits["remote"] == 0 || r.Verify == nil || r.Verify.Checked == 0 || r.Verify.Corrupt != 0 || r.Lost["remote"] != 0 {
		t.Errorf("hits %v, verify %+v, lost %v", r.Hits, r.Verify, r.Lost)
	}
	if !strings.Contains(out, "one-sided RDMA WRITE and READ over 2 queue pairs") {
		t.Errorf("no note on where the blocks went:\n%s", out)
	}
	// Every slot written holds a block's payload, byte for byte (a
	// payload starts with its block id and length).
	mem := srv.Bytes()
	written := slotsWritten(mem)
	if written == 0 {
		t.Fatal("nothing landed in the server's memory")
	}
	for off := 0; off+16384 <= len(mem); off += 16384 {
		n := binary.LittleEndian.Uint64(mem[off+8:])
		if n == 0 {
			continue
		}
		if id := int32(binary.LittleEndian.Uint64(mem[off:])); n > 16384 || !payload.Verify(mem[off:off+int(n)], id) {
			t.Fatalf("the slot at %d holds no block's payload (block %d, %d bytes?)", off, id, n)
		}
	}
	t.Logf("%d slots written, %d remote hits", written, r.Hits["remote"])
}

// TestReplayRDMACapacity: a server smaller than the tier is refused
// before the replay starts: exit 2, one line saying what it needs.
func TestReplayRDMACapacity(t *testing.T) {
	srv := rdmaServer(t, 1<<20)
	_, _, stderr, code := replayRDMA(t, srv.Endpoint())
	msg := strings.TrimSpace(stderr)
	if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, `tier "remote"`) || !strings.Contains(msg, "serves 1 MiB") || !strings.Contains(msg, "needs 128 (2 MiB): start kvsim serve with --capacity 2 MiB or more") {
		t.Errorf("status %d: %q", code, stderr)
	}
}

// TestReplayRDMAFallback: no RDMA device here: the tier is emulated in
// local memory, and the table, the notes and replay.json say exactly why.
func TestReplayRDMAFallback(t *testing.T) {
	rdmatest.Use(t, nil)
	r, out, stderr, code := replayRDMA(t, "rdma://127.0.0.1:1", "--verify")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	why := "sees no device (no RDMA NIC, no soft-RoCE link"
	if b := r.Backends["remote"]; !strings.HasPrefix(b, "emulated (no RDMA verbs path: ") || !strings.Contains(b, why) {
		t.Errorf("backend %q", b)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "rdma://127.0.0.1:1 is not used: no RDMA verbs path here") || !strings.Contains(out, why) {
		t.Errorf("notes %q\n%s", r.Notes, out)
	}
	if r.Verify.Corrupt != 0 || r.Hits["remote"] == 0 {
		t.Errorf("verify %+v, hits %v", r.Verify, r.Hits)
	}
	// No library at all: the same, with the library's line.
	t.Setenv("KVSIM_IBVERBS", "/nonexistent/libibverbs.so.1")
	r, _, stderr, code = replayRDMA(t, "rdma://127.0.0.1:1")
	if code != 0 || !strings.Contains(r.Backends["remote"], "cannot load /nonexistent/libibverbs.so.1") {
		t.Errorf("status %d, backend %q: %s", code, r.Backends["remote"], stderr)
	}
}

// TestReplayRDMADownAtStart: nothing listening at the endpoint the user
// named is bad input: exit 2, one line naming the tier and the endpoint.
func TestReplayRDMADownAtStart(t *testing.T) {
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "rdma://" + l.Addr().String()
	l.Close()
	_, _, stderr, code := replayRDMA(t, endpoint)
	msg := strings.TrimSpace(stderr)
	if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, `tier "remote"`) || !strings.Contains(msg, endpoint+" does not answer") {
		t.Errorf("status %d, stderr %q", code, stderr)
	}
}

// TestReplayRDMAServerGone: a server stopped mid-replay loses what it
// held: the moves fail, the copies count as lost (exit 3, 0 with
// --allow-loss), none is served or counted corrupt, and the replay goes
// on to the end.
func TestReplayRDMAServerGone(t *testing.T) {
	for _, allow := range []bool{false, true} {
		srv := rdmaServer(t, 4<<20)
		mem := srv.Bytes()
		stopped := make(chan bool)
		go func() {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if slotsWritten(mem) >= 20 {
					srv.Close() // mem is unmapped: not read again
					stopped <- true
					return
				}
			}
			stopped <- false
		}()
		extra := []string{"--verify"}
		want := 3
		if allow {
			extra, want = append(extra, "--allow-loss"), 0
		}
		r, out, stderr, code := replayRDMA(t, srv.Endpoint(), extra...)
		if !<-stopped {
			t.Fatal("the replay never wrote 20 slots")
		}
		if code != want {
			t.Fatalf("--allow-loss %v: status %d, want %d: %s", allow, code, want, stderr)
		}
		if r.Requests != 600 || r.Lost["remote"] == 0 || r.Verify.Corrupt != 0 {
			t.Errorf("requests %d, lost %v, verify %+v", r.Requests, r.Lost, r.Verify)
		}
		if !strings.Contains(out, "LOST copies") || !strings.Contains(strings.Join(r.Errors, "\n"), "rdma store") {
			t.Errorf("the loss is not reported:\n%s\nerrors %q", out, r.Errors)
		}
	}
}

// TestServeCommand: kvsim serve prints one line saying what it serves,
// takes a replay's queue pairs, and on SIGINT (its context) closes
// everything and exits 0.
func TestServeCommand(t *testing.T) {
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0"})
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--rdma", "127.0.0.1:0", "--capacity", "4MiB", "--hugepages", "off"}, &out, &errb)
	}()
	var endpoint string
	re := regexp.MustCompile(`at (rdma://127\.0\.0\.1:\d+); stop with Ctrl-C\n`)
	for deadline := time.Now().Add(10 * time.Second); endpoint == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			endpoint = m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v: %s", err, errb.String())
		default:
		}
	}
	if endpoint == "" {
		cancel()
		t.Fatalf("no serving line: %q", out.String())
	}
	if !strings.HasPrefix(out.String(), "kvsim serve: serving 4 MiB of DRAM (memfd") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("serving line %q", out.String())
	}
	r, _, stderr, code := replayRDMA(t, endpoint, "--verify")
	if code != 0 || r.Verify.Corrupt != 0 || r.Hits["remote"] == 0 {
		t.Errorf("replay: status %d: %s", code, stderr)
	}
	cancel()
	select {
	case err := <-done:
		if code := exitCode(err, &errb); code != 0 || !strings.Contains(out.String(), "kvsim serve: stopped after 2 queue pairs") {
			t.Errorf("status %d: %q %q", code, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeBadInput: bad flags and no device are one line, exit 2.
func TestServeBadInput(t *testing.T) {
	rdmatest.Use(t, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--capacity", "1GiB"}, "--rdma HOST:PORT is required"},
		{[]string{"--rdma", "127.0.0.1:0"}, "--capacity SIZE is required"},
		{[]string{"--rdma", "127.0.0.1:0", "--capacity", "lots"}, "serve: --capacity: bad size"},
		{[]string{"--rdma", "127.0.0.1:0", "--capacity", "0"}, "must be positive"},
		{[]string{"--rdma", "nohostport", "--capacity", "1MiB"}, "want HOST:PORT"},
		{[]string{"--rdma", "127.0.0.1:0", "--capacity", "1MiB", "--gid-index", "-1"}, "want 0-255"},
		{[]string{"--rdma", "127.0.0.1:0", "--capacity", "1MiB", "--hugepages", "maybe"}, "want off, try or require"},
		{[]string{"--rdma", "127.0.0.1:0", "--capacity", "1MiB", "extra"}, `unexpected argument "extra"`},
		{[]string{"--rdma", "127.0.0.1:0", "--capacity", "1MiB", "--bogus"}, "flag provided but not defined"},
		{[]string{"--rdma", "127.0.0.1:0", "--capacity", "1MiB"}, "sees no device (no RDMA NIC, no soft-RoCE link"},
	} {
		out, stderr, code := runKvsim(append([]string{"serve"}, c.args...)...)
		msg := strings.TrimSpace(stderr)
		if code != 2 || out != "" || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
			t.Errorf("%v: status %d, stdout %q, stderr %q, want %q", c.args, code, out, stderr, c.want)
		}
	}
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0"})
	if _, stderr, code := runKvsim("serve", "--rdma", "127.0.0.1:0", "--capacity", "1MiB", "--device", "mlx5_9"); code != 2 || !strings.Contains(stderr, `no device named "mlx5_9"`) {
		t.Errorf("unknown device: status %d, %q", code, stderr)
	}
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0", "FAKE_IBV_MEMLOCK": "4096"})
	if _, stderr, code := runKvsim("serve", "--rdma", "127.0.0.1:0", "--capacity", "1MiB", "--hugepages", "off"); code != 2 || !strings.Contains(stderr, "ulimit -l unlimited") {
		t.Errorf("memlock: status %d, %q", code, stderr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0"})
	if _, stderr, code := runKvsim("serve", "--rdma", l.Addr().String(), "--capacity", "1MiB", "--hugepages", "off"); code != 2 || !strings.Contains(stderr, "address already in use") {
		t.Errorf("address in use: status %d, %q", code, stderr)
	}
}

// TestCalibrateRDMA: kvsim calibrate --remote rdma://... measures moves
// into and out of a kvsim serve's memory (through the fake).
func TestCalibrateRDMA(t *testing.T) {
	srv := rdmaServer(t, 1<<20)
	stdout, stderr, code := runKvsim("calibrate", "--dir", replayDir(t), "--count", "16", "--block-bytes", "16384", "--remote", srv.Endpoint())
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, want := range []string{"remote: " + srv.Endpoint() + " (rdma mlx5_0 port 1", "dram->remote", "remote->dram"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if n := slotsWritten(srv.Bytes()); n == 0 {
		t.Error("nothing was written into the server's memory")
	}
}
