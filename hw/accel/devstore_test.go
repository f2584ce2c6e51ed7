package accel

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"kvsim/hw/store"
)

func devFill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func TestDeviceStoreHBM(t *testing.T) {
	f := newFakeDev()
	pool := NewPinnedBufferPool(f, PinnedPoolOptions{})
	defer pool.Close()
	const slot = 1 << 20
	s := NewDeviceStore(f, "hbm", slot, pool)
	if got := s.Backend(); got != "fake:Fake GPU (device memory)" {
		t.Fatalf("Backend %q", got)
	}
	// Go heap buffers: staged through the pool both ways.
	for b := int32(0); b < 200; b++ { // 200 blocks: more than one 64-slot chunk
		if err := s.Put(b, devFill(slot-int(b), byte(b))); err != nil {
			t.Fatal(err)
		}
	}
	if f.n("Malloc") != 4 {
		t.Fatalf("%d device chunks for 200 1 MiB blocks, want 4 of 64 MiB", f.n("Malloc"))
	}
	dst := make([]byte, slot)
	for b := int32(0); b < 200; b += 13 {
		n, err := s.Get(b, dst)
		if err != nil || n != slot-int(b) || !bytes.Equal(dst[:n], devFill(n, byte(b))) {
			t.Fatalf("block %d: n=%d err=%v equal=%v", b, n, err, err == nil && bytes.Equal(dst[:n], devFill(n, byte(b))))
		}
	}
	st := pool.Stats()
	if st.Allocs != 1 || st.Reuses < 200 || st.Fallbacks != 0 {
		t.Fatalf("staging did not reuse one pinned buffer: %+v", st)
	}
	if f.n("StreamSync") < f.n("CopyH2D")+f.n("CopyD2H") {
		t.Fatalf("not every copy was waited for: %d syncs, %d copies", f.n("StreamSync"), f.n("CopyH2D")+f.n("CopyD2H"))
	}
	// A pinned caller buffer is copied directly, no staging.
	pb, err := pool.Get(slot)
	if err != nil {
		t.Fatal(err)
	}
	copy(pb.Mem, devFill(slot, 99))
	reuses := pool.Stats().Reuses
	if err := s.Put(5, pb.Mem); err != nil { // overwrite
		t.Fatal(err)
	}
	clear(pb.Mem)
	if n, err := s.Get(5, pb.Mem); err != nil || n != slot || !bytes.Equal(pb.Mem, devFill(slot, 99)) {
		t.Fatalf("pinned round trip: %v", err)
	}
	if pool.Stats().Reuses != reuses || pool.Stats().Allocs != 1 {
		t.Fatalf("a pinned buffer was staged: %+v", pool.Stats())
	}
	pool.Put(pb)
	// Store semantics.
	if !s.Has(7) || s.Has(500) || s.Has(-1) {
		t.Fatal("Has")
	}
	s.Delete(7)
	if s.Has(7) {
		t.Fatal("Delete")
	}
	if _, err := s.Get(7, dst); !errors.Is(err, store.ErrNotStored) {
		t.Fatalf("Get deleted: %v", err)
	}
	if err := s.Put(1, make([]byte, slot+1)); err == nil {
		t.Fatal("oversized block accepted")
	}
	if _, err := s.Get(1, make([]byte, 10)); err == nil {
		t.Fatal("short buffer accepted")
	}
	if err := s.Put(300, nil); err != nil || !s.Has(300) {
		t.Fatalf("empty block: %v", err)
	}
	if n, err := s.Get(300, dst); n != 0 || err != nil {
		t.Fatalf("empty block get: %d %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if f.liveDevice != 0 || f.n("DestroyStream") != 1 {
		t.Fatalf("Close left %d device allocations, %d streams destroyed", f.liveDevice, f.n("DestroyStream"))
	}
}

func TestDeviceStoreCopyFailure(t *testing.T) {
	f := newFakeDev()
	s := NewDeviceStore(f, "hbm", 4096, nil) // a pool of its own
	defer s.Close()
	if err := s.Put(1, devFill(4096, 1)); err != nil {
		t.Fatal(err)
	}
	f.failCopy = true
	if err := s.Put(2, devFill(4096, 2)); err == nil || s.Has(2) {
		t.Fatalf("failed copy stored the block: %v", err)
	}
	if err := s.Put(1, devFill(4096, 3)); err == nil || s.Has(1) {
		t.Fatalf("failed overwrite kept a half-written block: %v", err)
	}
	f.failCopy = false
	if err := s.Put(2, devFill(4096, 2)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Get(2, make([]byte, 4096)); err != nil || n != 4096 {
		t.Fatal(err)
	}
}

func TestDeviceStoreStagingFallback(t *testing.T) {
	f := newFakeDev()
	f.failPinned = true // staging falls back to pageable, reported by the pool
	pool := NewPinnedBufferPool(f, PinnedPoolOptions{})
	defer pool.Close()
	s := NewDeviceStore(f, "hbm", 8192, pool)
	defer s.Close()
	if err := s.Put(0, devFill(8192, 4)); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 8192)
	if _, err := s.Get(0, dst); err != nil || !bytes.Equal(dst, devFill(8192, 4)) {
		t.Fatalf("round trip via pageable staging: %v", err)
	}
	if st := pool.Stats(); st.Fallbacks != 2 || st.FallbacksInUse != 0 {
		t.Fatalf("fallbacks not counted: %+v", st)
	}
}

func TestDeviceStorePinned(t *testing.T) {
	f := newFakeDev()
	s := NewDeviceStore(f, "pinned", 1<<20, nil)
	if got := s.Backend(); got != "fake pinned host memory" {
		t.Fatalf("Backend %q", got)
	}
	if err := s.Put(3, devFill(1000, 3)); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 1000)
	if n, err := s.Get(3, dst); err != nil || n != 1000 || !bytes.Equal(dst, devFill(1000, 3)) {
		t.Fatal(err)
	}
	if f.n("HostAlloc") != 1 || f.livePinned != 64<<20 {
		t.Fatalf("pinned chunk: %d HostAllocs, %d bytes", f.n("HostAlloc"), f.livePinned)
	}
	s.Close()
	if f.livePinned != 0 {
		t.Fatalf("Close leaked %d pinned bytes", f.livePinned)
	}
	// Pinning refused: Put says so (a pinned tier is never silently pageable).
	f.failPinned = true
	s = NewDeviceStore(f, "pinned", 4096, nil)
	defer s.Close()
	if err := s.Put(0, devFill(10, 0)); err == nil || !strings.Contains(err.Error(), "fake pinned host memory") {
		t.Fatalf("refused pinning: %v", err)
	}
}

func TestDeviceStoreEmulated(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("emulated stores use Linux arenas")
	}
	dev := NewEmulatedDevice("test")
	for _, kind := range []string{"hbm", "pinned"} {
		s := NewDeviceStore(dev, kind, 4096, nil)
		if s.Backend() != "emulated" {
			t.Fatalf("%s: Backend %q", kind, s.Backend())
		}
		if err := s.Put(1, devFill(4096, 1)); err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, 4096)
		if _, err := s.Get(1, dst); err != nil || !bytes.Equal(dst, devFill(4096, 1)) {
			t.Fatal(err)
		}
		s.Close()
	}
	bad := NewDeviceStore(dev, "ssd", 4096, nil)
	if err := bad.Put(0, nil); err == nil || !strings.Contains(bad.Backend(), "must be hbm or pinned") {
		t.Fatalf("bad kind: %v %q", err, bad.Backend())
	}
	bad.Close()
}
