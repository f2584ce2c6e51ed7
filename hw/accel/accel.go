package accel

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// AccelStream is an accelerator stream handle (cudaStream_t); 0 is the default
// stream.
type AccelStream uintptr

// AccelEvent is an accelerator event handle (cudaEvent_t).
type AccelEvent uintptr

// Device is one accelerator (device 0 of a runtime) as kvsim
// drives it: memory on the device, page-locked host memory, and timed
// asynchronous copies between them. Device pointers are uintptr; host
// buffers must not be Go heap memory (async copies read them after the call
// returns): use HostAlloc, or mmap'd memory that HostRegister pinned, or
// mmap'd pageable memory for a pageable copy.
type Device interface {
	Kind() string     // "cuda", "hip", "emulated"
	Available() bool  // a real accelerator answered
	DeviceCount() int // devices the runtime sees
	Name() string     // device 0's name, e.g. "NVIDIA H200"
	DriverVersion() string
	RuntimeVersion() string
	MemInfo() (free, total int64, err error)

	Malloc(n int) (uintptr, error)
	Free(p uintptr) error
	HostAlloc(n int) ([]byte, error) // page-locked host memory
	HostFree(b []byte) error         // the slice HostAlloc returned
	HostRegister(b []byte) error     // pin existing (mmap'd) host memory
	HostUnregister(b []byte) error   // the slice HostRegister was given
	// IsPinned says whether the runtime knows b as page-locked (false
	// when it cannot tell).
	IsPinned(b []byte) bool

	NewStream() (AccelStream, error)
	DestroyStream(s AccelStream) error
	CopyH2D(dst uintptr, src []byte, s AccelStream) error // asynchronous
	CopyD2H(dst []byte, src uintptr, s AccelStream) error // asynchronous
	StreamSync(s AccelStream) error
	NewEvent() (AccelEvent, error)
	DestroyEvent(e AccelEvent) error
	Record(e AccelEvent, s AccelStream) error
	EventSync(e AccelEvent) error
	Elapsed(start, end AccelEvent) (time.Duration, error) // both recorded and complete
	Sync() error                                          // the whole device
	Close() error
}

// memlockAccounted is implemented by devices whose pinning counts against
// RLIMIT_MEMLOCK (mlock does; the CUDA and HIP drivers pin without it).
type memlockAccounted interface{ MemlockAccounted() bool }

// ProbeTry is one library the probe tried.
type ProbeTry struct {
	Backend string // "cuda", "hip"
	Path    string // a path or a loader name
	Err     string // "" for the one that was used
}

// Probe records how OpenDevice chose its device, for kvsim doctor.
type Probe struct {
	Backend string // "cuda", "hip" or "emulated"
	Lib     string // the library used ("" when emulated)
	Why     string // why the device is emulated ("" otherwise)
	Tries   []ProbeTry
}

// String is a multi-line report: the choice, then every path tried.
func (p Probe) String() string {
	var b strings.Builder
	switch {
	case p.Why != "":
		fmt.Fprintf(&b, "accelerator: emulated (%s)\n", p.Why)
	default:
		fmt.Fprintf(&b, "accelerator: %s via %s\n", p.Backend, p.Lib)
	}
	for _, t := range p.Tries {
		res := "ok"
		if t.Err != "" {
			res = t.Err
		}
		fmt.Fprintf(&b, "  %s %s: %s\n", t.Backend, t.Path, res)
	}
	return b.String()
}

// OpenDevice returns device 0 of the first runtime (CUDA, then HIP) whose
// library loads and reports at least one device, else an emulated device
// in host memory. KVSIM_CUDART and KVSIM_HIP name a library to try first
// (CUDA_VISIBLE_DEVICES picks the device); KVSIM_ACCEL=emulated skips the
// probe. Call it once per process and share the device.
func OpenDevice() (Device, Probe) {
	var p Probe
	if os.Getenv("KVSIM_ACCEL") == "emulated" {
		p.Why = "KVSIM_ACCEL=emulated"
	} else {
		dev, tries := openRuntimes()
		p.Tries = tries
		if dev != nil {
			p.Backend, p.Lib = dev.Kind(), tries[len(tries)-1].Path
			return dev, p
		}
		p.Why = "no CUDA runtime: " + probeWhy(tries)
	}
	p.Backend = "emulated"
	return NewEmulatedDevice(p.Why), p
}

// probeWhy condenses the tries into one reason: the most telling error
// (a library that loaded but saw no device beats "not found").
func probeWhy(tries []ProbeTry) string {
	if len(tries) == 0 {
		return "no runtime backend on this platform"
	}
	for _, t := range tries {
		if !strings.HasPrefix(t.Err, "not found") {
			return t.Backend + " " + t.Path + ": " + t.Err
		}
	}
	return fmt.Sprintf("no libcudart or libamdhip64 found (%d paths tried; set KVSIM_CUDART to its path)", len(tries))
}

// ErrNoAccelerator marks operations a device cannot do.
var ErrNoAccelerator = errors.New("no accelerator")

// emuDevice is host memory posing as a device: "device pointers" are
// offsets in a synthetic address space (never dereferenced), copies are
// memmoves, events read the wall clock. Pinned memory is mmap + mlock, so
// memlock limits bite as they would for real page-locking.
type emuDevice struct {
	why    string
	mu     sync.Mutex
	next   uintptr
	bases  []uintptr // sorted
	allocs map[uintptr][]byte
	events map[AccelEvent]time.Time
	nextEv AccelEvent
	pinned map[*byte]int // HostAlloc'd and registered buffers
}

// NewEmulatedDevice makes a host-memory device; why says why it is used.
func NewEmulatedDevice(why string) Device {
	return &emuDevice{why: why, next: 1 << 16, allocs: map[uintptr][]byte{}, events: map[AccelEvent]time.Time{}, pinned: map[*byte]int{}}
}

func (d *emuDevice) Kind() string           { return "emulated" }
func (d *emuDevice) Available() bool        { return false }
func (d *emuDevice) DeviceCount() int       { return 0 }
func (d *emuDevice) Name() string           { return "emulated (" + d.why + ")" }
func (d *emuDevice) DriverVersion() string  { return "" }
func (d *emuDevice) RuntimeVersion() string { return "" }
func (d *emuDevice) MemlockAccounted() bool { return true }

func (d *emuDevice) MemInfo() (free, total int64, err error) {
	return 0, 0, fmt.Errorf("emulated device: %w", ErrNoAccelerator)
}

func (d *emuDevice) Malloc(n int) (uintptr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("emulated malloc %d bytes: size must be > 0", n)
	}
	mem, err := accelHostAlloc(n)
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.next
	d.next += uintptr(n+4095) &^ 4095
	d.bases = append(d.bases, p)
	d.allocs[p] = mem
	return p, nil
}

func (d *emuDevice) Free(p uintptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	mem, ok := d.allocs[p]
	if !ok {
		return fmt.Errorf("emulated free %#x: not an allocation", p)
	}
	delete(d.allocs, p)
	i := sort.Search(len(d.bases), func(i int) bool { return d.bases[i] >= p })
	d.bases = append(d.bases[:i], d.bases[i+1:]...)
	return accelHostFree(mem)
}

// span finds the device memory [p, p+n).
func (d *emuDevice) span(p uintptr, n int) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.bases), func(i int) bool { return d.bases[i] > p }) - 1
	if i >= 0 {
		mem := d.allocs[d.bases[i]]
		off := int(p - d.bases[i])
		if off+n <= len(mem) {
			return mem[off : off+n], nil
		}
	}
	return nil, fmt.Errorf("emulated device: %#x+%d is outside any allocation", p, n)
}

func (d *emuDevice) HostAlloc(n int) ([]byte, error) {
	mem, err := accelHostAlloc(n)
	if err != nil {
		return nil, err
	}
	if err := accelMlock(mem); err != nil {
		accelHostFree(mem)
		return nil, err
	}
	d.mu.Lock()
	d.pinned[&mem[0]] = len(mem)
	d.mu.Unlock()
	return mem, nil
}

func (d *emuDevice) HostFree(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	d.mu.Lock()
	delete(d.pinned, &b[0])
	d.mu.Unlock()
	return accelHostFree(b)
}

func (d *emuDevice) HostRegister(b []byte) error {
	if len(b) == 0 {
		return errors.New("emulated register: empty buffer")
	}
	if err := accelMlock(b); err != nil {
		return err
	}
	d.mu.Lock()
	d.pinned[&b[0]] = len(b)
	d.mu.Unlock()
	return nil
}

func (d *emuDevice) HostUnregister(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	d.mu.Lock()
	delete(d.pinned, &b[0])
	d.mu.Unlock()
	return accelMunlock(b)
}

func (d *emuDevice) IsPinned(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.pinned[&b[0]]
	return ok
}

func (d *emuDevice) NewStream() (AccelStream, error)   { return 1, nil }
func (d *emuDevice) DestroyStream(s AccelStream) error { return nil }
func (d *emuDevice) StreamSync(s AccelStream) error    { return nil }
func (d *emuDevice) Sync() error                       { return nil }

func (d *emuDevice) CopyH2D(dst uintptr, src []byte, s AccelStream) error {
	mem, err := d.span(dst, len(src))
	if err != nil {
		return err
	}
	copy(mem, src)
	return nil
}

func (d *emuDevice) CopyD2H(dst []byte, src uintptr, s AccelStream) error {
	mem, err := d.span(src, len(dst))
	if err != nil {
		return err
	}
	copy(dst, mem)
	return nil
}

func (d *emuDevice) NewEvent() (AccelEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextEv++
	return d.nextEv, nil
}

func (d *emuDevice) DestroyEvent(e AccelEvent) error {
	d.mu.Lock()
	delete(d.events, e)
	d.mu.Unlock()
	return nil
}

func (d *emuDevice) Record(e AccelEvent, s AccelStream) error {
	d.mu.Lock()
	d.events[e] = time.Now()
	d.mu.Unlock()
	return nil
}

func (d *emuDevice) EventSync(e AccelEvent) error { return nil }

func (d *emuDevice) Elapsed(start, end AccelEvent) (time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t0, ok0 := d.events[start]
	t1, ok1 := d.events[end]
	if !ok0 || !ok1 {
		return 0, errors.New("emulated elapsed: event not recorded")
	}
	return t1.Sub(t0), nil
}

func (d *emuDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	for _, mem := range d.allocs {
		if err := accelHostFree(mem); err != nil && first == nil {
			first = err
		}
	}
	d.allocs, d.bases = map[uintptr][]byte{}, nil
	return first
}
