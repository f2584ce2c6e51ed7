// Package storetest is the conformance suite of the store contract
// (kvsim/hw/store): the same tests, run by every store's own package over
// that store, for the contract and for each capability the store
// declares, fault cases included. Only tests import it.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"kvsim/hw/store"
)

// Option says what the suite may do to a store beyond the contract.
type Option func(*config)

type config struct {
	maxBytes   int
	failWrites func(t *testing.T, s store.Store)
	lose       func(t *testing.T, s store.Store, b int32)
	evicts     int
	arm        func(t *testing.T, s store.Store)
	reopen     func(t *testing.T, s store.Store) store.Store
	crash      func(t *testing.T, s store.Store) store.Store
}

// MaxBytes is the largest block the store takes (default 64 KiB).
func MaxBytes(n int) Option { return func(c *config) { c.maxBytes = n } }

// FailWrites makes every write of s from now on fail, through the
// store's fault hook (an engine that fails, a server that refuses): the
// suite checks that no failed write is served or hidden.
func FailWrites(f func(t *testing.T, s store.Store)) Option {
	return func(c *config) { c.failWrites = f }
}

// Lose removes block b behind the store's back (a server's eviction or
// restart; it may take others with it): the suite checks the store
// reports the loss and never serves the block.
func Lose(f func(t *testing.T, s store.Store, b int32)) Option {
	return func(c *config) { c.lose = f }
}

// Evicts says that n blocks of MaxBytes make the store evict on its own,
// once arm (if not nil) has set it up to (a server's memory limit): the
// suite checks it reports what it evicted and keeps the rest.
func Evicts(n int, arm func(t *testing.T, s store.Store)) Option {
	return func(c *config) { c.evicts, c.arm = n, arm }
}

// Reopen closes s and opens the same store again, without the faults
// FailWrites set (a durable store: it must be a store.Recoverer).
func Reopen(f func(t *testing.T, s store.Store) store.Store) Option {
	return func(c *config) { c.reopen = f }
}

// Crash opens, as another store, a copy of s's files as they are now, as
// a crash would leave them (s stays open): a durable store's writes in
// flight are torn there.
func Crash(f func(t *testing.T, s store.Store) store.Store) Option {
	return func(c *config) { c.crash = f }
}

// RunConformance runs the suite over the stores open makes: each call a
// new, empty store with room for 64 blocks of MaxBytes. The suite closes
// them (a second Close must return nil, so open may register one too).
// Every store gets the contract's tests (round trips of every size,
// overwrite, delete, missing blocks, after Close) and Concurrent's if it
// declares it; the options add the fault cases its package can inject.
func RunConformance(t *testing.T, open func(t *testing.T) store.Store, opts ...Option) {
	c := config{maxBytes: 64 << 10}
	for _, o := range opts {
		o(&c)
	}
	mk := func(t *testing.T) store.Store {
		t.Helper()
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	first := mk(t)
	t.Logf("%s: %v", first.Backend(), store.Capabilities(first))
	_, conc := first.(store.Concurrent)
	_, durable := first.(store.Recoverer)
	first.Close()
	t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, mk(t), c) })
	t.Run("Overwrite", func(t *testing.T) { overwrite(t, mk(t), c) })
	t.Run("Delete", func(t *testing.T) { deleteKeys(t, mk(t), c) })
	t.Run("Many", func(t *testing.T) { many(t, mk(t), c) })
	t.Run("Concurrent", func(t *testing.T) {
		if !conc {
			t.Skip("not a store.Concurrent")
		}
		concurrent(t, mk(t), c)
	})
	t.Run("Closed", func(t *testing.T) { closed(t, mk(t), c) })
	t.Run("FailedWrite", func(t *testing.T) {
		if c.failWrites == nil {
			t.Skip("no fault hook given (FailWrites)")
		}
		failedWrite(t, mk(t), c)
	})
	t.Run("LostKey", func(t *testing.T) {
		if c.lose == nil {
			t.Skip("the store cannot lose a key behind its back (no Lose)")
		}
		lostKey(t, mk(t), c)
	})
	t.Run("EvictsOnItsOwn", func(t *testing.T) {
		if c.evicts == 0 {
			t.Skip("the store does not evict on its own (no Evicts)")
		}
		evicts(t, mk(t), c)
	})
	t.Run("Reopen", func(t *testing.T) {
		switch {
		case c.reopen == nil && durable:
			t.Fatal("a store.Recoverer without Reopen: its recovery goes untested")
		case c.reopen == nil:
			t.Skip("not durable (no Reopen)")
		case !durable:
			t.Fatal("Reopen given for a store that is not a store.Recoverer")
		}
		reopen(t, mk(t), c)
	})
	t.Run("Crash", func(t *testing.T) {
		if c.crash == nil {
			t.Skip("no crash image (Crash)")
		}
		crash(t, mk(t), c)
	})
}

// pattern is block k's content at version v: distinct per key, version
// and length, so a stale or misplaced copy never passes for the right one.
func pattern(k int32, v, n int) []byte {
	b := make([]byte, n)
	x := uint64(uint32(k))<<32 ^ uint64(v)*0x9E3779B97F4A7C15 ^ uint64(n)*0xBF58476D1CE4E5B9 | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// model is what the store must hold: the content of every block whose Put
// returned nil and that was not deleted since.
type model struct {
	want     map[int32][]byte
	deleted  map[int32]bool
	reported map[int32]string // lost or evicted, as the store said
}

func newModel() *model {
	return &model{want: map[int32][]byte{}, deleted: map[int32]bool{}, reported: map[int32]string{}}
}

// put and del first take the store's reports, which are of earlier
// copies (as the body does after every move).
func (m *model) put(t *testing.T, s store.Store, k int32, data []byte) {
	t.Helper()
	m.collect(s)
	if err := s.Put(k, data); err != nil {
		t.Fatalf("Put(%d, %d bytes): %v", k, len(data), err)
	}
	m.want[k] = data
	delete(m.deleted, k)
	delete(m.reported, k)
}

func (m *model) del(s store.Store, k int32) {
	m.collect(s)
	s.Delete(k)
	delete(m.want, k)
	m.deleted[k] = true
}

// collect takes the store's reports of what it dropped or lost.
func (m *model) collect(s store.Store) (evicted, failed int) {
	if d, ok := s.(store.Dropper); ok {
		ev, fl := d.Dropped()
		for _, k := range ev {
			m.reported[k] = "evicted"
		}
		for _, k := range fl {
			m.reported[k] = "failed"
		}
		evicted, failed = len(ev), len(fl)
	}
	if l, ok := s.(store.LossReporter); ok {
		lost := l.Lost()
		for _, k := range lost {
			m.reported[k] = "lost"
		}
		failed += len(lost)
	}
	return evicted, failed
}

// flush flushes a Flusher and collects its reports; an error fails the
// test unless faulty.
func (m *model) flush(t *testing.T, s store.Store, faulty bool) {
	t.Helper()
	if f, ok := s.(store.Flusher); ok {
		if err := f.Flush(); err != nil && !faulty {
			t.Fatalf("Flush: %v", err)
		}
	}
	m.collect(s)
}

// check reads every block back. A block the store reported is gone; any
// other must be held and served intact, except that after a fault
// (faulty) a Get may report it lost instead (ErrNotStored). A deleted
// block is gone.
func (m *model) check(t *testing.T, s store.Store, max int, faulty bool) {
	t.Helper()
	m.collect(s) // what the last Put evicted
	buf := make([]byte, max+4096)
	keys := make([]int32, 0, len(m.want))
	for k := range m.want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		want := m.want[k]
		if why, ok := m.reported[k]; ok {
			if s.Has(k) {
				t.Errorf("block %d: reported %s, still held", k, why)
			}
			if _, err := s.Get(k, buf); !errors.Is(err, store.ErrNotStored) {
				t.Errorf("block %d: reported %s, yet Get gives %v, not ErrNotStored", k, why, err)
			}
			continue
		}
		if !s.Has(k) {
			t.Errorf("block %d: Put succeeded, no loss or eviction was reported, yet the store does not hold it", k)
			continue
		}
		n, err := s.Get(k, buf)
		switch {
		case err != nil && faulty && errors.Is(err, store.ErrNotStored):
			if s.Has(k) {
				t.Errorf("block %d: Get found it lost (%v), Has still true", k, err)
			}
			m.reported[k] = "lost at Get"
		case err != nil:
			t.Errorf("block %d: Get: %v", k, err)
		case !bytes.Equal(buf[:n], want):
			t.Errorf("block %d: Get served %d bytes that are not the %d last written", k, n, len(want))
		}
	}
	for k := range m.deleted {
		if s.Has(k) {
			t.Errorf("block %d: deleted, still held", k)
		}
		if n, err := s.Get(k, buf); !errors.Is(err, store.ErrNotStored) {
			t.Errorf("block %d: deleted, yet Get gives %d bytes, %v", k, n, err)
		}
	}
}

func sizes(max int) []int {
	var out []int
	for _, n := range []int{0, 1, 7, 511, 512, 4095, 4096, 4097, 8191, 65536 + 100, max - 1, max} {
		if n >= 0 && n <= max && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// roundTrip: blocks of every size (O_DIRECT stores included: lengths not
// a multiple of 4096, and zero) come back byte for byte, at small and
// large ids; a missing block is ErrNotStored; a short dst is an error.
func roundTrip(t *testing.T, s store.Store, c config) {
	m := newModel()
	for i, n := range sizes(c.maxBytes) {
		for _, k := range []int32{int32(i), int32(100000 + i)} {
			if s.Has(k) {
				t.Fatalf("a new store holds block %d", k)
			}
			m.put(t, s, k, pattern(k, 0, n))
		}
	}
	m.check(t, s, c.maxBytes, false)
	m.flush(t, s, false)
	m.check(t, s, c.maxBytes, false)
	buf := make([]byte, c.maxBytes)
	for _, k := range []int32{50, 99999, 1 << 30} {
		if s.Has(k) {
			t.Errorf("Has(%d) of a block never put", k)
		}
		if n, err := s.Get(k, buf); !errors.Is(err, store.ErrNotStored) {
			t.Errorf("Get(%d) of a block never put: %d, %v; want ErrNotStored", k, n, err)
		}
	}
	if err := s.Put(-1, buf[:16]); err == nil {
		t.Error("Put of block -1 succeeded")
	}
	if s.Has(-1) {
		t.Error("Has(-1)")
	}
	if _, err := s.Get(-1, buf); !errors.Is(err, store.ErrNotStored) {
		t.Errorf("Get(-1): %v, want ErrNotStored", err)
	}
	k := int32(len(sizes(c.maxBytes)) - 1) // the largest
	if n, err := s.Get(k, buf[:len(m.want[k])-1]); err == nil || errors.Is(err, store.ErrNotStored) {
		t.Errorf("Get of block %d into a buffer a byte short: %d, %v; want an error, not ErrNotStored", k, n, err)
	}
}

// overwrite: a Put of a held block replaces it, at a larger and a
// smaller size.
func overwrite(t *testing.T, s store.Store, c config) {
	m := newModel()
	ns := []int{c.maxBytes / 2, c.maxBytes, 1, c.maxBytes/3 + 5}
	for v, n := range ns {
		for k := int32(0); k < 4; k++ {
			m.put(t, s, k, pattern(k, v, n))
		}
		m.check(t, s, c.maxBytes, false)
	}
	m.flush(t, s, false)
	m.check(t, s, c.maxBytes, false)
}

// deleteKeys: a deleted block is gone at once and after a flush, others
// stay, deleting it again or deleting a missing one does nothing, and its
// id takes a new block.
func deleteKeys(t *testing.T, s store.Store, c config) {
	m := newModel()
	for k := int32(0); k < 8; k++ {
		m.put(t, s, k, pattern(k, 0, c.maxBytes-int(k)))
	}
	m.flush(t, s, false)
	for _, k := range []int32{1, 4, 7} {
		m.del(s, k)
	}
	m.check(t, s, c.maxBytes, false)
	s.Delete(4)
	s.Delete(12345)
	s.Delete(-1)
	m.flush(t, s, false)
	m.check(t, s, c.maxBytes, false)
	m.put(t, s, 4, pattern(4, 1, 100))
	m.check(t, s, c.maxBytes, false)
	m.flush(t, s, false)
	m.check(t, s, c.maxBytes, false)
}

// many: a mixed run of puts, overwrites and deletes within 64 blocks.
func many(t *testing.T, s store.Store, c config) {
	m := newModel()
	for i := range 200 {
		k := int32(i*7919) % 64
		switch {
		case i%5 == 4:
			m.del(s, k)
		default:
			m.put(t, s, k, pattern(k, i, 1+(i*977)%c.maxBytes))
		}
		if i%50 == 49 {
			m.flush(t, s, false)
			m.check(t, s, c.maxBytes, false)
		}
	}
	m.check(t, s, c.maxBytes, false)
}

// concurrent: goroutines putting, reading and deleting blocks of their
// own at once (run it with -race).
func concurrent(t *testing.T, s store.Store, c config) {
	const workers, per = 4, 12
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, c.maxBytes)
			for i := range per {
				k := int32(w*per + i)
				want := pattern(k, w, 1+(i*4099)%c.maxBytes)
				if err := s.Put(k, want); err != nil {
					errs <- err
					return
				}
				n, err := s.Get(k, buf)
				if err != nil || !bytes.Equal(buf[:n], want) || !s.Has(k) {
					errs <- fmt.Errorf("block %d read back: %d bytes, %v", k, n, err)
					return
				}
				if i%3 == 0 {
					s.Delete(k)
					if s.Has(k) {
						errs <- fmt.Errorf("block %d deleted, still held", k)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := newModel()
	for w := range workers {
		for i := range per {
			k := int32(w*per + i)
			if i%3 == 0 {
				m.deleted[k] = true
			} else {
				m.want[k] = pattern(k, w, 1+(i*4099)%c.maxBytes)
			}
		}
	}
	m.check(t, s, c.maxBytes, false)
}

// closed: after Close, Put and Get fail with ErrClosed, Has is false,
// Delete, Backend and the capabilities do not panic, and a second Close
// returns nil.
func closed(t *testing.T, s store.Store, c config) {
	m := newModel()
	m.put(t, s, 3, pattern(3, 0, 100))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	buf := make([]byte, c.maxBytes)
	if err := s.Put(4, buf[:100]); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Put after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Get(3, buf); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if s.Has(3) || s.Has(4) {
		t.Error("Has after Close")
	}
	s.Delete(3)
	_ = s.Backend()
	if f, ok := s.(store.Flusher); ok {
		_ = f.Flush()
	}
	m.collect(s)
	if r, ok := s.(store.Recoverer); ok {
		r.Blocks()
	}
}

// failedWrite: once writes fail, a Put either fails (and the block is as
// it was, or gone) or is reported lost by the next Flush; never served
// half-written, never silently missing. Blocks written before may be
// lost with it, if reported. With Reopen: the store reopened serves
// nothing of the failed writes (a torn write is discarded) and every
// block it held durably before them.
func failedWrite(t *testing.T, s store.Store, c config) {
	m := newModel()
	for k := int32(0); k < 6; k++ {
		m.put(t, s, k, pattern(k, 0, c.maxBytes-int(k)*100))
	}
	m.flush(t, s, false)
	durable := clone(m.want)
	c.failWrites(t, s)
	failed := 0
	prev := map[int32][]byte{}
	for k := int32(0); k < 12; k += 2 { // overwrites (0, 2, 4), then new blocks
		data := pattern(k, 1, c.maxBytes-int(k)*50)
		if err := s.Put(k, data); err != nil {
			failed++
			prev[k] = m.want[k]
			delete(m.want, k)
			continue
		}
		m.want[k] = data
	}
	m.flush(t, s, true)
	if failed == 0 && len(m.reported) == 0 {
		t.Error("writes were to fail: every Put succeeded and no loss was reported")
	}
	// A failed Put leaves the block as it was, or gone.
	buf := make([]byte, c.maxBytes)
	for k, old := range prev {
		n, err := s.Get(k, buf)
		switch {
		case errors.Is(err, store.ErrNotStored):
			if s.Has(k) {
				t.Errorf("block %d: its Put failed, Get says not stored, Has says held", k)
			}
		case err != nil:
			t.Errorf("block %d: its Put failed, then Get: %v", k, err)
		case old == nil:
			t.Errorf("block %d: its Put failed, yet it is served (%d bytes)", k, n)
		case !bytes.Equal(buf[:n], old):
			t.Errorf("block %d: its Put failed, and what is served is not its old copy", k)
		default:
			m.want[k] = old // still held as it was
		}
	}
	m.check(t, s, c.maxBytes, true)
	if c.reopen == nil {
		return
	}
	s2 := c.reopen(t, s)
	t.Cleanup(func() { s2.Close() })
	keys, _ := s2.(store.Recoverer).Blocks()
	for _, k := range keys {
		d, wasDurable := durable[k]
		w, accepted := m.want[k]
		if !wasDurable && !accepted {
			t.Errorf("reopened: block %d, written only by a failed write, is back", k)
			continue
		}
		if n, err := s2.Get(k, buf); err != nil || (!bytes.Equal(buf[:n], d) && !bytes.Equal(buf[:n], w)) {
			t.Errorf("reopened: block %d is listed, and Get gives %d bytes that are no copy it had, %v", k, n, err)
		}
	}
	// What was durable before the fault and not reported is intact; what
	// was reported is gone or, being over-reported, its durable copy.
	for k, old := range durable {
		n, err := s2.Get(k, buf)
		if _, rep := m.reported[k]; rep || prev[k] != nil {
			if err == nil && !bytes.Equal(buf[:n], old) {
				t.Errorf("reopened: block %d is served, neither absent nor its durable copy", k)
			}
			continue
		}
		if want, ok := m.want[k]; ok && bytes.Equal(want, old) && (err != nil || !bytes.Equal(buf[:n], old)) {
			t.Errorf("reopened: block %d, durable before the fault, is lost: %v", k, err)
		}
	}
	for k, want := range m.want {
		if _, ok := durable[k]; ok || m.reported[k] != "" {
			continue
		}
		// Accepted during the fault and not reported: it must be intact
		// if it is there at all, and the store must then have said nothing.
		if n, err := s2.Get(k, buf); err == nil && !bytes.Equal(buf[:n], want) {
			t.Errorf("reopened: block %d, written during the fault, is served corrupt", k)
		}
	}
}

func clone(m map[int32][]byte) map[int32][]byte {
	out := make(map[int32][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// lostKey: a block lost behind the store's back is never served: the
// next Get says so (ErrNotStored), or Flush finds it and Lost reports it;
// either way it is no longer held.
func lostKey(t *testing.T, s store.Store, c config) {
	m := newModel()
	for k := int32(0); k < 8; k++ {
		m.put(t, s, k, pattern(k, 0, c.maxBytes/2+int(k)))
	}
	m.flush(t, s, false)
	buf := make([]byte, c.maxBytes)
	c.lose(t, s, 3)
	if n, err := s.Get(3, buf); !errors.Is(err, store.ErrNotStored) {
		t.Errorf("block 3 lost behind the store's back: Get gives %d bytes, %v; want ErrNotStored", n, err)
	}
	if s.Has(3) {
		t.Error("block 3: Get found it lost, Has still true")
	}
	m.reported[3] = "lost at Get"
	c.lose(t, s, 5)
	if _, ok := s.(store.LossReporter); ok {
		if f, ok := s.(store.Flusher); ok {
			_ = f.Flush() // may fail: the server may be gone
		}
		m.collect(s)
		if m.reported[5] != "lost" {
			t.Errorf("block 5 lost behind the store's back: Flush and Lost did not report it (reported: %v)", m.reported)
		}
	}
	m.check(t, s, c.maxBytes, true)
}

// evicts: a store that evicts on its own reports every block it evicted,
// and serves every other one intact.
func evicts(t *testing.T, s store.Store, c config) {
	m := newModel()
	if c.arm != nil {
		c.arm(t, s)
	}
	for k := range int32(c.evicts) {
		m.put(t, s, k, pattern(k, 0, c.maxBytes))
	}
	m.flush(t, s, false)
	if len(m.reported) == 0 {
		t.Fatalf("%d blocks of %d bytes were to make the store evict: it reported nothing", c.evicts, c.maxBytes)
	}
	m.check(t, s, c.maxBytes, false)
	// It still takes blocks.
	m.put(t, s, int32(c.evicts), pattern(int32(c.evicts), 0, 10))
	m.check(t, s, c.maxBytes, false)
}

// reopen: a durable store closed without a Flush holds, reopened, what it
// held (deletes included), and lists it.
func reopen(t *testing.T, s store.Store, c config) {
	m := newModel()
	for k := int32(0); k < 10; k++ {
		m.put(t, s, k, pattern(k, 0, 1+int(k)*(c.maxBytes-1)/9))
	}
	m.flush(t, s, false)
	m.del(s, 2)
	m.put(t, s, 5, pattern(5, 1, 333))
	m.put(t, s, 20, pattern(20, 0, 4097))
	s2 := c.reopen(t, s)
	t.Cleanup(func() { s2.Close() })
	keys, sizes := s2.(store.Recoverer).Blocks()
	var want []int32
	for k := range m.want {
		want = append(want, k)
	}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("reopened: Blocks lists %v, want %v", keys, want)
	}
	for i, k := range keys {
		if i < len(sizes) && sizes[i] != len(m.want[k]) {
			t.Errorf("reopened: block %d listed with %d bytes, want %d", k, sizes[i], len(m.want[k]))
		}
	}
	m.check(t, s2, c.maxBytes, false)
}

// crash: a durable store's crash image holds every block flushed before
// (that was not touched since) intact; of the writes in flight, torn or
// not, each block is intact or absent, never served damaged; what Blocks
// lists is what it serves.
func crash(t *testing.T, s store.Store, c config) {
	m := newModel()
	versions := map[int32][][]byte{}
	put := func(k int32, data []byte) {
		m.put(t, s, k, data)
		versions[k] = append(versions[k], data)
	}
	for k := int32(0); k < 10; k++ {
		put(k, pattern(k, 0, c.maxBytes/2+int(k)))
	}
	m.flush(t, s, false)
	// Crashed right after a Flush: it holds exactly what was flushed.
	s1 := c.crash(t, s)
	t.Cleanup(func() { s1.Close() })
	if keys, _ := s1.(store.Recoverer).Blocks(); len(keys) != 10 {
		t.Errorf("crashed after a Flush of 10 blocks: Blocks lists %v", keys)
	}
	m.check(t, s1, c.maxBytes, false)
	s1.Close()
	for k := int32(10); k < 40; k++ { // more than a write buffer: part of it reaches the disk
		put(k, pattern(k, 0, c.maxBytes-int(k)))
	}
	put(0, pattern(0, 1, 777))
	m.del(s, 1)
	s2 := c.crash(t, s)
	t.Cleanup(func() { s2.Close() })
	keys, sizes := s2.(store.Recoverer).Blocks()
	listed := map[int32]int{}
	for i, k := range keys {
		listed[k] = sizes[i]
	}
	buf := make([]byte, c.maxBytes+4096)
	for k := int32(0); k < 40; k++ {
		n, err := s2.Get(k, buf)
		size, isListed := listed[k]
		switch {
		case err == nil && !slices.ContainsFunc(versions[k], func(v []byte) bool { return bytes.Equal(v, buf[:n]) }):
			t.Errorf("after the crash: block %d is served damaged (%d bytes, no version written)", k, n)
		case err == nil && (!isListed || size != n || !s2.Has(k)):
			t.Errorf("after the crash: block %d is served (%d bytes) but listed %v with %d bytes, Has %v", k, n, isListed, size, s2.Has(k))
		case err != nil && !errors.Is(err, store.ErrNotStored):
			t.Errorf("after the crash: block %d: %v", k, err)
		case err != nil && (isListed || s2.Has(k)):
			t.Errorf("after the crash: block %d is listed or held, and Get says %v", k, err)
		case err != nil && k >= 2 && k < 10:
			t.Errorf("after the crash: block %d, flushed before it, is lost: %v", k, err)
		}
	}
}
