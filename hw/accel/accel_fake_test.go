package accel

import (
	"errors"
	"sync"
)

// fakeDev is an Device for tests: the emulated device's memory
// and copies, reported as a real GPU, counting calls, with switches that
// make pinning or copies fail. Its pinned memory is plain mmap (no mlock),
// so memlock limits of the test machine do not matter.
type fakeDev struct {
	Device // emulated: device memory, streams, events

	mu            sync.Mutex
	calls         map[string]int
	failPinned    bool // HostAlloc fails
	failRegister  bool // HostRegister fails
	failCopy      bool // copies fail
	failH2D       bool // copies to the device fail
	memlock       bool // MemlockAccounted
	pinned        map[*byte]int
	livePinned    int64 // bytes HostAlloc'd and not freed
	liveDevice    int   // Malloc'd and not freed
	registeredNow int64
}

func newFakeDev() *fakeDev {
	return &fakeDev{Device: NewEmulatedDevice("fake"), calls: map[string]int{}, pinned: map[*byte]int{}}
}

func (f *fakeDev) count(name string) {
	f.mu.Lock()
	f.calls[name]++
	f.mu.Unlock()
}

func (f *fakeDev) n(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

var errFake = errors.New("fake: out of memory")

func (f *fakeDev) Kind() string           { return "fake" }
func (f *fakeDev) Available() bool        { return true }
func (f *fakeDev) DeviceCount() int       { return 1 }
func (f *fakeDev) Name() string           { return "Fake GPU" }
func (f *fakeDev) MemlockAccounted() bool { return f.memlock }

func (f *fakeDev) Malloc(n int) (uintptr, error) {
	f.count("Malloc")
	p, err := f.Device.Malloc(n)
	if err == nil {
		f.mu.Lock()
		f.liveDevice++
		f.mu.Unlock()
	}
	return p, err
}

func (f *fakeDev) Free(p uintptr) error {
	f.count("Free")
	err := f.Device.Free(p)
	if err == nil {
		f.mu.Lock()
		f.liveDevice--
		f.mu.Unlock()
	}
	return err
}

func (f *fakeDev) HostAlloc(n int) ([]byte, error) {
	f.count("HostAlloc")
	f.mu.Lock()
	fail := f.failPinned
	f.mu.Unlock()
	if fail {
		return nil, errFake
	}
	mem, err := accelHostAlloc(n)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.pinned[&mem[0]] = n
	f.livePinned += int64(n)
	f.mu.Unlock()
	return mem, nil
}

func (f *fakeDev) HostFree(b []byte) error {
	f.count("HostFree")
	f.mu.Lock()
	n, ok := f.pinned[&b[0]]
	delete(f.pinned, &b[0])
	f.livePinned -= int64(n)
	f.mu.Unlock()
	if !ok {
		return errors.New("fake: HostFree of memory HostAlloc did not give")
	}
	return accelHostFree(b)
}

func (f *fakeDev) HostRegister(b []byte) error {
	f.count("HostRegister")
	if f.failRegister {
		return errors.New("fake: register refused")
	}
	f.mu.Lock()
	f.registeredNow += int64(len(b))
	f.mu.Unlock()
	return nil
}

func (f *fakeDev) HostUnregister(b []byte) error {
	f.count("HostUnregister")
	f.mu.Lock()
	f.registeredNow -= int64(len(b))
	f.mu.Unlock()
	return nil
}

// IsPinned knows nothing beyond what the pool tracks, as HIP.
func (f *fakeDev) IsPinned(b []byte) bool { return false }

func (f *fakeDev) CopyH2D(dst uintptr, src []byte, s AccelStream) error {
	f.count("CopyH2D")
	f.mu.Lock()
	fail := f.failCopy || f.failH2D
	f.mu.Unlock()
	if fail {
		return errors.New("fake: copy failed")
	}
	return f.Device.CopyH2D(dst, src, s)
}

func (f *fakeDev) CopyD2H(dst []byte, src uintptr, s AccelStream) error {
	f.count("CopyD2H")
	if f.failCopy {
		return errors.New("fake: copy failed")
	}
	return f.Device.CopyD2H(dst, src, s)
}

func (f *fakeDev) StreamSync(s AccelStream) error {
	f.count("StreamSync")
	return f.Device.StreamSync(s)
}

func (f *fakeDev) NewStream() (AccelStream, error) {
	f.count("NewStream")
	return f.Device.NewStream()
}

func (f *fakeDev) DestroyStream(s AccelStream) error {
	f.count("DestroyStream")
	return f.Device.DestroyStream(s)
}
