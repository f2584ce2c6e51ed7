// Package remotetest starts a redis-server of a test's own on a free
// loopback port, and stops it when the test ends. Only tests import it.
package remotetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"kvsim/internal/testenv"
)

// Server is a running redis-server.
type Server struct {
	Addr string // 127.0.0.1:PORT
	cmd  *exec.Cmd
	done chan struct{}
}

// Endpoint is the server's redis:// URL.
func (s *Server) Endpoint() string { return "redis://" + s.Addr }

// Start runs redis-server (with args added to its configuration, e.g.
// "--maxmemory", "1mb") on a free loopback port, without persistence,
// and stops it at the end of the test. Without redis-server the test is
// skipped, or fails under KVSIM_REQUIRE_ALL.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Missing(t, "needs redis-server (Debian: apt-get install redis-server)")
	}
	dir := t.TempDir()
	for try := 0; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		a := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--protected-mode", "yes"}, args...)
		cmd := exec.Command(bin, a...)
		out, err := os.Create(filepath.Join(dir, "log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			out.Close()
			t.Fatalf("redis-server: %v", err)
		}
		out.Close()
		s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, done: make(chan struct{})}
		go func() { cmd.Wait(); close(s.done) }()
		if s.wait() {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
		if try == 4 {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("redis-server did not start on %s:\n%s", s.Addr, lastLines(b, 10))
		}
	}
}

// wait waits until the server answers PING, or has exited (the port was
// taken meanwhile).
func (s *Server) wait() bool {
	c := s.Client()
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		select {
		case <-s.done:
			return false
		default:
		}
		if c.Ping(context.Background()).Err() == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Client is a new client of the server (close it).
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second, Protocol: 2, DisableIdentity: true})
}

// Do runs one command on a client of its own and fails t on an error.
func (s *Server) Do(t testing.TB, args ...any) any {
	t.Helper()
	c := s.Client()
	defer c.Close()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("redis %v: %v", args, err)
	}
	return v
}

// Keys is the number of keys in database 0.
func (s *Server) Keys(t testing.TB) int64 {
	t.Helper()
	return s.Do(t, "DBSIZE").(int64)
}

// Signal sends sig to the server (syscall.SIGSTOP stalls it: it accepts
// connections and answers nothing; SIGCONT resumes it).
func (s *Server) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redis-server: %v: %v", sig, err)
	}
}

// Stop kills the server and waits for it; safe to call twice.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGCONT) // a stopped one dies only once resumed
		s.cmd.Process.Kill()
	}
	<-s.done
}

func lastLines(b []byte, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}
