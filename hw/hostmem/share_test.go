//go:build linux

package hostmem

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kvsim/internal/testenv"
)

// startServe runs ServePool until the test ends and waits for its socket.
func startServe(t *testing.T, sock string, p *Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServePool(ctx, sock, p) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServePool: %v", err)
		}
		if _, err := os.Lstat(sock); err == nil {
			t.Errorf("socket %s left behind", sock)
		}
	})
	// Ready once it serves: a stale socket file may be there before.
	for deadline := testenv.Deadline(t); ; {
		q, err := ReceivePool(sock)
		if err == nil {
			q.Close()
			return
		}
		select {
		case err := <-done:
			t.Fatalf("ServePool ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not serving: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServePoolSocket(t *testing.T) {
	probeLeaks(t)
	p := newTestPool(t, PoolOptions{Size: 1 << 20})
	sock := filepath.Join(t.TempDir(), "pool.sock")
	old := syscall.Umask(0) // the socket must be 0600 whatever the umask
	defer syscall.Umask(old)
	// A stale socket from a dead server is replaced.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	startServe(t, sock, p)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode())
	}
	// A second server on the same path is refused.
	if err := ServePool(context.Background(), sock, p); err == nil || !strings.Contains(err.Error(), "in use by another server") {
		t.Errorf("second ServePool: %v", err)
	}
	// In-process round trip.
	q, err := ReceivePool(sock)
	if err != nil {
		t.Fatal(err)
	}
	p.Bytes()[100] = 42
	if q.Bytes()[100] != 42 || q.Size() != p.Size() || q.Backend() != p.Backend() || q.PageSize() != p.PageSize() {
		t.Errorf("received pool: size %d backend %q", q.Size(), q.Backend())
	}
	q.Close()
}

// TestSharePeerUID: a peer of another uid is refused before anything is
// sent, and the reason is logged.
func TestSharePeerUID(t *testing.T) {
	probeLeaks(t)
	p := newTestPool(t, PoolOptions{Size: 1 << 20})
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	server := fileConn(t, fds[0])
	client := fileConn(t, fds[1])
	defer client.Close()
	err = sendPool(server, p, os.Getuid()+1)
	server.Close()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("uid %d is not the pool owner's uid %d", os.Getuid(), os.Getuid()+1)) {
		t.Errorf("sendPool to another uid: %v", err)
	}
	if b, err := io.ReadAll(client); len(b) != 0 || err != nil {
		t.Errorf("refused peer received %d bytes (%v)", len(b), err)
	}
}

func fileConn(t *testing.T, fd int) *net.UnixConn {
	t.Helper()
	f := os.NewFile(uintptr(fd), "sock")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*net.UnixConn)
}

// The peer process: the test binary run again with these variables.
const (
	peerEnvSock = "KVSIM_TEST_POOL_PEER"
	peerEnvMode = "KVSIM_TEST_POOL_PEER_MODE"
)

// TestSharePeerProcess is the other process of the sharing tests; run
// normally it does nothing.
func TestSharePeerProcess(t *testing.T) {
	sock := os.Getenv(peerEnvSock)
	if sock == "" {
		return
	}
	q, err := ReceivePool(sock)
	if os.Getenv(peerEnvMode) == "refused" {
		if err == nil {
			q.Close()
			t.Fatal("received the pool as another user")
		}
		fmt.Println("peer refused:", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	mem := q.Bytes()
	for i := range 4096 {
		if mem[i] != byte(i*5+1) {
			t.Fatalf("byte %d: %d, the server wrote %d", i, mem[i], byte(i*5+1))
		}
	}
	for i := range 4096 {
		mem[4096+i] = byte(i*3 + 2)
	}
	fmt.Printf("peer ok: %s, %d bytes\n", q.Backend(), q.Size())
}

func runPeer(t *testing.T, exe, sock, mode string, cred *syscall.Credential) string {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^TestSharePeerProcess$", "-test.v")
	cmd.Env = append(os.Environ(), peerEnvSock+"="+sock, peerEnvMode+"="+mode, "KVSIM_REQUIRE_ALL=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("peer: %v\n%s", err, out)
	}
	return string(out)
}

// TestSharePoolAcrossProcesses: another process maps the pool through the
// socket; each side sees the other's writes.
func TestSharePoolAcrossProcesses(t *testing.T) {
	probeLeaks(t)
	p := newTestPool(t, PoolOptions{Size: 4 << 20, Hugepages: "try"})
	mem := p.Bytes()
	for i := range 4096 {
		mem[i] = byte(i*5 + 1)
	}
	sock := filepath.Join(t.TempDir(), "pool.sock")
	startServe(t, sock, p)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := runPeer(t, exe, sock, "", nil)
	if !strings.Contains(out, "peer ok: "+p.Backend()) {
		t.Fatalf("peer said:\n%s", out)
	}
	for i := range 4096 {
		if mem[4096+i] != byte(i*3+2) {
			t.Fatalf("byte %d: the peer's write is not visible", 4096+i)
		}
	}
}

// TestSharePoolOtherUser: a process of another user that reaches the
// socket (its mode opened up here on purpose) gets nothing.
func TestSharePoolOtherUser(t *testing.T) {
	probeRoot(t)
	probeLeaks(t)
	p := newTestPool(t, PoolOptions{Size: 1 << 20})
	// The peer runs as nobody: it needs a copy of the test binary and a
	// directory it can enter.
	dir, err := os.MkdirTemp("", "kvsim-share-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	peer := filepath.Join(dir, "peer.test")
	if err := os.WriteFile(peer, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	var logged []string
	var mu sync.Mutex
	saved := shareLogf
	shareLogf = func(format string, args ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	defer func() { shareLogf = saved }()
	sock := filepath.Join(dir, "pool.sock")
	startServe(t, sock, p)
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	out := runPeer(t, peer, sock, "refused", &syscall.Credential{Uid: 65534, Gid: 65534})
	// Each side refuses the other: the client sees a server of uid 0.
	if !strings.Contains(out, "peer refused:") || !strings.Contains(out, "runs as uid 0, not as this process's uid 65534") {
		t.Errorf("peer said:\n%s", out)
	}
	// The server logs after it has answered the peer: wait for it.
	for range 200 {
		mu.Lock()
		n := len(logged)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "uid 65534 is not the pool owner's uid 0") {
		t.Errorf("logged %q", logged)
	}
}
