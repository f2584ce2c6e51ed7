package remote_test

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"kvsim/hw/payload"
	"kvsim/hw/remote"
	"kvsim/hw/remote/remotetest"
	"kvsim/hw/store"
)

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct{ in, addr, err string }{
		{"redis://127.0.0.1:6379", "127.0.0.1:6379", ""},
		{"valkey://cache.example:7000/3", "cache.example:7000", ""},
		{"redis://[::1]:6379", "[::1]:6379", ""},
		{"http://h:1", "", `scheme "http"`},
		{"redis://h", "", "no port"},
		{"redis://h:0", "", "no port"},
		{"redis://h:70000", "", "no port"},
		{"redis://:6379", "", "no host"},
		{"redis:h:1", "", "no host"},
		{"redis://h:1/x", "", "database number"},
		{"redis://h:1?db=2", "", "no user, query"},
		{"redis://u:p@h:1", "", "no user, query"},
		{"h:1", "", "scheme"},
	} {
		addr, _, err := remote.ParseEndpoint(c.in)
		if c.err == "" && (err != nil || addr != c.addr) {
			t.Errorf("%q: %q, %v; want %q", c.in, addr, err, c.addr)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: error %v, want one saying %q", c.in, err, c.err)
		}
	}
}

func open(t *testing.T, srv *remotetest.Server) *remote.Store {
	t.Helper()
	s, err := remote.Open(remote.Options{Endpoint: srv.Endpoint(), Tier: "remote", Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s *remote.Store, b int32, n int) {
	t.Helper()
	buf := make([]byte, n)
	payload.Fill(buf, b)
	if err := s.Put(b, buf); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	srv := remotetest.Start(t)
	s := open(t, srv)
	if !strings.HasPrefix(s.Backend(), "redis ") {
		t.Errorf("backend %q", s.Backend())
	}
	sizes := []int{16, 4096, 64 << 10, 1 << 20}
	for i, n := range sizes {
		put(t, s, int32(i), n)
	}
	for i, n := range sizes {
		dst := make([]byte, 1<<20)
		got, err := s.Get(int32(i), dst)
		if err != nil || got != n || !payload.Verify(dst[:got], int32(i)) {
			t.Fatalf("block %d: %d bytes, %v", i, got, err)
		}
	}
	if _, err := s.Get(99, make([]byte, 16)); !errors.Is(err, store.ErrNotStored) {
		t.Errorf("absent block: %v", err)
	}
	// A block larger than the buffer is refused, not cut.
	if _, err := s.Get(3, make([]byte, 4096)); err == nil {
		t.Error("1 MiB block into a 4 KiB buffer: no error")
	}
	if s.Has(3) {
		t.Error("block 3 still held after a failed read")
	}
	if got := srv.Keys(t); got != 8 { // two keys a block; deletes are queued
		t.Errorf("server holds %d keys, want 8", got)
	}
	s.Delete(0)
	if s.Has(0) {
		t.Error("deleted block still held")
	}
	put(t, s, 1, 64<<10) // sends the queued deletes (0, 3) with it
	if got := srv.Keys(t); got != 4 {
		t.Errorf("after a delete: %d keys, want 4", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := srv.Keys(t); got != 0 {
		t.Errorf("after Close: %d keys left, want 0", got)
	}
}

// Bytes changed on the server are never served.
func TestCorruptNotServed(t *testing.T) {
	srv := remotetest.Start(t)
	s := open(t, srv)
	put(t, s, 7, 64<<10)
	put(t, s, 8, 64<<10)
	other := make([]byte, 64<<10)
	payload.Fill(other, 9)
	srv.Do(t, "SET", s.Key(7, "kv_bytes"), other)          // right length, wrong bytes
	srv.Do(t, "SET", s.Key(8, "kv_bytes"), other[:60<<10]) // wrong length
	for _, b := range []int32{7, 8} {
		if _, err := s.Get(b, make([]byte, 64<<10)); err == nil {
			t.Errorf("block %d: altered bytes served", b)
		}
		if s.Has(b) {
			t.Errorf("block %d: still held after a failed check", b)
		}
	}
}

// A flushed store loses the copies: Get says so, Flush finds the rest.
func TestFlushedKeysAreGone(t *testing.T) {
	srv := remotetest.Start(t)
	s := open(t, srv)
	for b := int32(0); b < 10; b++ {
		put(t, s, b, 4096)
	}
	srv.Do(t, "FLUSHALL")
	if _, err := s.Get(3, make([]byte, 4096)); !errors.Is(err, remote.ErrGone) {
		t.Errorf("Get after FLUSHALL: %v, want ErrGone", err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	ev := s.Lost()
	slices.Sort(ev)
	if want := []int32{0, 1, 2, 4, 5, 6, 7, 8, 9}; !slices.Equal(ev, want) {
		t.Errorf("Lost %v, want %v", ev, want)
	}
	if s.Len() != 0 {
		t.Errorf("%d blocks still held", s.Len())
	}
}

// maxmemory evicting keys behind the store's back: what is left is right,
// what is gone is reported.
func TestMaxmemoryEviction(t *testing.T) {
	srv := remotetest.Start(t, "--maxmemory", "4mb", "--maxmemory-policy", "allkeys-random")
	s := open(t, srv)
	const n = 200 // 12.5 MiB of 64 KiB blocks
	for b := int32(0); b < n; b++ {
		put(t, s, b, 64<<10)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	gone := len(s.Lost())
	if gone == 0 {
		t.Fatal("maxmemory 4mb kept 12 MiB")
	}
	ok := 0
	dst := make([]byte, 64<<10)
	for b := int32(0); b < n; b++ {
		if !s.Has(b) {
			continue
		}
		got, err := s.Get(b, dst)
		if err == nil {
			if !payload.Verify(dst[:got], b) {
				t.Fatalf("block %d served wrong bytes", b)
			}
			ok++
		}
	}
	if ok+gone > n || ok == 0 {
		t.Errorf("%d served, %d reported gone, of %d", ok, gone, n)
	}
}

func TestServerDown(t *testing.T) {
	srv := remotetest.Start(t)
	s := open(t, srv)
	put(t, s, 1, 4096)
	srv.Stop()
	if _, err := s.Get(1, make([]byte, 4096)); err == nil {
		t.Error("Get from a stopped server: no error")
	}
	// Taken as down: the next command fails without dialling again.
	buf := make([]byte, 4096)
	if err := s.Put(2, buf); err == nil || s.Has(2) || !strings.Contains(err.Error(), "not retried") {
		t.Errorf("Put to a stopped server: %v, held %v", err, s.Has(2))
	}
	if _, err := remote.Open(remote.Options{Endpoint: srv.Endpoint()}); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("Open of a stopped server: %v", err)
	}
}

// TestStalledAtClose: a server that stalls (SIGSTOP) before the end keeps
// every key the store wrote. Close gives up within CleanupTimeout and
// Left says how many keys at most, under which pattern, on which server, and the
// command that removes them: run once the server is back, it deletes
// exactly those, and a key of someone else's stays.
func TestStalledAtClose(t *testing.T) {
	srv := remotetest.Start(t)
	srv.Do(t, "SET", "someone:else", "v")
	s, err := remote.Open(remote.Options{Endpoint: srv.Endpoint(), Tier: "remote", IOTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for b := range int32(50) {
		put(t, s, b, 1000)
	}
	for b := range int32(5) {
		s.Delete(b) // queued, never sent
	}
	srv.Signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { srv.Signal(t, syscall.SIGCONT) })
	if err := s.Flush(); err == nil {
		t.Fatal("Flush on a stalled server: no error")
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close on a stalled server: no error")
	}
	l := s.Left()
	if l == nil || l.Keys != 100 || l.Server != srv.Addr || l.Pattern != "kvsim:{"+s.Run()+":remote:*" ||
		!strings.Contains(l.Remove, l.Pattern) || !strings.Contains(l.Remove, "redis-cli -h 127.0.0.1") {
		t.Fatalf("left %+v", l)
	}
	// Resumed, the server may yet run the DEL it had received: "up to".
	srv.Signal(t, syscall.SIGCONT)
	if n := srv.Keys(t); n > 101 || n < 1 {
		t.Fatalf("%d keys on the server, want at most the 100 left and someone else's", n)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return
	}
	if out, err := exec.Command("sh", "-c", l.Remove).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", l.Remove, err, out)
	}
	if n := srv.Keys(t); n != 1 || srv.Do(t, "GET", "someone:else") != "v" {
		t.Fatalf("after the removal command: %d keys", n)
	}
}

// TestMaxmemory: a server whose maxmemory leaves less room than the tier
// needs is refused when it would refuse writes (noeviction), naming both
// sizes; one that evicts instead is taken, with a note saying so; one
// with room, or no maxmemory, gets neither.
func TestMaxmemory(t *testing.T) {
	for _, c := range []struct {
		policy   string
		capacity int64
		err      string
		note     bool
	}{
		{"noeviction", 16 << 20, "refuses writes when full", false},
		{"allkeys-lru", 16 << 20, "", true},
		{"noeviction", 64 << 10, "", false},
	} {
		srv := remotetest.Start(t, "--maxmemory", "4mb", "--maxmemory-policy", c.policy)
		s, err := remote.Open(remote.Options{Endpoint: srv.Endpoint(), Tier: "remote", Capacity: c.capacity})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), srv.Endpoint()) || !strings.Contains(err.Error(), "16 MiB") || !strings.Contains(err.Error(), "maxmemory 4 MiB") {
				t.Errorf("%s, %d bytes: %v", c.policy, c.capacity, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s, %d bytes: %v", c.policy, c.capacity, err)
		}
		if n := s.Note(); (n != "") != c.note || (c.note && !strings.Contains(n, "will evict")) {
			t.Errorf("%s, %d bytes: note %q", c.policy, c.capacity, n)
		}
		s.Close()
	}
	srv := remotetest.Start(t)
	s, err := remote.Open(remote.Options{Endpoint: srv.Endpoint(), Tier: "remote", Capacity: 1 << 40})
	if err != nil || s.Note() != "" {
		t.Fatalf("no maxmemory: %v, note %q", err, s.Note())
	}
	s.Close()
}
