// Package rdmastore is the remote DRAM tier over RDMA: a server (kvsim
// serve --rdma) that exposes a registered DRAM pool, and the client store
// a replay's remote_dram tier with endpoint rdma://HOST:PORT uses, which
// writes and reads that pool with one-sided RDMA WRITE and READ (hw/rdma).
//
// The server's CPU never sees a block: the client keeps the index (block
// -> slot), each block's length and CRC32-C, and checks every block it
// reads back, so a corrupt slot is reported, never served. The server
// serves one replay at a time: two replays sharing it would overwrite
// each other's slots (their checksums would catch it).
package rdmastore

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"kvsim/hw/hostmem"
	"kvsim/hw/rdma"
)

// ServerOptions configure a server.
type ServerOptions struct {
	Addr     string // host:port of the TCP control listener
	Capacity int64  // bytes of DRAM to serve
	Device   string // "" = the first device with an ACTIVE port
	GIDIndex int    // the source GID on RoCE
	// Hugepages for the pool: off, try (default) or require.
	Hugepages string
	// Logf, if set, hears of peers that failed their handshake.
	Logf func(format string, args ...any)
}

// Server exposes a registered DRAM pool to RDMA peers.
type Server struct {
	o      ServerOptions
	dev    *rdma.Device
	pool   *hostmem.Pool
	region *rdma.Region
	ln     net.Listener
	mu     sync.Mutex
	conns  map[*rdma.Conn]struct{}
	shakes map[net.Conn]struct{} // control connections still in their handshake
	served int
	closed bool
	wg     sync.WaitGroup
}

// Unavailable reports whether err says the verbs path is off on this
// machine (no library, no device, no active port, not Linux) rather than
// that something named was wrong.
func Unavailable(err error) bool {
	return errors.Is(err, rdma.ErrNoLibrary) || errors.Is(err, rdma.ErrNoDevice) || errors.Is(err, rdma.ErrPortDown) || errors.Is(err, rdma.ErrUnsupported)
}

// openDevice loads the library and opens the device o names; when the
// path is off and no device was named, the error is the probe's one line.
func openDevice(device string, gid int) (*rdma.Device, error) {
	lib, err := rdma.Load()
	if err != nil {
		return nil, err
	}
	d, err := lib.Open(rdma.Options{Device: device, GIDIndex: gid})
	if err != nil && device == "" && Unavailable(err) {
		if p := rdma.ProbeVerbs(); p.Err != nil {
			return nil, unavailable{err, p.String()}
		}
	}
	return d, err
}

// unavailable is an error of the verbs path worded as the probe says it.
type unavailable struct {
	err  error
	line string
}

func (u unavailable) Error() string { return u.line }
func (u unavailable) Unwrap() error { return u.err }

// Listen maps and registers the pool and listens for peers; Serve then
// accepts them.
func Listen(o ServerOptions) (s *Server, err error) {
	if o.Capacity <= 0 {
		return nil, fmt.Errorf("capacity %d: must be positive", o.Capacity)
	}
	if o.Hugepages == "" {
		o.Hugepages = "try"
	}
	s = &Server{o: o, conns: map[*rdma.Conn]struct{}{}, shakes: map[net.Conn]struct{}{}}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	if s.dev, err = openDevice(o.Device, o.GIDIndex); err != nil {
		return s, err
	}
	// A memfd pool, as the DRAM tier's: mmap'd, never Go heap (the NIC
	// writes it after the calls return).
	if s.pool, err = hostmem.NewPool(hostmem.PoolOptions{Size: o.Capacity, Hugepages: o.Hugepages, Name: "kvsim-serve"}); err != nil {
		return s, err
	}
	if s.region, err = s.dev.Register(s.pool.Bytes()[:o.Capacity]); err != nil {
		return s, err
	}
	if s.ln, err = net.Listen("tcp", o.Addr); err != nil {
		return s, err
	}
	return s, nil
}

// Addr is the control listener's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Endpoint is what a scenario's tier names to use this server.
func (s *Server) Endpoint() string { return "rdma://" + s.Addr() }

// Bytes is the served memory (tests look into it).
func (s *Server) Bytes() []byte { return s.pool.Bytes()[:s.o.Capacity] }

// String says in one line what the server serves.
func (s *Server) String() string {
	p := s.dev.Port()
	addr := p.LinkLayer
	if p.LID != 0 {
		addr += fmt.Sprintf(" LID %d", p.LID)
	}
	mrs := "1 memory region"
	if n := s.region.MRs(); n != 1 {
		mrs = fmt.Sprintf("%d memory regions", n)
	}
	line := fmt.Sprintf("serving %s of DRAM (%s, %s) on %s port %d (%s, MTU %d) at %s",
		hostmem.FormatBytes(s.o.Capacity), s.pool.Backend(), mrs, s.dev.Info().Name, p.Num, addr, p.MTU, s.Endpoint())
	if f := s.pool.Fallback(); f != "" {
		line += "; hugepages: " + f
	}
	return line
}

// Serve accepts peers, one queue pair per connection, until Close.
func (s *Server) Serve() error {
	for {
		ctl, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			ctl.Close()
			return nil
		}
		s.shakes[ctl] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.peer(ctl)
	}
}

// peer connects one queue pair and keeps it until the peer hangs up.
func (s *Server) peer(ctl net.Conn) {
	defer s.wg.Done()
	c, err := rdma.Handshake(ctl, s.dev, s.region)
	s.mu.Lock()
	delete(s.shakes, ctl)
	s.mu.Unlock()
	if err != nil {
		if s.o.Logf != nil {
			s.o.Logf("serve: %s: %s", ctl.RemoteAddr(), strings.TrimPrefix(err.Error(), "rdma: "))
		}
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.served++
	s.mu.Unlock()
	c.Wait()
	s.mu.Lock()
	_, mine := s.conns[c]
	delete(s.conns, c)
	s.mu.Unlock()
	if mine {
		c.Close()
	}
}

// Served is how many queue pairs have connected so far.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// Close stops accepting, disconnects every peer, then deregisters and
// unmaps the pool and closes the device.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = map[*rdma.Conn]struct{}{}
	for ctl := range s.shakes {
		ctl.Close() // its handshake fails at once
	}
	s.mu.Unlock()
	var errs []error
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range conns {
		errs = append(errs, c.Close())
	}
	s.wg.Wait() // handshakes under way end within their timeout
	if s.region != nil {
		errs = append(errs, s.region.Close())
		s.region = nil
	}
	if s.pool != nil {
		errs = append(errs, s.pool.Close())
		s.pool = nil
	}
	if s.dev != nil {
		errs = append(errs, s.dev.Close())
		s.dev = nil
	}
	return errors.Join(errs...)
}
