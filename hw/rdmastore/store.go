package rdmastore

import (
	"kvsim/internal/endpoint"

	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"kvsim/hw/hostmem"
	"kvsim/hw/rdma"
	"kvsim/hw/store"
)

// Endpoint is a parsed rdma:// endpoint.
type Endpoint struct {
	Addr     string // host:port of the server's control listener
	Device   string // ?device=NAME: the local device ("" = the first with an ACTIVE port)
	GIDIndex int    // ?gid_index=N: the local source GID (RoCE v2)
}

// ParseEndpoint reads rdma://HOST:PORT[?device=NAME&gid_index=N].
func ParseEndpoint(s string) (Endpoint, error) {
	e, err := endpoint.Parse(s)
	if err == nil && e.Scheme != "rdma" {
		err = fmt.Errorf("%q: want rdma://HOST:PORT", s)
	}
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Addr: e.Addr, Device: e.Device, GIDIndex: e.GIDIndex}, nil
}

// Options configure a client store.
type Options struct {
	Endpoint  string // rdma://HOST:PORT[?device=NAME&gid_index=N]
	Tier      string // the tier's name, for messages
	Lanes     int    // queue pairs (the tier's lanes); default 1
	SlotBytes int    // the largest block: one slot of the server's memory each
	Capacity  int64  // the tier's capacity in real bytes: the server must hold it (0: use what it has)
	// Timeout of the control connection, the handshake and each
	// transfer's completions; default 10 s.
	Timeout time.Duration
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrGone is a block whose copy went with a server that failed or
// restarted: lost (a store.ErrNotStored), not corrupt.
var ErrGone = fmt.Errorf("the RDMA server failed or restarted with it: %w", store.ErrNotStored)

// downFor is how long a server that could not be reached is taken as
// down: each move fails at once meanwhile instead of dialling again.
const downFor = time.Second

// maxSlots bounds the index of a store given no capacity (12 bytes a slot).
const maxSlots = 1 << 22

// Store is a store.Store in the memory a kvsim serve exposes: block b
// lives in a slot of SlotBytes there, written and read with one-sided RDMA
// through a registered staging buffer here. It is driven from one
// goroutine, like the body; moves go round robin over the lanes.
type Store struct {
	ep      Endpoint
	tier    string
	timeout time.Duration
	dev     *rdma.Device
	staging *hostmem.Pool
	region  *rdma.Region
	buf     []byte
	lanes   []*rdma.Conn // nil: broken, redialled at the next move after downUntil
	next    int
	slot    int
	where   []int32 // block -> slot+1 (0: not held)
	size    []int32 // per slot
	sum     []uint32
	free    []int32
	n       int
	missing []int32 // lost with a server that failed, not yet reported (Lost)
	// After the server could not be reached, moves fail at once until
	// downUntil.
	downUntil time.Time
	downErr   error
	backend   string
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Flusher      = (*Store)(nil)
	_ store.LossReporter = (*Store)(nil)
)

var errClosed = fmt.Errorf("rdma store: %w", store.ErrClosed)

// Open connects o.Lanes queue pairs to the server at o.Endpoint. An error
// for which Unavailable is true means this machine has no verbs path (the
// caller may fall back); any other is the endpoint's or the server's.
func Open(o Options) (s *Store, err error) {
	ep, err := ParseEndpoint(o.Endpoint)
	if err != nil {
		return nil, err
	}
	if o.SlotBytes <= 0 {
		return nil, fmt.Errorf("rdma store: slot of %d bytes", o.SlotBytes)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	s = &Store{ep: ep, tier: o.Tier, timeout: o.Timeout, slot: o.SlotBytes, lanes: make([]*rdma.Conn, max(o.Lanes, 1))}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	if s.dev, err = openDevice(ep.Device, ep.GIDIndex); err != nil {
		return s, err
	}
	// The staging buffer: one block, mmap'd (the NIC reads and writes it
	// after the calls return, so never Go heap), registered.
	if s.staging, err = hostmem.NewPool(hostmem.PoolOptions{Size: int64(o.SlotBytes), Hugepages: "off", Name: "kvsim-rdma-staging"}); err != nil {
		return s, err
	}
	s.buf = s.staging.Bytes()[:o.SlotBytes]
	if s.region, err = s.dev.Register(s.buf); err != nil {
		return s, err
	}
	for i := range s.lanes {
		c, err := s.dial()
		if err != nil {
			return s, fmt.Errorf("%s does not answer (start kvsim serve --rdma there): %w", o.Endpoint, err)
		}
		s.lanes[i] = c
		if !slices.Equal(c.Peer().MRs, s.lanes[0].Peer().MRs) {
			return s, fmt.Errorf("%s: its queue pairs expose different memory (a different server behind the same address?)", o.Endpoint)
		}
	}
	have := int(s.lanes[0].RemoteLen() / uint64(o.SlotBytes))
	need := int((o.Capacity + int64(o.SlotBytes) - 1) / int64(o.SlotBytes))
	if have < need {
		return s, fmt.Errorf("%s serves %s, %d slots of %s; the tier needs %d (%s): start kvsim serve with --capacity %s or more",
			o.Endpoint, hostmem.FormatBytes(int64(s.lanes[0].RemoteLen())), have, hostmem.FormatBytes(int64(o.SlotBytes)), need,
			hostmem.FormatBytes(int64(need)*int64(o.SlotBytes)), hostmem.FormatBytes(int64(need)*int64(o.SlotBytes)))
	}
	// What the server holds beyond the tier's capacity takes the blocks
	// shorter than a slot; keep the index bounded all the same. No
	// capacity (a calibration): as much of the server as the index allows.
	slots := min(have, need+need/4+64)
	if o.Capacity <= 0 {
		slots = min(have, maxSlots)
	}
	p := s.dev.Port()
	s.backend = fmt.Sprintf("rdma %s port %d (%s) to %s, %d queue pairs", s.dev.Info().Name, p.Num, p.LinkLayer, s.ep.Addr, len(s.lanes))
	s.size, s.sum, s.free = make([]int32, slots), make([]uint32, slots), make([]int32, slots)
	for i := range s.free {
		s.free[i] = int32(slots - 1 - i) // popped from the end: slot 0 first
	}
	return s, nil
}

func (s *Store) dial() (*rdma.Conn, error) {
	return rdma.Dial(s.ep.Addr, s.dev, s.region)
}

// Slots is how many slots of the server's memory the store uses.
func (s *Store) Slots() int { return len(s.size) }

// SlotOf is where block b lives in the server's memory (byte offset), or
// -1.
func (s *Store) SlotOf(b int32) int64 {
	if !s.Has(b) {
		return -1
	}
	return int64(s.where[b]-1) * int64(s.slot)
}

// Backend implements store.Store (named at Open: it answers after Close).
func (s *Store) Backend() string { return s.backend }

// Has implements store.Store.
func (s *Store) Has(b int32) bool { return b >= 0 && int(b) < len(s.where) && s.where[b] != 0 }

// Len is the number of blocks held.
func (s *Store) Len() int { return s.n }

// lane returns a connected queue pair, redialling broken ones at most
// once per downFor.
func (s *Store) lane() (int, *rdma.Conn, error) {
	for range len(s.lanes) {
		i := s.next
		s.next = (s.next + 1) % len(s.lanes)
		if c := s.lanes[i]; c != nil {
			return i, c, nil
		}
	}
	if err := s.redial(); err != nil {
		return 0, nil, err
	}
	return s.lane()
}

// redial reconnects the broken lanes. When none stood, the server may
// have restarted (it could even map its memory at the same address), so
// what it held is taken as lost: a loss may be over-reported, never
// hidden. A server that does not answer is taken as down for downFor.
func (s *Store) redial() error {
	if time.Now().Before(s.downUntil) {
		return fmt.Errorf("not retried for %v after: %w", downFor, s.downErr)
	}
	if !slices.ContainsFunc(s.lanes, func(c *rdma.Conn) bool { return c != nil }) {
		s.loseAll()
	}
	var failed error
	for i, c := range s.lanes {
		if c != nil {
			continue
		}
		c, err := s.dial()
		if err == nil && c.RemoteLen() < uint64(len(s.size)*s.slot) {
			c.Close()
			err = fmt.Errorf("the server came back with %s, less than the %d slots in use", hostmem.FormatBytes(int64(c.RemoteLen())), len(s.size))
		}
		if err != nil {
			failed = err
			continue
		}
		s.lanes[i] = c
	}
	if failed != nil {
		s.downUntil, s.downErr = time.Now().Add(downFor), failed
		if !slices.ContainsFunc(s.lanes, func(c *rdma.Conn) bool { return c != nil }) {
			return fmt.Errorf("%s is unreachable: %w", s.ep.Addr, failed)
		}
	}
	return nil
}

// broke closes lane i after a failed transfer (its queue pair is in
// error).
func (s *Store) broke(i int) {
	if c := s.lanes[i]; c != nil {
		c.Close()
		s.lanes[i] = nil
	}
}

// loseAll forgets every block held: they are reported by Lost.
func (s *Store) loseAll() {
	for b, w := range s.where {
		if w != 0 {
			s.missing = append(s.missing, int32(b))
			s.release(int32(b))
		}
	}
}

func (s *Store) release(b int32) {
	s.free = append(s.free, s.where[b]-1)
	s.where[b] = 0
	s.n--
}

// Put implements store.Store: an RDMA WRITE of data into b's slot.
func (s *Store) Put(b int32, data []byte) error {
	if s.dev == nil {
		return errClosed
	}
	if b < 0 || len(data) > s.slot {
		return fmt.Errorf("rdma store: block %d of %d bytes: negative id or larger than a slot (%d)", b, len(data), s.slot)
	}
	// The lane first: a redial that finds a restarted server forgets
	// every slot.
	i, c, err := s.lane()
	if err != nil {
		s.Delete(b)
		return fmt.Errorf("rdma store %s: WRITE: %w", s.ep.Addr, err)
	}
	if int(b) >= len(s.where) {
		s.where = append(s.where, make([]int32, max(int(b)+1, 2*len(s.where))-len(s.where))...)
	}
	if s.where[b] == 0 {
		if len(s.free) == 0 {
			return fmt.Errorf("rdma store: all %d slots of %s in use", len(s.size), s.ep.Addr)
		}
		s.where[b] = s.free[len(s.free)-1] + 1
		s.free = s.free[:len(s.free)-1]
		s.n++
	}
	slot := s.where[b] - 1
	n := copy(s.buf, data)
	if err := c.Write(s.buf[:n], uint64(slot)*uint64(s.slot)); err != nil {
		// The slot may hold part of it: not ours to serve.
		s.broke(i)
		s.release(b)
		return fmt.Errorf("rdma store %s: WRITE: %w", s.ep.Addr, err)
	}
	s.size[slot], s.sum[slot] = int32(n), crc32.Checksum(data, castagnoli)
	return nil
}

// Get implements store.Store: an RDMA READ of b's slot, served only if
// its CRC32-C is the one written.
func (s *Store) Get(b int32, dst []byte) (int, error) {
	if s.dev == nil {
		return 0, errClosed
	}
	if !s.Has(b) {
		return 0, store.ErrNotStored
	}
	i, c, err := s.lane()
	if err != nil {
		s.Delete(b)
		return 0, fmt.Errorf("rdma store %s: READ: %v: %w", s.ep.Addr, err, ErrGone)
	}
	if !s.Has(b) { // the redial found a restarted server
		return 0, fmt.Errorf("rdma store %s: READ: %w", s.ep.Addr, ErrGone)
	}
	slot := s.where[b] - 1
	n := int(s.size[slot])
	if n > len(dst) {
		return 0, fmt.Errorf("rdma store: block %d: %d bytes, more than the %d asked for", b, n, len(dst))
	}
	if err := c.Read(s.buf[:n], uint64(slot)*uint64(s.slot)); err != nil {
		s.broke(i)
		s.release(b)
		return 0, fmt.Errorf("rdma store %s: READ: %v: %w", s.ep.Addr, err, ErrGone)
	}
	if crc32.Checksum(s.buf[:n], castagnoli) != s.sum[slot] {
		s.release(b)
		return 0, fmt.Errorf("rdma store %s: block %d: CRC32-C mismatch in slot %d (the server's memory changed under it)", s.ep.Addr, b, slot)
	}
	return copy(dst, s.buf[:n]), nil
}

// Delete implements store.Store: the slot is free again (its bytes stay
// on the server until overwritten).
func (s *Store) Delete(b int32) {
	if s.Has(b) {
		s.release(b)
	}
}

// Flush checks that the server still stands (a READ of a few bytes on
// each queue pair: one that died quietly fails it); when it cannot be
// reached, every block held is lost (reported by Lost).
func (s *Store) Flush() error {
	if s.dev == nil {
		return errClosed
	}
	for i, c := range s.lanes {
		if c != nil && c.Read(s.buf[:8], 0) != nil {
			s.broke(i)
		}
	}
	if !slices.Contains(s.lanes, nil) {
		return nil
	}
	s.downUntil = time.Time{}
	if err := s.redial(); err != nil {
		return fmt.Errorf("rdma store: %w", err)
	}
	return nil
}

// Lost returns and forgets the blocks lost with a server that failed.
func (s *Store) Lost() []int32 {
	m := s.missing
	s.missing = nil
	return m
}

// Close disconnects and releases the staging buffer and the device.
func (s *Store) Close() error {
	var errs []error
	for i, c := range s.lanes {
		if c != nil {
			errs = append(errs, c.Close())
			s.lanes[i] = nil
		}
	}
	if s.region != nil {
		errs = append(errs, s.region.Close())
		s.region = nil
	}
	if s.staging != nil {
		errs = append(errs, s.staging.Close())
		s.staging = nil
	}
	if s.dev != nil {
		errs = append(errs, s.dev.Close())
		s.dev = nil
	}
	s.where, s.n = nil, 0 // Has is false from now on
	return errors.Join(errs...)
}

// Describe says in one line where the tier's blocks go.
func (s *Store) Describe() string {
	return fmt.Sprintf("blocks are %d slots of %s in the DRAM kvsim serve exposes at rdma://%s, moved by one-sided RDMA WRITE and READ over %d queue pairs of %s; their CRC32-C are kept here",
		len(s.size), hostmem.FormatBytes(int64(s.slot)), s.ep.Addr, len(s.lanes), s.dev.Info().Name)
}
