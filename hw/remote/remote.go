// Package remote is the remote DRAM tier's real store: blocks kept in a
// Redis or Valkey server, as LMCache keeps its remote KV cache.
//
// Key layout (one pair per block, LMCache's "<key>kv_bytes" and
// "<key>metadata"):
//
//	kvsim:{RUN:TIER:BLOCK}:kv_bytes   the block's payload, as moved
//	kvsim:{RUN:TIER:BLOCK}:metadata   24 bytes, little-endian: "kvsm",
//	                                  format 1, block id, payload length,
//	                                  CRC32-C of the payload, 0
//
// RUN is random per open, so two replays (or a replay and anything else)
// sharing a server never see each other's keys; the braces are a hash tag,
// so a cluster keeps a block's two keys on one slot. Put writes both keys
// in one MSET; Get reads both in one MGET and serves nothing whose length,
// id or checksum does not match. Deletes are queued and pipelined with the
// next command. A key the server dropped behind kvsim's back (maxmemory
// eviction, FLUSHALL, a restart) or a server that is down makes Get fail:
// the copy is lost, never served. Flush checks every block held and
// reports the missing ones (Lost). Close deletes every key this store
// wrote, within CleanupTimeout; what it could not delete, Left says.
package remote

import (
	"kvsim/internal/endpoint"

	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"kvsim/hw/hostmem"
	"kvsim/hw/store"
)

// Options configure a remote store.
type Options struct {
	Endpoint string // redis://HOST:PORT[/DB] or valkey://HOST:PORT[/DB]
	Tier     string // the tier's name, part of every key
	Conns    int    // connections at most (the tier's lanes); default 1
	// Capacity is the tier's bytes: a server whose maxmemory leaves less
	// room and which refuses writes when full (noeviction) is refused; one
	// that evicts instead gets a note (Note). 0: not checked.
	Capacity int64
	// Timeouts: connecting, and each command's reply (a 4 MiB value over
	// 1 Gbit/s takes 34 ms). Defaults 2 s and 10 s.
	DialTimeout, IOTimeout time.Duration
}

// ParseEndpoint checks an endpoint and returns its host:port and database.
// Host and port are required: a replay must say where its data goes.
func ParseEndpoint(s string) (addr string, db int, err error) {
	if u, err := url.Parse(s); err == nil && u.Scheme != "redis" && u.Scheme != "valkey" {
		return "", 0, fmt.Errorf("want redis://HOST:PORT or valkey://HOST:PORT, got scheme %q", u.Scheme)
	}
	e, err := endpoint.Parse(s)
	return e.Addr, e.DB, err
}

const (
	metaBytes  = 24
	metaMagic  = "kvsm"
	metaFormat = 1
	delBatch   = 256 // queued deletes sent on their own past this many
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The client's own log lines would go to stderr; every failure it logs
// also comes back to the caller as an error.
func init() { redis.SetLogger(quiet{}) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// ErrGone is a block the server no longer holds: evicted (maxmemory),
// flushed, or lost with a restart.
// It is a store.ErrNotStored: a lost copy, not a corrupt one.
var ErrGone = fmt.Errorf("the server no longer holds it (evicted by maxmemory, flushed, or restarted): %w", store.ErrNotStored)

// Store is a store.Store over a Redis or Valkey server. It is driven
// from one goroutine, like the body.
type Store struct {
	// mu guards the index and the queues, never a round trip: Put, Get,
	// Delete and Has run from many goroutines at once, up to the pool's
	// connections (store.Concurrent).
	mu      sync.Mutex
	c       *redis.Client
	addr    string
	run     string
	tier    string
	backend string
	held    []bool // per block: this store wrote it and has not deleted it
	n       int    // blocks held
	written []bool // per block: its keys may be on the server (no DEL of them succeeded since a write)
	nw      int    // blocks written
	dels    []int32
	missing []int32 // found gone, not yet reported (Lost)
	keys    []any   // scratch for DEL
	// After a failure to reach the server, commands fail at once until
	// downUntil: a server behind a dead link would otherwise cost each
	// move its dial timeout.
	downUntil time.Time
	downErr   error
	db        int
	cx        context.Context // the commands' context: Close bounds it
	left      *Left
	note      string
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Flusher      = (*Store)(nil)
	_ store.LossReporter = (*Store)(nil)
	_ store.Concurrent   = (*Store)(nil)
)

// ConcurrentSafe implements store.Concurrent.
func (s *Store) ConcurrentSafe() {}

// errClosed is a command after Close.
var errClosed = fmt.Errorf("remote store: %w", store.ErrClosed)

// CleanupTimeout bounds Close's deletion of this run's keys: a server that
// stalls at the end must not hang the exit.
const CleanupTimeout = 5 * time.Second

// Left is what Close could not delete from the server.
type Left struct {
	Server  string // host:port
	Keys    int    // at most this many (a block's two keys each)
	Pattern string // the keys' glob, for SCAN
	Remove  string // a shell command that deletes them
	Err     string // why they were left
}

// downFor is how long a server that could not be reached is taken as down.
const downFor = time.Second

// exec runs p, unless the server is taken as down. sent are the blocks
// whose keys p deletes (queueDels): gone once it succeeds, queued again
// if it fails. Called with s.mu held, which it keeps.
func (s *Store) exec(p redis.Pipeliner, sent []int32) error {
	if err := s.down(p, sent); err != nil {
		return err
	}
	_, err := p.Exec(s.ctx())
	return s.executed(err, sent)
}

// execUnlocked is exec with s.mu released for the round trip: called and
// returning with it held.
func (s *Store) execUnlocked(p redis.Pipeliner, sent []int32) error {
	if err := s.down(p, sent); err != nil {
		return err
	}
	ctx := s.ctx()
	s.mu.Unlock()
	_, err := p.Exec(ctx)
	s.mu.Lock()
	return s.executed(err, sent)
}

// down discards p when the server is taken as down.
func (s *Store) down(p redis.Pipeliner, sent []int32) error {
	if time.Now().Before(s.downUntil) {
		p.Discard()
		s.dels = append(s.dels, sent...)
		return fmt.Errorf("not retried for %v after: %w", downFor, s.downErr)
	}
	return nil
}

// executed takes p's outcome.
func (s *Store) executed(err error, sent []int32) error {
	var re redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &re) { // the connection, not a reply
		s.downUntil, s.downErr = time.Now().Add(downFor), err
	}
	if err != nil {
		s.dels = append(s.dels, sent...)
		return err
	}
	for _, b := range sent {
		if !s.has(b) && s.written[b] {
			s.written[b] = false
			s.nw--
		}
	}
	return nil
}

// Open connects to o.Endpoint and checks that the server answers.
func Open(o Options) (*Store, error) {
	addr, db, err := ParseEndpoint(o.Endpoint)
	if err != nil {
		return nil, err
	}
	dial, io := o.DialTimeout, o.IOTimeout
	if dial <= 0 {
		dial = 2 * time.Second
	}
	if io <= 0 {
		io = 10 * time.Second
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db, PoolSize: max(o.Conns, 1), MaxIdleConns: max(o.Conns, 1),
		DialTimeout: dial, ReadTimeout: io, WriteTimeout: io, PoolTimeout: dial + io,
		// A retry would hide inside a timed move; a failed command is a lost copy.
		MaxRetries: -1, DialerRetries: 1, Protocol: 2, DisableIdentity: true, ContextTimeoutEnabled: true})
	s := &Store{c: c, addr: addr, run: hex.EncodeToString(r[:]), tier: o.Tier, db: db, cx: context.Background()}
	ctx, cancel := context.WithTimeout(context.Background(), dial+io)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("remote store %s does not answer: %w", o.Endpoint, err)
	}
	name, ver := "redis", field(info, "redis_version")
	if v := field(info, "valkey_version"); v != "" {
		name, ver = "valkey", v
	}
	s.backend = fmt.Sprintf("%s %s at %s", name, ver, addr)
	if o.Capacity > 0 {
		mem, err := c.Info(ctx, "memory").Result()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("remote store %s does not answer: %w", o.Endpoint, err)
		}
		maxm, _ := strconv.ParseInt(field(mem, "maxmemory"), 10, 64)
		used, _ := strconv.ParseInt(field(mem, "used_memory"), 10, 64)
		if free := maxm - used; maxm > 0 && free < o.Capacity {
			what := fmt.Sprintf("%s: its maxmemory %s leaves %s free (%s used), less than the tier's %s",
				o.Endpoint, hostmem.FormatBytes(maxm), hostmem.FormatBytes(max(free, 0)), hostmem.FormatBytes(used), hostmem.FormatBytes(o.Capacity))
			if pol := field(mem, "maxmemory_policy"); pol == "noeviction" || pol == "" {
				c.Close()
				return nil, fmt.Errorf("%s, and it refuses writes when full (maxmemory-policy noeviction): raise its maxmemory or lower the tier's capacity", what)
			}
			s.note = what + ": it will evict this run's keys (maxmemory-policy " + field(mem, "maxmemory_policy") + "), and those copies count as lost"
		}
	}
	return s, nil
}

// Note says how the server's memory falls short of the tier, or "".
func (s *Store) Note() string { return s.note }

// field reads "key:value" from an INFO reply.
func field(info, key string) string {
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return v
		}
	}
	return ""
}

// Run is the random part of this store's keys (see the package doc).
func (s *Store) Run() string { return s.run }

// Key is block b's key with suffix "kv_bytes" or "metadata".
func (s *Store) Key(b int32, suffix string) string {
	return "kvsim:{" + s.run + ":" + s.tier + ":" + strconv.FormatInt(int64(b), 10) + "}:" + suffix
}

func (s *Store) Backend() string { return s.backend }

func (s *Store) Has(b int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.has(b)
}

func (s *Store) has(b int32) bool { return b >= 0 && int(b) < len(s.held) && s.held[b] }

func (s *Store) setHeld(b int32, v bool) {
	if int(b) >= len(s.held) {
		if !v {
			return
		}
		n := max(int(b)+1, 2*len(s.held))
		s.held = append(s.held, make([]bool, n-len(s.held))...)
		s.written = append(s.written, make([]bool, n-len(s.written))...)
	}
	if s.held[b] != v {
		s.held[b] = v
		if v {
			s.n++
		} else {
			s.n--
		}
	}
}

func (s *Store) ctx() context.Context { return s.cx }

// queueDels adds the queued deletes to a pipeline and returns their
// blocks, for exec.
func (s *Store) queueDels(p redis.Pipeliner) []int32 {
	if len(s.dels) == 0 {
		return nil
	}
	s.keys = s.keys[:0]
	for _, b := range s.dels {
		s.keys = append(s.keys, s.Key(b, "kv_bytes"), s.Key(b, "metadata"))
	}
	p.Del(s.ctx(), keyStrings(s.keys)...)
	sent := s.dels
	s.dels = nil
	return sent
}

func keyStrings(ks []any) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.(string)
	}
	return out
}

// Put writes b's payload and metadata in one MSET (with the queued
// deletes, in one round trip).
func (s *Store) Put(b int32, data []byte) error {
	if b < 0 {
		return fmt.Errorf("block %d: negative id", b)
	}
	var meta [metaBytes]byte
	m := meta[:]
	copy(m, metaMagic)
	binary.LittleEndian.PutUint32(m[4:], metaFormat)
	binary.LittleEndian.PutUint32(m[8:], uint32(b))
	binary.LittleEndian.PutUint32(m[12:], uint32(len(data)))
	binary.LittleEndian.PutUint32(m[16:], crc32.Checksum(data, castagnoli))
	binary.LittleEndian.PutUint32(m[20:], 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return errClosed
	}
	p := s.c.Pipeline()
	sent := s.queueDels(p)
	p.MSet(s.ctx(), s.Key(b, "kv_bytes"), data, s.Key(b, "metadata"), m)
	s.setHeld(b, true) // (sized the index)
	if !s.written[b] {
		s.written[b] = true
		s.nw++
	}
	if err := s.execUnlocked(p, sent); err != nil {
		// The server may or may not have it: not ours to serve.
		s.setHeld(b, false)
		s.dels = append(s.dels, b)
		return fmt.Errorf("remote store %s: SET: %w", s.addr, err)
	}
	s.setHeld(b, true)
	return nil
}

// Get reads b into dst and checks it against its metadata.
func (s *Store) Get(b int32, dst []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return 0, errClosed
	}
	if !s.has(b) {
		return 0, store.ErrNotStored
	}
	p := s.c.Pipeline()
	sent := s.queueDels(p)
	g := p.MGet(s.ctx(), s.Key(b, "metadata"), s.Key(b, "kv_bytes"))
	if err := s.execUnlocked(p, sent); err != nil {
		s.forget(b)
		return 0, fmt.Errorf("remote store %s: GET: %w", s.addr, err)
	}
	v := g.Val()
	meta, ok1 := v[0].(string)
	data, ok2 := v[1].(string)
	if !ok1 || !ok2 {
		s.forget(b)
		return 0, ErrGone
	}
	if err := check(meta, data, b, len(dst)); err != nil {
		s.forget(b)
		return 0, err
	}
	return copy(dst, data), nil
}

// check says whether meta describes data as block b's payload that fits
// in room bytes.
func check(meta, data string, b int32, room int) error {
	if len(meta) != metaBytes || meta[:4] != metaMagic || binary.LittleEndian.Uint32([]byte(meta[4:8])) != metaFormat {
		return fmt.Errorf("remote store: block %d: metadata is not kvsim's format %d", b, metaFormat)
	}
	m := []byte(meta)
	id, n, sum := int32(binary.LittleEndian.Uint32(m[8:])), int(binary.LittleEndian.Uint32(m[12:])), binary.LittleEndian.Uint32(m[16:])
	switch {
	case id != b:
		return fmt.Errorf("remote store: block %d: metadata is block %d's", b, id)
	case n != len(data):
		return fmt.Errorf("remote store: block %d: %d bytes, metadata says %d", b, len(data), n)
	case n > room:
		return fmt.Errorf("remote store: block %d: %d bytes, more than the %d asked for", b, n, room)
	case crc32.Update(0, castagnoli, unsafe.Slice(unsafe.StringData(data), len(data))) != sum: // no copy
		return fmt.Errorf("remote store: block %d: CRC32-C mismatch", b)
	}
	return nil
}

// forget drops b from the index and deletes whatever is left of it.
func (s *Store) forget(b int32) {
	s.setHeld(b, false)
	s.dels = append(s.dels, b)
}

// Delete queues b's keys for deletion with the next command.
func (s *Store) Delete(b int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.has(b) {
		return
	}
	s.forget(b)
	if len(s.dels) >= delBatch {
		p := s.c.Pipeline()
		_ = s.exec(p, s.queueDels(p)) // a failure queues them again
	}
}

// Flush sends the queued deletes and checks that the server still holds
// every block this store holds; the missing ones are reported by Lost.
// A server that does not answer has lost them all, as far as kvsim can
// tell.
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return errClosed
	}
	var held []int32
	for b, h := range s.held {
		if h {
			held = append(held, int32(b))
		}
	}
	for len(held) > 0 || len(s.dels) > 0 {
		batch := held[:min(len(held), 512)]
		held = held[len(batch):]
		p := s.c.Pipeline()
		sent := s.queueDels(p)
		ex := make([]*redis.IntCmd, len(batch))
		for i, b := range batch {
			ex[i] = p.Exists(s.ctx(), s.Key(b, "metadata"), s.Key(b, "kv_bytes"))
		}
		if err := s.exec(p, sent); err != nil && !errors.Is(err, redis.Nil) {
			for _, b := range append(batch, held...) {
				s.setHeld(b, false)
				s.missing = append(s.missing, b)
			}
			return fmt.Errorf("remote store %s: %w", s.addr, err)
		}
		for i, b := range batch {
			if ex[i].Val() != 2 {
				s.forget(b)
				s.missing = append(s.missing, b)
			}
		}
	}
	return nil
}

// Lost returns and forgets the blocks Flush found gone.
func (s *Store) Lost() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.missing
	s.missing = nil
	return m
}

// Len is the number of blocks held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Close deletes every key this store may have left on the server, within
// CleanupTimeout (tried even when the server was just found down: it is
// the last chance), then disconnects. What it could not delete, Left says.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return nil
	}
	s.dels = s.dels[:0]
	for b, w := range s.written {
		if w {
			s.setHeld(int32(b), false)
			s.dels = append(s.dels, int32(b))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), CleanupTimeout)
	defer cancel()
	s.cx, s.downUntil = ctx, time.Time{}
	var first error
	for len(s.dels) > 0 {
		rest := s.dels[min(len(s.dels), delBatch):]
		s.dels = s.dels[:min(len(s.dels), delBatch)]
		p := s.c.Pipeline()
		if err := s.exec(p, s.queueDels(p)); err != nil {
			first = fmt.Errorf("remote store %s: deleting this run's keys: %w", s.addr, err)
			s.dels = nil
			break
		}
		s.dels = rest
	}
	if s.nw > 0 && first != nil {
		s.left = &Left{Server: s.addr, Keys: 2 * s.nw, Pattern: s.Pattern(), Remove: s.RemoveCommand(), Err: first.Error()}
	}
	s.held, s.n = nil, 0
	if err := s.c.Close(); err != nil && first == nil {
		first = err
	}
	s.c = nil
	return first
}

// Left is what Close could not delete (nil: nothing, or not closed yet).
func (s *Store) Left() *Left { return s.left }

// Pattern matches every key of this store, and nothing else of the server.
func (s *Store) Pattern() string { return "kvsim:{" + s.run + ":" + s.tier + ":*" }

// RemoveCommand is a shell command that deletes this store's keys, run
// where the server is reachable (docs/remote.md gives it for a crash).
func (s *Store) RemoveCommand() string {
	host, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		host, port = s.addr, "6379"
	}
	cli := "redis-cli -h " + host + " -p " + port
	if s.db != 0 {
		cli += " -n " + strconv.Itoa(s.db)
	}
	return cli + " --scan --pattern '" + s.Pattern() + "' | xargs -r " + cli + " del"
}
