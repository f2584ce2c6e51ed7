package accel

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestPinnedPoolReuse(t *testing.T) {
	f := newFakeDev()
	p := NewPinnedBufferPool(f, PinnedPoolOptions{})
	defer p.Close()
	b, err := p.Get(10000)
	if err != nil || !b.Pinned || len(b.Mem) != 10000 {
		t.Fatalf("Get: %v pinned=%v len=%d", err, b != nil && b.Pinned, len(b.Mem))
	}
	first := &b.Mem[0]
	p.Put(b)
	p.Put(b) // a second Put does nothing
	for range 5 {
		c, err := p.Get(8000) // fits the 12 KiB buffer
		if err != nil || !c.Pinned || &c.Mem[0] != first {
			t.Fatalf("reuse: %v, same buffer %v", err, err == nil && &c.Mem[0] == first)
		}
		p.Put(c)
	}
	st := p.Stats()
	if f.n("HostAlloc") != 1 || st.Allocs != 1 || st.Reuses != 5 || st.Buffers != 1 || st.InUse != 0 {
		t.Fatalf("HostAlloc=%d stats %+v", f.n("HostAlloc"), st)
	}
	if st.PinnedBytes != 12288 {
		t.Fatalf("pinned bytes %d, want 10000 rounded up to 12288", st.PinnedBytes)
	}
	if !strings.Contains(st.String(), "1/32 buffers") {
		t.Fatalf("String: %s", st)
	}
}

func TestPinnedPoolFirstFit(t *testing.T) {
	f := newFakeDev()
	p := NewPinnedBufferPool(f, PinnedPoolOptions{})
	defer p.Close()
	var bufs []*PinnedBuffer
	for _, n := range []int{4096, 64 << 10, 16 << 10, 1 << 20} {
		b, err := p.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	addr := make([]*byte, len(bufs))
	for i, b := range bufs {
		addr[i] = &b.Mem[0]
		p.Put(b)
	}
	// First fit in allocation order: 10 KiB takes the 64 KiB buffer (the
	// first that fits), not the closer 16 KiB one.
	b, _ := p.Get(10 << 10)
	if &b.Mem[0] != addr[1] {
		t.Fatalf("10 KiB did not take the first buffer that fits")
	}
	c, _ := p.Get(10 << 10)
	if &c.Mem[0] != addr[2] {
		t.Fatalf("second 10 KiB did not take the next fit (16 KiB)")
	}
	d, _ := p.Get(100)
	if &d.Mem[0] != addr[0] {
		t.Fatalf("100 B did not take the 4 KiB buffer")
	}
	if f.n("HostAlloc") != 4 {
		t.Fatalf("HostAlloc %d times, want 4", f.n("HostAlloc"))
	}
	p.Put(b)
	p.Put(c)
	p.Put(d)
}

func TestPinnedPoolCountBound(t *testing.T) {
	f := newFakeDev()
	var heard []string
	p := NewPinnedBufferPool(f, PinnedPoolOptions{MaxBuffers: 2, OnFallback: func(why string) { heard = append(heard, why) }})
	defer p.Close()
	a, _ := p.Get(4096)
	b, _ := p.Get(4096)
	c, err := p.Get(4096) // third while two are lent: pageable
	if err != nil || c.Pinned || len(c.Mem) != 4096 {
		t.Fatalf("fallback: err %v pinned %v", err, c != nil && c.Pinned)
	}
	st := p.Stats()
	if st.Fallbacks != 1 || st.FallbackBytes != 4096 || st.FallbacksInUse != 1 || !strings.Contains(st.LastFallback, "all 2 pinned buffers are in use") {
		t.Fatalf("fallback accounting: %+v", st)
	}
	if len(heard) != 1 || !strings.Contains(st.String(), "1 pageable fallbacks") {
		t.Fatalf("fallback not reported: heard %q, %s", heard, st)
	}
	c.Mem[0] = 1 // the fallback is real memory
	p.Put(c)
	if p.Stats().FallbacksInUse != 0 {
		t.Fatal("Put of a fallback not counted")
	}
	// With both free but too small, a larger request evicts the smallest.
	p.Put(a)
	p.Put(b)
	big, err := p.Get(1 << 20)
	if err != nil || !big.Pinned {
		t.Fatalf("evict to make room: %v", err)
	}
	st = p.Stats()
	if st.Evictions != 1 || st.Buffers != 2 || f.n("HostFree") != 1 {
		t.Fatalf("eviction: %+v HostFree=%d", st, f.n("HostFree"))
	}
	p.Put(big)
}

func TestPinnedPoolBudget(t *testing.T) {
	f := newFakeDev()
	p := NewPinnedBufferPool(f, PinnedPoolOptions{MaxBytes: 64 << 10})
	defer p.Close()
	a, _ := p.Get(32 << 10)
	b, _ := p.Get(32 << 10)
	c, err := p.Get(4096) // budget spent by lent buffers
	if err != nil || c.Pinned {
		t.Fatalf("over budget: err %v, pinned %v", err, c != nil && c.Pinned)
	}
	if why := p.Stats().LastFallback; !strings.Contains(why, "pinned budget of 64 KiB is in use") {
		t.Fatalf("reason %q", why)
	}
	p.Put(c)
	// A request larger than the whole budget: a reported fallback ...
	d, err := p.Get(1 << 20)
	if err != nil || d.Pinned {
		t.Fatalf("over whole budget: %v", err)
	}
	if why := p.Stats().LastFallback; !strings.Contains(why, "exceeds the pinned budget of 64 KiB") {
		t.Fatalf("reason %q", why)
	}
	p.Put(d)
	p.Put(a)
	p.Put(b)
	if st := p.Stats(); st.PinnedBytes > 64<<10 || st.Fallbacks != 2 {
		t.Fatalf("stats %+v", st)
	}
	// ... or, with NoFallback, an error.
	q := NewPinnedBufferPool(f, PinnedPoolOptions{MaxBytes: 64 << 10, NoFallback: true})
	defer q.Close()
	if _, err := q.Get(1 << 20); !errors.Is(err, ErrNotPinned) || !strings.Contains(err.Error(), "exceeds the pinned budget") {
		t.Fatalf("NoFallback over budget: %v", err)
	}
}

func TestPinnedPoolAllocFailure(t *testing.T) {
	f := newFakeDev()
	f.failPinned = true
	p := NewPinnedBufferPool(f, PinnedPoolOptions{})
	defer p.Close()
	b, err := p.Get(1 << 20)
	if err != nil || b.Pinned {
		t.Fatalf("pin failure should fall back: %v", err)
	}
	st := p.Stats()
	if st.Fallbacks != 1 || !strings.Contains(st.LastFallback, "out of memory") || st.Buffers != 0 {
		t.Fatalf("stats %+v", st)
	}
	p.Put(b)
	q := NewPinnedBufferPool(f, PinnedPoolOptions{NoFallback: true})
	if _, err := q.Get(4096); !errors.Is(err, ErrNotPinned) || !strings.Contains(err.Error(), "fake: out of memory") {
		t.Fatalf("NoFallback: %v", err)
	}
	q.Close()
	// Pinning works again: the pool pins again.
	f.failPinned = false
	c, err := p.Get(4096)
	if err != nil || !c.Pinned {
		t.Fatalf("recovery: %v", err)
	}
	p.Put(c)
}

func TestPinnedPoolMemlock(t *testing.T) {
	f := newFakeDev()
	f.memlock = true
	p := NewPinnedBufferPool(f, PinnedPoolOptions{MemlockBytes: 64 << 10, NoFallback: true})
	defer p.Close()
	if _, err := p.Get(128 << 10); err == nil || !strings.Contains(err.Error(), "exceeds RLIMIT_MEMLOCK of 64 KiB") {
		t.Fatalf("over memlock: %v", err)
	}
	a, err := p.Get(48 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(32 << 10); err == nil || !strings.Contains(err.Error(), "RLIMIT_MEMLOCK of 64 KiB is in use") {
		t.Fatalf("memlock in use: %v", err)
	}
	if f.n("HostAlloc") != 1 {
		t.Fatalf("the pool asked the device past the limit: %d HostAllocs", f.n("HostAlloc"))
	}
	p.Put(a)
	// The default reads RLIMIT_MEMLOCK only for devices it applies to.
	if q := NewPinnedBufferPool(newFakeDev(), PinnedPoolOptions{}); q.Stats().MemlockLimit != -1 {
		t.Fatalf("memlock applied to a device that pins outside it")
	}
}

func TestPinnedPoolRegisterHost(t *testing.T) {
	f := newFakeDev()
	p := NewPinnedBufferPool(f, PinnedPoolOptions{})
	mem, err := accelHostAlloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer accelHostFree(mem)
	if p.IsPinned(mem[4096:8192]) {
		t.Fatal("unregistered memory reported pinned")
	}
	if err := p.RegisterHost(mem); err != nil {
		t.Fatal(err)
	}
	if !p.IsPinned(mem[4096:8192]) || !p.IsPinned(mem) || p.Stats().RegisteredBytes != 1<<20 {
		t.Fatalf("registered memory not known: %+v", p.Stats())
	}
	if err := p.UnregisterHost(mem[:4096]); err == nil {
		t.Fatal("unregister of a range never registered succeeded")
	}
	if err := p.UnregisterHost(mem); err != nil || p.IsPinned(mem) || f.registeredNow != 0 {
		t.Fatalf("unregister: %v", err)
	}
	// A refusal is an error to report, not a crash.
	f.failRegister = true
	if err := p.RegisterHost(mem); err == nil || !strings.Contains(err.Error(), "register refused") {
		t.Fatalf("refused register: %v", err)
	}
	f.failRegister = false
	// Registration counts against an applied memlock cap.
	f.memlock = true
	q := NewPinnedBufferPool(f, PinnedPoolOptions{MemlockBytes: 512 << 10})
	if err := q.RegisterHost(mem); !errors.Is(err, ErrNotPinned) {
		t.Fatalf("register over memlock: %v", err)
	}
	// Close unregisters what is still registered.
	if err := p.RegisterHost(mem); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil || f.registeredNow != 0 {
		t.Fatalf("close: %v, %d bytes left registered", err, f.registeredNow)
	}
}

func TestPinnedPoolCloseFreesAll(t *testing.T) {
	f := newFakeDev()
	p := NewPinnedBufferPool(f, PinnedPoolOptions{})
	a, _ := p.Get(4096)
	b, _ := p.Get(8192)
	p.Put(a)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if f.livePinned != 8192 {
		t.Fatalf("after Close with one lent: %d bytes live, want 8192", f.livePinned)
	}
	p.Put(b) // freed on return to a closed pool
	if f.livePinned != 0 {
		t.Fatalf("leak: %d bytes", f.livePinned)
	}
	if _, err := p.Get(1); err == nil {
		t.Fatal("Get on a closed pool succeeded")
	}
	if _, err := p.Get(0); err == nil {
		t.Fatal("Get(0) succeeded")
	}
}

func TestPinnedPoolConcurrent(t *testing.T) {
	f := newFakeDev()
	p := NewPinnedBufferPool(f, PinnedPoolOptions{MaxBuffers: 4, MaxBytes: 1 << 20})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				b, err := p.Get(4096 * (1 + (g+i)%8))
				if err != nil {
					t.Error(err)
					return
				}
				b.Mem[0] = byte(g)
				p.Put(b)
			}
		}()
	}
	wg.Wait()
	st := p.Stats()
	if st.InUse != 0 || st.FallbacksInUse != 0 || st.Buffers > 4 || st.PinnedBytes > 1<<20 {
		t.Fatalf("stats %+v", st)
	}
	if st.Allocs+st.Reuses+st.Fallbacks != 1600 {
		t.Fatalf("requests unaccounted: %+v", st)
	}
	p.Close()
	if f.livePinned != 0 {
		t.Fatalf("leak: %d bytes", f.livePinned)
	}
}
