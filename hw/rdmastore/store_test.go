//go:build linux && (amd64 || arm64)

package rdmastore

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kvsim/hw/payload"
	"kvsim/hw/rdma"
	"kvsim/hw/rdma/rdmatest"
	"kvsim/hw/store"
	"kvsim/internal/testenv"
)

// The fake libibverbs works within one process: the server and the
// client here are two contexts of its device, and RDMA READ and WRITE
// are copies between their registered memory.

const slot = 8192

// serve starts a server of capacity bytes on a loopback port, with the
// fake shaped by env (its device is mlx5_0 unless env says otherwise).
func serve(t *testing.T, capacity int64, env map[string]string) *Server {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["FAKE_IBV_DEVICES"]; !ok {
		env["FAKE_IBV_DEVICES"] = "mlx5_0"
	}
	rdmatest.Use(t, env)
	s, err := Listen(ServerOptions{Addr: "127.0.0.1:0", Capacity: capacity, Hugepages: "off"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

func open(t *testing.T, s *Server, capacity int64, lanes int) *Store {
	t.Helper()
	st, err := Open(Options{Endpoint: s.Endpoint(), Tier: "remote", Lanes: lanes, SlotBytes: slot, Capacity: capacity, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestStoreRoundTrip: blocks written land byte for byte in the server's
// memory at their slot, come back through RDMA READ over both lanes, and
// a deleted block's slot is reused.
func TestStoreRoundTrip(t *testing.T) {
	srv := serve(t, 64*slot, nil)
	if s := srv.String(); !strings.Contains(s, "512 KiB of DRAM") || !strings.Contains(s, "mlx5_0 port 1") || !strings.Contains(s, srv.Endpoint()) {
		t.Errorf("server line %q", s)
	}
	st := open(t, srv, 32*slot, 2)
	if st.Slots() < 32 || st.Slots() > 64 {
		t.Errorf("%d slots", st.Slots())
	}
	buf := make([]byte, slot)
	for b := int32(0); b < 20; b++ {
		n := slot - int(b)*64
		payload.Fill(buf[:n], b)
		if err := st.Put(b, buf[:n]); err != nil {
			t.Fatal(err)
		}
	}
	// The server counts a queue pair once its side of the handshake ends,
	// which may be just after the client's.
	for deadline := testenv.Deadline(t); srv.Served() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if srv.Served() != 2 || st.Len() != 20 {
		t.Errorf("served %d queue pairs, store holds %d", srv.Served(), st.Len())
	}
	mem := srv.Bytes()
	for b := int32(0); b < 20; b++ {
		n := slot - int(b)*64
		off := st.SlotOf(b)
		if off < 0 || !payload.Verify(mem[off:off+int64(n)], b) {
			t.Fatalf("block %d is not in the server's memory at %d", b, off)
		}
		clear(buf)
		got, err := st.Get(b, buf)
		if err != nil || got != n || !payload.Verify(buf[:n], b) {
			t.Fatalf("block %d: %d bytes, %v", b, got, err)
		}
	}
	off := st.SlotOf(7)
	st.Delete(7)
	if st.Has(7) || st.SlotOf(7) != -1 {
		t.Error("deleted block still held")
	}
	if _, err := st.Get(7, buf); !errors.Is(err, store.ErrNotStored) {
		t.Errorf("get of a deleted block: %v", err)
	}
	payload.Fill(buf, 99)
	if err := st.Put(99, buf); err != nil || st.SlotOf(99) != off {
		t.Errorf("the freed slot %d not reused: %d, %v", off, st.SlotOf(99), err)
	}
	if err := st.Flush(); err != nil || len(st.Lost()) != 0 {
		t.Errorf("flush with the server up: %v", err)
	}
	if err := st.Put(100, make([]byte, slot+1)); err == nil {
		t.Error("a block larger than a slot was taken")
	}
}

// TestStoreCorrupt: a byte changed in the server's memory is caught by
// the checksum kept here: the block is not served, and the error is not
// "not stored" (the replay's --verify counts it corrupt, not lost).
func TestStoreCorrupt(t *testing.T) {
	srv := serve(t, 16*slot, nil)
	st := open(t, srv, 16*slot, 1)
	buf := make([]byte, slot)
	payload.Fill(buf, 3)
	if err := st.Put(3, buf); err != nil {
		t.Fatal(err)
	}
	srv.Bytes()[st.SlotOf(3)+100] ^= 1
	_, err := st.Get(3, buf)
	if err == nil || errors.Is(err, store.ErrNotStored) || !strings.Contains(err.Error(), "CRC32-C mismatch") {
		t.Fatalf("corrupt slot: %v", err)
	}
	if st.Has(3) {
		t.Error("a corrupt block is still held")
	}
}

// TestStoreCapacityRefused: a server smaller than the tier is refused at
// open, saying what --capacity it needs.
func TestStoreCapacityRefused(t *testing.T) {
	srv := serve(t, 10*slot, nil)
	_, err := Open(Options{Endpoint: srv.Endpoint(), Tier: "remote", SlotBytes: slot, Capacity: 11 * slot})
	if err == nil || Unavailable(err) || !strings.Contains(err.Error(), "needs 11") || !strings.Contains(err.Error(), "--capacity 88 KiB") {
		t.Fatalf("%v", err)
	}
}

// TestStoreHoldsCapacity: a store whose server holds exactly the tier's
// capacity takes a full block per slot of it, and Slots() blocks of any
// size (the replay's core holds no more there): no write refused.
func TestStoreHoldsCapacity(t *testing.T) {
	srv := serve(t, 10*slot, nil)
	s := open(t, srv, 10*slot, 1)
	if s.Slots() < 10 {
		t.Fatalf("%d slots for 10 full blocks", s.Slots())
	}
	buf := make([]byte, slot)
	for b := range int32(s.Slots()) {
		n := max(16, slot*int(b%2))
		if err := s.Put(b, buf[:n]); err != nil {
			t.Fatalf("block %d of %d bytes: %v", b, n, err)
		}
	}
}

// TestStoreUnavailable: no device, no library, a port down: Unavailable,
// with the probe's line; an unreachable server is not (it is the user's
// endpoint).
func TestStoreUnavailable(t *testing.T) {
	rdmatest.Use(t, nil)
	o := Options{Endpoint: "rdma://127.0.0.1:1", Tier: "remote", SlotBytes: slot, Capacity: slot}
	_, err := Open(o)
	if !Unavailable(err) || !strings.Contains(err.Error(), "sees no device") {
		t.Errorf("no device: %v", err)
	}
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0", "FAKE_IBV_DOWN": "mlx5_0"})
	if _, err = Open(o); !Unavailable(err) || !strings.Contains(err.Error(), "no port is ACTIVE") {
		t.Errorf("port down: %v", err)
	}
	t.Setenv("KVSIM_IBVERBS", "/nonexistent/libibverbs.so.1")
	if _, err = Open(o); !Unavailable(err) || !errors.Is(err, rdma.ErrNoLibrary) {
		t.Errorf("no library: %v", err)
	}
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0"})
	_, err = Open(o)
	if err == nil || Unavailable(err) || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("no server: %v", err)
	}
	if _, err := Listen(ServerOptions{Addr: "127.0.0.1:0", Capacity: 0}); err == nil {
		t.Error("a server of no capacity")
	}
}

// TestStoreMemlock: registration refused for the locked-memory limit is
// an error with the fix, not a fallback.
func TestStoreMemlock(t *testing.T) {
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0", "FAKE_IBV_MEMLOCK": "4096"})
	_, err := Listen(ServerOptions{Addr: "127.0.0.1:0", Capacity: 1 << 20, Hugepages: "off"})
	if !errors.Is(err, rdma.ErrMemlock) || Unavailable(err) || !strings.Contains(err.Error(), "ulimit -l") {
		t.Errorf("server: %v", err)
	}
	_, err = Open(Options{Endpoint: "rdma://127.0.0.1:1", SlotBytes: 8192, Capacity: 8192})
	if !errors.Is(err, rdma.ErrMemlock) || Unavailable(err) {
		t.Errorf("client: %v", err)
	}
}

// TestStoreServerGone: a server that stops loses every copy it held: the
// next moves fail (lost, not corrupt), Flush reports the rest as lost
// (Lost), and a server started again at the same address is taken
// anew, empty.
func TestStoreServerGone(t *testing.T) {
	srv := serve(t, 16*slot, nil)
	st := open(t, srv, 16*slot, 2)
	buf := make([]byte, slot)
	for b := int32(0); b < 6; b++ {
		payload.Fill(buf, b)
		if err := st.Put(b, buf); err != nil {
			t.Fatal(err)
		}
	}
	addr := srv.Addr()
	srv.Close()
	_, err := st.Get(0, buf)
	if !errors.Is(err, ErrGone) {
		t.Fatalf("read from a stopped server: %v", err)
	}
	if err := st.Put(10, buf); err == nil {
		t.Fatal("a write to a stopped server succeeded")
	}
	if err := st.Flush(); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("flush: %v", err)
	}
	lost := st.Lost()
	if len(lost) != 5 || st.Len() != 0 || st.Has(3) {
		t.Errorf("lost %v (want blocks 1-5), %d still held", lost, st.Len())
	}
	// The same address again, a new server: taken anew, after downFor.
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0"})
	srv2, err := Listen(ServerOptions{Addr: addr, Capacity: 16 * slot, Hugepages: "off"})
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	go srv2.Serve()
	defer srv2.Close()
	st.downUntil = time.Time{}
	payload.Fill(buf, 4)
	if err := st.Put(4, buf); err != nil {
		t.Fatalf("after the server came back: %v", err)
	}
	if n, err := st.Get(4, buf); err != nil || n != slot || !payload.Verify(buf, 4) {
		t.Errorf("read back: %d, %v", n, err)
	}
}

func TestParseEndpoint(t *testing.T) {
	e, err := ParseEndpoint("rdma://10.0.0.2:7471?device=mlx5_1&gid_index=3")
	if err != nil || e != (Endpoint{Addr: "10.0.0.2:7471", Device: "mlx5_1", GIDIndex: 3}) {
		t.Errorf("%+v %v", e, err)
	}
	if e, err := ParseEndpoint("rdma://[::1]:7471"); err != nil || e.Addr != "[::1]:7471" {
		t.Errorf("%+v %v", e, err)
	}
	for _, bad := range []string{"redis://h:1", "rdma://h", "rdma://:1", "rdma://h:0", "rdma://h:1/x", "rdma://u@h:1", "rdma://h:1?gid_index=x", "rdma://h:1?gid_index=300", "rdma://h:1?foo=1", "rdma://h:1?device=", "rdma://h:1?device=a&device=b"} {
		if _, err := ParseEndpoint(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestServerStranger: a peer that is not kvsim, and one that never
// speaks, hold up no other: a store connects meanwhile, and Close ends
// the silent one's handshake itself (closing its connection), not by the
// handshake's timeout. Which of the two ended it is what the server logs,
// so nothing here is timed.
func TestServerStranger(t *testing.T) {
	rdmatest.Use(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0"})
	var mu sync.Mutex
	var logs []string
	srv, err := Listen(ServerOptions{Addr: "127.0.0.1:0", Capacity: 4 * slot, Hugepages: "off", Logf: func(f string, a ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	silent, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	stranger, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	stranger.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	stranger.Close()
	st := open(t, srv, 4*slot, 1)
	buf := make([]byte, slot)
	payload.Fill(buf, 0)
	if err := st.Put(0, buf); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	i := slices.IndexFunc(logs, func(l string) bool { return strings.Contains(l, silent.LocalAddr().String()) })
	if i < 0 || strings.Contains(logs[i], "timeout") {
		t.Errorf("the silent peer's handshake did not end by Close: %q", logs)
	}
}

// TestStoreAllocs: a write and a read through the store allocate nothing.
func TestStoreAllocs(t *testing.T) {
	srv := serve(t, 8*slot, nil)
	st := open(t, srv, 8*slot, 2)
	buf := make([]byte, slot)
	payload.Fill(buf, 1)
	if n := testing.AllocsPerRun(50, func() {
		if err := st.Put(1, buf); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Get(1, buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 && !raceEnabled {
		t.Errorf("Put+Get allocate %.1f times", n)
	}
}

// TestStoreFlushFindsServerGone: a server that stopped while no move ran
// is found at the end-of-replay check: every copy it held is lost, none
// is left for --verify to read.
func TestStoreFlushFindsServerGone(t *testing.T) {
	srv := serve(t, 8*slot, nil)
	st := open(t, srv, 8*slot, 2)
	buf := make([]byte, slot)
	for b := int32(0); b < 3; b++ {
		payload.Fill(buf, b)
		if err := st.Put(b, buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(); err != nil || len(st.Lost()) != 0 {
		t.Fatalf("flush with the server up: %v", err)
	}
	srv.Close()
	if err := st.Flush(); err == nil {
		t.Error("flush found the stopped server standing")
	}
	if lost := st.Lost(); len(lost) != 3 || st.Len() != 0 {
		t.Errorf("lost %v, %d held", lost, st.Len())
	}
}

// TestStoreRealDevice runs the round trip on a real NIC where there is
// one with an ACTIVE port (server and client as two contexts of it, over
// loopback), and is skipped elsewhere (as here: no RDMA NIC).
func TestStoreRealDevice(t *testing.T) {
	t.Setenv("KVSIM_IBVERBS", "") // the real library
	if p := rdma.ProbeVerbs(); !p.Usable() {
		t.Skipf("no usable RDMA device here: %s", p)
	}
	srv, err := Listen(ServerOptions{Addr: "127.0.0.1:0", Capacity: 16 * slot, Hugepages: "off"})
	if errors.Is(err, rdma.ErrMemlock) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	t.Log(srv)
	st := open(t, srv, 8*slot, 2)
	buf := make([]byte, slot)
	for b := int32(0); b < 8; b++ {
		payload.Fill(buf, b)
		if err := st.Put(b, buf); err != nil {
			t.Fatal(err)
		}
	}
	for b := int32(0); b < 8; b++ {
		off := st.SlotOf(b)
		if !payload.Verify(srv.Bytes()[off:off+slot], b) {
			t.Fatalf("block %d is not in the server's memory", b)
		}
		if n, err := st.Get(b, buf); err != nil || n != slot || !payload.Verify(buf, b) {
			t.Fatalf("block %d: %d, %v", b, n, err)
		}
	}
}
