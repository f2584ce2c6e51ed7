//go:build linux

package ioengine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"kvsim/hw/internal/hwtest"
)

func TestUringABI(t *testing.T) {
	var p uringParams
	var s uringSQE
	var c uringCQE
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"params", unsafe.Sizeof(p), 120},
		{"params.features", unsafe.Offsetof(p.features), 20},
		{"params.sq_off", unsafe.Offsetof(p.sqOff), 40},
		{"params.cq_off", unsafe.Offsetof(p.cqOff), 80},
		{"sq_off.array", unsafe.Offsetof(p.sqOff.array), 24},
		{"cq_off.cqes", unsafe.Offsetof(p.cqOff.cqes), 20},
		{"sqe", unsafe.Sizeof(s), 64},
		{"sqe.fd", unsafe.Offsetof(s.fd), 4},
		{"sqe.off", unsafe.Offsetof(s.off), 8},
		{"sqe.addr", unsafe.Offsetof(s.addr), 16},
		{"sqe.len", unsafe.Offsetof(s.len), 24},
		{"sqe.user_data", unsafe.Offsetof(s.userData), 32},
		{"sqe.buf_index", unsafe.Offsetof(s.bufIndex), 40},
		{"cqe", unsafe.Sizeof(c), 16},
		{"cqe.res", unsafe.Offsetof(c.res), 8},
	} {
		if f.got != f.want {
			t.Errorf("%s: %d, want %d", f.name, f.got, f.want)
		}
	}
}

// testEngines are the engines every I/O test runs on: pread, io_uring with
// the arenas registered, and io_uring without.
func testEngines(t *testing.T, qd int, arenas ...*Arena) []Engine {
	t.Helper()
	p, _, err := NewEngine("pread", qd)
	if err != nil {
		t.Fatal(err)
	}
	reg, reason, err := NewEngine("io_uring", qd, arenas...)
	probeNeed(t, err == nil, "io_uring unavailable: %v", err)
	if reason != "" {
		t.Logf("io_uring: %s", reason)
	}
	plain, _, err := NewEngine("io_uring", qd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Engine{p, reg, plain} {
		t.Cleanup(func() { e.Close() })
	}
	return []Engine{p, reg, plain}
}

func engineLabel(e Engine) string {
	if u, ok := e.(*uring); ok && u.Registered() {
		return "io_uring+registered"
	}
	return e.Name()
}

func newTestArena(t *testing.T, size int) *Arena {
	t.Helper()
	a, err := NewArena(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		hwtest.Released(t, hwtest.Addr(a.Bytes()), len(a.Bytes()), a.Close)
	})
	return a
}

// ioCase is one op of a script: where in the file and in the arena.
type ioCase struct {
	off  int64
	mem  int // offset of the buffer in its arena half
	size int
}

// TestEnginesAgree writes with every engine and reads back with every
// engine, on a buffered file with odd offsets, sizes and buffer addresses
// and on an O_DIRECT file with aligned ones, and checks the bytes.
func TestEnginesAgree(t *testing.T) {
	probeLeaks(t)
	dir := probeDiskDir(t)
	const half = 8 << 20
	a := newTestArena(t, 2*half)
	engines := testEngines(t, 8, a)
	mem := a.Bytes()
	scripts := map[bool][]ioCase{
		false: {{1, 3, 1000}, {5000, 4099, 70001}, {100003, 200000, 65536 + 17}, {3 << 20, 1 << 20, 1<<20 + 5}, {2000, 7 << 20, 9}},
		true:  {{0, 0, 4096}, {4096, 8192, 512}, {8192, 1 << 20, 64 << 10}, {1 << 20, 2 << 20, 1 << 20}, {3 << 20, 4<<20 + 512, 3 << 20}},
	}
	for _, direct := range []bool{false, true} {
		path := filepath.Join(dir, fmt.Sprintf("agree-%v", direct))
		var f *os.File
		var err error
		if direct {
			var al Align
			f, al, err = OpenDirect(path, os.O_RDWR|os.O_CREATE, 0o600)
			if err == nil {
				for _, c := range scripts[true] {
					if err := CheckAligned(mem[c.mem:c.mem+c.size], c.off, al); err != nil {
						t.Fatalf("script is not aligned for this disk: %v", err)
					}
				}
			}
		} else {
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		rng := rand.New(rand.NewPCG(1, 2))
		for _, w := range engines {
			for _, r := range engines {
				name := fmt.Sprintf("direct=%v/%s->%s", direct, engineLabel(w), engineLabel(r))
				for i := range mem[:half] {
					mem[i] = byte(rng.Uint32())
				}
				clear(mem[half:])
				var ops []Op
				for _, c := range scripts[direct] {
					ops = append(ops, Op{Write: true, FD: fd, Off: c.off, Buf: mem[c.mem : c.mem+c.size]})
				}
				if err := w.Do(ops); err != nil {
					t.Fatalf("%s: write: %v", name, err)
				}
				for i := range ops {
					if ops[i].N != len(ops[i].Buf) {
						t.Fatalf("%s: write %d: N=%d, want %d", name, i, ops[i].N, len(ops[i].Buf))
					}
					ops[i].Write, ops[i].Buf = false, mem[half+scripts[direct][i].mem:half+scripts[direct][i].mem+scripts[direct][i].size]
					ops[i].N = -1
				}
				if err := r.Do(ops); err != nil {
					t.Fatalf("%s: read: %v", name, err)
				}
				for i, c := range scripts[direct] {
					if ops[i].N != c.size || !bytes.Equal(mem[c.mem:c.mem+c.size], mem[half+c.mem:half+c.mem+c.size]) {
						t.Fatalf("%s: op %d (%d bytes at %d): N=%d, bytes differ", name, i, c.size, c.off, ops[i].N)
					}
				}
				if !direct { // and through the page cache, independently
					got, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					for i, c := range scripts[false] {
						if !bytes.Equal(got[c.off:c.off+int64(c.size)], mem[c.mem:c.mem+c.size]) {
							t.Fatalf("%s: op %d: file content differs", name, i)
						}
					}
				}
			}
		}
	}
	for _, e := range engines {
		if u, ok := e.(*uring); ok && u.Registered() && u.fixedOps == 0 {
			t.Error("registered engine sent no READ_FIXED/WRITE_FIXED")
		} else if ok && !u.Registered() && u.fixedOps != 0 {
			t.Error("unregistered engine sent fixed ops")
		}
	}
}

// TestEnginesMisaligned: on an O_DIRECT file every engine reports EINVAL
// for the bad ops alone, and CheckAligned says why in words.
func TestEnginesMisaligned(t *testing.T) {
	probeLeaks(t)
	dir := probeDiskDir(t)
	a := newTestArena(t, 4<<20)
	engines := testEngines(t, 4, a)
	path := filepath.Join(dir, "misaligned")
	f, al, err := OpenDirect(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if al.Offset < 512 || al.Mem < 1 {
		t.Fatalf("alignment %+v", al)
	}
	mem := a.Bytes()
	cases := []struct {
		off  int64
		buf  []byte
		want string
	}{
		{int64(al.Offset) + 1, mem[:4096], fmt.Sprintf("offset %d is not a multiple of the %d-byte direct-I/O alignment of %s", al.Offset+1, al.Offset, path)},
		{0, mem[:1000], fmt.Sprintf("length 1000 is not a multiple of the %d-byte direct-I/O alignment of %s", al.Offset, path)},
		{0, mem[al.Mem/2+1 : al.Mem/2+1+4096], "is not a multiple of the"},
		{4096, mem[8192 : 8192+4096], ""},
	}
	for _, e := range engines {
		ops := make([]Op, len(cases))
		for i, c := range cases {
			ops[i] = Op{Write: true, FD: int(f.Fd()), Off: c.off, Buf: c.buf}
		}
		err := e.Do(ops)
		if !errors.Is(err, unix.EINVAL) || err != ops[0].Err {
			t.Errorf("%s: Do = %v, want op 0's EINVAL", engineLabel(e), err)
		}
		for i, c := range cases {
			if c.want == "" {
				if ops[i].Err != nil || ops[i].N != len(c.buf) {
					t.Errorf("%s: good op: N=%d err=%v", engineLabel(e), ops[i].N, ops[i].Err)
				}
				continue
			}
			if !errors.Is(ops[i].Err, unix.EINVAL) || ops[i].N != 0 {
				t.Errorf("%s: case %d: N=%d err=%v, want EINVAL", engineLabel(e), i, ops[i].N, ops[i].Err)
			}
		}
	}
	for i, c := range cases {
		err := CheckAligned(c.buf, c.off, al)
		if c.want == "" {
			if err != nil {
				t.Errorf("case %d: CheckAligned = %v", i, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrMisaligned) {
			t.Errorf("case %d: CheckAligned = %v, want %q", i, err, c.want)
		}
	}
}

// TestEnginesShortRead: a read past the end of file stops at it, with
// Op.N saying how much came and io.ErrUnexpectedEOF, the same on every
// engine, with and without O_DIRECT.
func TestEnginesShortRead(t *testing.T) {
	probeLeaks(t)
	dir := probeDiskDir(t)
	a := newTestArena(t, 2<<20)
	engines := testEngines(t, 4, a)
	path := filepath.Join(dir, "short")
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte(i % 251)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	mem := a.Bytes()
	for _, direct := range []bool{false, true} {
		var f *os.File
		var err error
		if direct {
			f, _, err = OpenDirect(path, os.O_RDONLY, 0)
		} else {
			f, err = os.Open(path)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range engines {
			clear(mem)
			ops := []Op{
				{FD: int(f.Fd()), Off: 0, Buf: mem[0:4096]},
				{FD: int(f.Fd()), Off: 8192, Buf: mem[8192 : 8192+4096]},
				{FD: int(f.Fd()), Off: 12288, Buf: mem[16384 : 16384+4096]},
				{FD: int(f.Fd()), Off: 4096, Buf: mem[4096:8192]},
			}
			err := e.Do(ops)
			name := fmt.Sprintf("direct=%v/%s", direct, engineLabel(e))
			if !errors.Is(err, io.ErrUnexpectedEOF) || err != ops[1].Err {
				t.Errorf("%s: Do = %v, want op 1's short read", name, err)
			}
			for i, want := range []int{4096, 10000 - 8192, 0, 4096} {
				if ops[i].N != want {
					t.Errorf("%s: op %d: N=%d, want %d (err %v)", name, i, ops[i].N, want, ops[i].Err)
				}
				if (want < 4096) != errors.Is(ops[i].Err, io.ErrUnexpectedEOF) {
					t.Errorf("%s: op %d: err %v", name, i, ops[i].Err)
				}
			}
			if !bytes.Equal(mem[:8192+10000-8192], data) {
				t.Errorf("%s: wrong bytes", name)
			}
		}
		f.Close()
	}
}

// TestStreamRefills: Stream refills a slot as soon as one completes, while
// the others are still in flight (reads from a pipe complete only when the
// test writes a byte). Signals sent meanwhile interrupt io_uring_enter,
// which must be retried.
func TestStreamRefills(t *testing.T) {
	probeLeaks(t)
	a := newTestArena(t, 2<<20)
	e, _, err := NewEngine("io_uring", 4, a)
	probeNeed(t, err == nil, "io_uring unavailable: %v", err)
	defer e.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])

	const n, qd = 12, 4
	var completed atomic.Int32
	stop := make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			for j := 0; j < 5; j++ {
				syscall.Kill(os.Getpid(), syscall.SIGURG) // interrupts the wait
				time.Sleep(2 * time.Millisecond)
			}
			unix.Write(p[1], []byte{byte('a' + i)})
			for int(completed.Load()) <= i {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}
	}()
	defer close(stop)
	mem := a.Bytes()
	inflight, maxInflight, refilledEarly := 0, 0, false
	got := make([]byte, 0, n)
	err = Stream(e, n, func(i int) Op {
		if i >= qd && inflight > 0 {
			refilledEarly = true
		}
		inflight++
		maxInflight = max(maxInflight, inflight)
		return Op{FD: p[0], Off: 0, Buf: mem[i*4096 : i*4096+1]}
	}, func(i int, op *Op) {
		inflight--
		if op.Err != nil || op.N != 1 {
			t.Errorf("op %d: N=%d err=%v", i, op.N, op.Err)
		}
		got = append(got, op.Buf[0])
		completed.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || maxInflight != qd || !refilledEarly {
		t.Errorf("got %d completions, at most %d in flight (want %d), refilled while others in flight: %v", len(got), maxInflight, qd, refilledEarly)
	}
	if string(got) != "abcdefghijkl" {
		t.Errorf("bytes arrived as %q", got)
	}
}

func TestNewEngine(t *testing.T) {
	probeLeaks(t)
	for _, c := range []struct {
		mode, name string
		uring      bool
	}{{"pread", "pread/pwrite", false}, {"io_uring", "io_uring", true}, {"auto", "io_uring", true}} {
		e, reason, err := NewEngine(c.mode, 0)
		if c.uring && err != nil {
			probeNeed(t, false, "io_uring unavailable: %v", err)
		}
		if err != nil || e.Name() != c.name || reason != "" {
			t.Errorf("NewEngine(%q) = %v, %q, %v; want %s", c.mode, e, reason, err, c.name)
			continue
		}
		if u, ok := e.(*uring); ok && u.QueueDepth() != DefaultQueueDepth {
			t.Errorf("queue depth %d, want %d", u.QueueDepth(), DefaultQueueDepth)
		}
		e.Close()
		e.Close() // twice is fine
	}
	for _, c := range []struct {
		mode string
		qd   int
		want string
	}{{"fast", 1, `engine "fast": must be auto, io_uring or pread`}, {"auto", MaxQueueDepth + 1, "queue depth 4097: must be at most 4096"}} {
		if _, _, err := NewEngine(c.mode, c.qd); err == nil || err.Error() != c.want {
			t.Errorf("NewEngine(%q, %d) = %v, want %q", c.mode, c.qd, err, c.want)
		}
	}

	// A kernel that refuses io_uring (sysctl, seccomp, gVisor).
	saved := uringSetup
	uringSetup = func(uint32, *uringParams) (int, error) { return -1, unix.EPERM }
	defer func() { uringSetup = saved }()
	e, reason, err := NewEngine("auto", 8)
	if err != nil || e.Name() != "pread/pwrite" || reason != "io_uring_setup: operation not permitted" {
		t.Errorf("auto without io_uring = %v, %q, %v", e, reason, err)
	}
	if _, _, err := NewEngine("io_uring", 8); err == nil || err.Error() != "io_uring_setup: operation not permitted" {
		t.Errorf("io_uring without io_uring: %v", err)
	}
}

// TestNewEngineDisabledSysctl turns io_uring off for real
// (kernel.io_uring_disabled=2, Linux 6.6+) and checks the fallback.
func TestNewEngineDisabledSysctl(t *testing.T) {
	const p = "/proc/sys/kernel/io_uring_disabled"
	old, err := os.ReadFile(p)
	if err != nil {
		probeLacks(t, "%v (kernel before 6.6)", err)
	}
	probeRoot(t)
	if err := os.WriteFile(p, []byte("2"), 0); err != nil {
		probeLacks(t, "cannot write %s: %v", p, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(p, old, 0); err != nil {
			t.Errorf("restoring %s: %v", p, err)
		}
	})
	e, reason, err := NewEngine("auto", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Name() != "pread/pwrite" || !strings.HasPrefix(reason, "io_uring_setup: ") {
		t.Errorf("with io_uring_disabled=2: %s, reason %q", e.Name(), reason)
	}
	t.Logf("fallback reason: %s", reason)
}

// wrapped hides the engine's Stream method, as a wrapper such as
// FaultEngine does: Stream must then fall back to batches of Do.
type wrapped struct{ Engine }

func TestStreamOverDo(t *testing.T) {
	probeLeaks(t)
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := newTestArena(t, 2<<20)
	mem := a.Bytes()
	for i := range mem[:100*512] {
		mem[i] = byte(i / 512)
	}
	for _, e := range []Engine{NewPreadEngine(), wrapped{NewPreadEngine()}} {
		seen := make([]bool, 100)
		err := Stream(e, 100, func(i int) Op {
			return Op{Write: true, FD: int(f.Fd()), Off: int64(i) * 512, Buf: mem[i*512 : (i+1)*512]}
		}, func(i int, op *Op) {
			if seen[i] || op.N != 512 || op.Err != nil {
				t.Errorf("op %d: seen %v N %d err %v", i, seen[i], op.N, op.Err)
			}
			seen[i] = true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got, mem[:100*512]) {
		t.Error("file content differs")
	}
}

// TestUringEnterFails: a failed io_uring_enter (at the first submit, with
// ops in flight, or while waiting for completions) does not lose the ops
// of that call, and the engine goes on with pread/pwrite, saying why.
func TestUringEnterFails(t *testing.T) {
	for _, c := range []struct {
		name         string
		size, failAt int
	}{
		{"first submit", 64 << 10, 1},
		{"ops in flight", 64 << 10, 5},
		{"waiting", 4096, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			probeLeaks(t)
			a := newTestArena(t, 4<<20)
			e, _, err := NewEngine("io_uring", 8, a)
			probeNeed(t, err == nil, "io_uring unavailable: %v", err)
			defer e.Close()
			saved, savedLog := uringEnter, engineLogf
			defer func() { uringEnter, engineLogf = saved, savedLog }()
			var logged []string
			engineLogf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
			calls := 0
			uringEnter = func(fd int, sub, minc, flags uint32) (int, unix.Errno) {
				calls++
				if calls == c.failAt {
					return 0, unix.EBADF
				}
				return saved(fd, sub, minc, flags)
			}
			f, err := os.Create(filepath.Join(t.TempDir(), "f"))
			must(t, err)
			defer f.Close()
			mem := a.Bytes()
			const n = 16
			for i := range n * c.size {
				mem[i] = byte(i*7 + i>>12)
			}
			ops := make([]Op, n)
			for i := range ops {
				ops[i] = Op{Write: true, FD: int(f.Fd()), Off: int64(i * c.size), Buf: mem[i*c.size : (i+1)*c.size]}
			}
			if err := e.Do(ops); err != nil {
				t.Fatalf("Do: %v", err)
			}
			for i, op := range ops {
				if op.N != c.size || op.Err != nil {
					t.Fatalf("op %d: N=%d err=%v", i, op.N, op.Err)
				}
			}
			if calls < c.failAt {
				t.Fatalf("only %d enters: the fault was not hit", calls)
			}
			// The engine still works, and the bytes are there.
			back := mem[2<<20 : 2<<20+n*c.size]
			rd := []Op{{FD: int(f.Fd()), Buf: back}}
			if err := e.Do(rd); err != nil || !bytes.Equal(back, mem[:n*c.size]) {
				t.Fatalf("read back: %v, equal %v", err, bytes.Equal(back, mem[:n*c.size]))
			}
			u := e.(*uring)
			if e.Name() != "pread/pwrite (io_uring failed)" || !strings.Contains(u.FallbackReason(), "bad file descriptor") ||
				len(logged) != 1 || !strings.Contains(logged[0], "io_uring_enter: bad file descriptor") {
				t.Fatalf("name %q, reason %q, logged %q", e.Name(), u.FallbackReason(), logged)
			}
		})
	}
}
