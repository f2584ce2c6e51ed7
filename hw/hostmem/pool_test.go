//go:build linux

package hostmem

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kvsim/hw/internal/hwtest"
	"kvsim/hw/ioengine"
)

func newTestPool(t *testing.T, o PoolOptions) *Pool {
	t.Helper()
	p, err := NewPool(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		hwtest.Released(t, bufAddr(p.Bytes()), len(p.Bytes()), p.Close)
	})
	return p
}

func TestPool4K(t *testing.T) {
	probeLeaks(t)
	p := newTestPool(t, PoolOptions{Size: 3<<20 + 1, Name: "kvsim-test"})
	if p.Backend() != "memfd+4K" || p.Fallback() != "" || p.PageSize() != 4096 {
		t.Errorf("backend %q fallback %q page %d", p.Backend(), p.Fallback(), p.PageSize())
	}
	if p.Size() != 3<<20+4096 || len(p.Bytes()) != int(p.Size()) {
		t.Errorf("size %d, want rounded up to a page", p.Size())
	}
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", p.Fd()))
	if err != nil || !strings.Contains(link, "memfd:kvsim-test") {
		t.Errorf("fd %d is %q, %v", p.Fd(), link, err)
	}
	mem := p.Bytes()
	mem[0], mem[len(mem)-1] = 1, 2

	// The same pages through the fd: MAP_SHARED, not a private copy.
	got := make([]byte, 1)
	if _, err := unix.Pread(p.Fd(), got, int64(len(mem)-1)); err != nil || got[0] != 2 {
		t.Errorf("read through the memfd: %v, %v", got, err)
	}
}

func TestPoolOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		o    PoolOptions
		want string
	}{
		{PoolOptions{}, "pool size 0: must be > 0"},
		{PoolOptions{Size: 1, Hugepages: "yes"}, `hugepages "yes": must be off, try or require`},
		{PoolOptions{Size: 1, Hugepages: "try", HugepageSize: "4MB"}, `hugepage size "4MB": must be 2MB or 1GB`},
	} {
		if _, err := NewPool(c.o); err == nil || err.Error() != c.want {
			t.Errorf("NewPool(%+v) = %v, want %q", c.o, err, c.want)
		}
	}
}

// TestPoolArenaIO: the pool's view is a registered buffer for io_uring, so
// SSD I/O goes straight between the pool and a file.
func TestPoolArenaIO(t *testing.T) {
	probeLeaks(t)
	p := newTestPool(t, PoolOptions{Size: 4 << 20, Hugepages: "try"})
	view := p.Arena()
	e, _, err := ioengine.NewEngine("io_uring", 4, view)
	probeNeed(t, err == nil, "io_uring unavailable: %v", err)
	defer e.Close()
	dir := probeDiskDir(t)
	f, _, err := ioengine.OpenDirect(filepath.Join(dir, "pool-io"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := p.Bytes()
	for i := range mem[:1<<20] {
		mem[i] = byte(i * 3)
	}
	ops := []ioengine.Op{{Write: true, FD: int(f.Fd()), Buf: mem[:1<<20]}}
	if err := e.Do(ops); err != nil {
		t.Fatal(err)
	}
	ops[0].Write, ops[0].Buf = false, mem[2<<20:3<<20]
	if err := e.Do(ops); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem[:1<<20], mem[2<<20:3<<20]) {
		t.Error("bytes differ")
	}
	if reg, n := ioengine.FixedOps(e); !reg || n != 2 {
		t.Errorf("registered %v, fixed ops %d", reg, n)
	}
	if err := view.Close(); err != nil || p.Bytes() == nil {
		t.Error("closing the view touched the pool")
	}
	mem[0] = 7 // still mapped
}

func TestSlots(t *testing.T) {
	a, err := ioengine.NewArena(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := NewSlots(a.Bytes()[:10*4096+100], 4096)
	if s.Cap() != 10 || s.InUse() != 0 || s.SlotBytes() != 4096 {
		t.Fatalf("cap %d in use %d", s.Cap(), s.InUse())
	}
	var got []int
	for {
		i, ok := s.Alloc()
		if !ok {
			break
		}
		got = append(got, i)
		b := s.Slot(i)
		if len(b) != 4096 || cap(b) != 4096 || bufAddr(b)%4096 != 0 {
			t.Fatalf("slot %d: len %d cap %d", i, len(b), cap(b))
		}
		b[0] = byte(i)
	}
	if fmt.Sprint(got) != "[0 1 2 3 4 5 6 7 8 9]" || s.InUse() != 10 {
		t.Fatalf("allocated %v, in use %d", got, s.InUse())
	}
	s.Free(3)
	s.Free(7)
	if i, _ := s.Alloc(); i != 7 {
		t.Errorf("Alloc after Free(7) = %d, want 7 (most recently freed)", i)
	}
	if s.InUse() != 9 || s.Slot(3)[0] != 3 {
		t.Errorf("in use %d", s.InUse())
	}
	for _, bad := range []int{3, -1, 10} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Free(%d) did not panic", bad)
				}
			}()
			s.Free(bad)
		}()
	}
	if n := testing.AllocsPerRun(100, func() {
		i, _ := s.Alloc()
		s.Free(i)
	}); n != 0 {
		t.Errorf("Alloc+Free allocates %.1f times", n)
	}
}

func BenchmarkSlots(b *testing.B) {
	s := NewSlots(make([]byte, 1024*4096), 4096)
	b.ReportAllocs()
	for b.Loop() {
		i, _ := s.Alloc()
		s.Free(i)
	}
}
