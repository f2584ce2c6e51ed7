//go:build linux && (amd64 || arm64)

package accel

import (
	"bytes"
	"errors"
	"fmt"
	"kvsim/hw/internal/sys"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"kvsim/hw/hostmem"
)

// rtAPI is the part of the CUDA runtime kvsim calls; HIP's calls map one
// to one. Types follow the C ABI: int32 for error codes and enums, uintptr
// for size_t and handles, slices for host pointers (purego passes their
// address and keeps them alive for the call).
type rtAPI struct {
	getDeviceCount func(n *int32) int32
	setDevice      func(dev int32) int32
	malloc         func(p *uintptr, n uintptr) int32
	free           func(p uintptr) int32
	hostAlloc      func(p *unsafe.Pointer, n uintptr, flags uint32) int32
	freeHost       func(p []byte) int32
	hostRegister   func(p []byte, n uintptr, flags uint32) int32
	hostUnregister func(p []byte) int32
	memcpyH2D      func(dst uintptr, src []byte, n uintptr, kind int32, s uintptr) int32
	memcpyD2H      func(dst []byte, src uintptr, n uintptr, kind int32, s uintptr) int32
	streamCreate   func(s *uintptr, flags uint32) int32
	streamDestroy  func(s uintptr) int32
	streamSync     func(s uintptr) int32
	eventCreate    func(e *uintptr) int32
	eventDestroy   func(e uintptr) int32
	eventRecord    func(e, s uintptr) int32
	eventSync      func(e uintptr) int32
	eventElapsed   func(ms *float32, start, end uintptr) int32
	deviceSync     func() int32
	errorString    func(e int32) string
	driverVersion  func(v *int32) int32
	runtimeVersion func(v *int32) int32
	memGetInfo     func(free, total *uintptr) int32
	// Optional: looked up, nil when absent.
	errorName    func(e int32) string
	deviceProps  func(prop []byte, dev int32) int32          // CUDA: name is the first field
	deviceName   func(name []byte, n int32, dev int32) int32 // HIP
	pointerAttrs func(attr []byte, p []byte) int32           // CUDA: memory type is the first field
}

const (
	memcpyH2D       = 1 // cudaMemcpyHostToDevice, hipMemcpyHostToDevice
	memcpyD2H       = 2
	streamNonBlock  = 1 // cudaStreamNonBlocking: no implicit sync with stream 0
	memoryTypeHost  = 1 // cudaMemoryTypeHost
	devicePropBytes = 8192
)

type rtBinding struct {
	fn       any
	names    []string // tried in order
	optional bool
}

func rtBindings(a *rtAPI, kind string) []rtBinding {
	if kind == "hip" {
		return []rtBinding{
			{&a.getDeviceCount, []string{"hipGetDeviceCount"}, false},
			{&a.setDevice, []string{"hipSetDevice"}, false},
			{&a.malloc, []string{"hipMalloc"}, false},
			{&a.free, []string{"hipFree"}, false},
			{&a.hostAlloc, []string{"hipHostMalloc", "hipHostAlloc"}, false},
			{&a.freeHost, []string{"hipHostFree", "hipFreeHost"}, false},
			{&a.hostRegister, []string{"hipHostRegister"}, false},
			{&a.hostUnregister, []string{"hipHostUnregister"}, false},
			{&a.memcpyH2D, []string{"hipMemcpyAsync"}, false},
			{&a.memcpyD2H, []string{"hipMemcpyAsync"}, false},
			{&a.streamCreate, []string{"hipStreamCreateWithFlags"}, false},
			{&a.streamDestroy, []string{"hipStreamDestroy"}, false},
			{&a.streamSync, []string{"hipStreamSynchronize"}, false},
			{&a.eventCreate, []string{"hipEventCreate"}, false},
			{&a.eventDestroy, []string{"hipEventDestroy"}, false},
			{&a.eventRecord, []string{"hipEventRecord"}, false},
			{&a.eventSync, []string{"hipEventSynchronize"}, false},
			{&a.eventElapsed, []string{"hipEventElapsedTime"}, false},
			{&a.deviceSync, []string{"hipDeviceSynchronize"}, false},
			{&a.errorString, []string{"hipGetErrorString"}, false},
			{&a.driverVersion, []string{"hipDriverGetVersion"}, false},
			{&a.runtimeVersion, []string{"hipRuntimeGetVersion"}, false},
			{&a.memGetInfo, []string{"hipMemGetInfo"}, false},
			{&a.errorName, []string{"hipGetErrorName"}, true},
			{&a.deviceName, []string{"hipDeviceGetName"}, true},
		}
	}
	return []rtBinding{
		{&a.getDeviceCount, []string{"cudaGetDeviceCount"}, false},
		{&a.setDevice, []string{"cudaSetDevice"}, false},
		{&a.malloc, []string{"cudaMalloc"}, false},
		{&a.free, []string{"cudaFree"}, false},
		{&a.hostAlloc, []string{"cudaHostAlloc"}, false},
		{&a.freeHost, []string{"cudaFreeHost"}, false},
		{&a.hostRegister, []string{"cudaHostRegister"}, false},
		{&a.hostUnregister, []string{"cudaHostUnregister"}, false},
		{&a.memcpyH2D, []string{"cudaMemcpyAsync"}, false},
		{&a.memcpyD2H, []string{"cudaMemcpyAsync"}, false},
		{&a.streamCreate, []string{"cudaStreamCreateWithFlags"}, false},
		{&a.streamDestroy, []string{"cudaStreamDestroy"}, false},
		{&a.streamSync, []string{"cudaStreamSynchronize"}, false},
		{&a.eventCreate, []string{"cudaEventCreate"}, false},
		{&a.eventDestroy, []string{"cudaEventDestroy"}, false},
		{&a.eventRecord, []string{"cudaEventRecord"}, false},
		{&a.eventSync, []string{"cudaEventSynchronize"}, false},
		{&a.eventElapsed, []string{"cudaEventElapsedTime", "cudaEventElapsedTime_v2"}, false},
		{&a.deviceSync, []string{"cudaDeviceSynchronize"}, false},
		{&a.errorString, []string{"cudaGetErrorString"}, false},
		{&a.driverVersion, []string{"cudaDriverGetVersion"}, false},
		{&a.runtimeVersion, []string{"cudaRuntimeGetVersion"}, false},
		{&a.memGetInfo, []string{"cudaMemGetInfo"}, false},
		{&a.errorName, []string{"cudaGetErrorName"}, true},
		// CUDA 12 headers map cudaGetDeviceProperties to _v2; the plain
		// symbol keeps the CUDA 11 layout. Both start with char name[256].
		{&a.deviceProps, []string{"cudaGetDeviceProperties_v2", "cudaGetDeviceProperties"}, true},
		{&a.pointerAttrs, []string{"cudaPointerGetAttributes"}, true},
	}
}

// openRuntimes tries CUDA's then HIP's libraries in search order and
// returns the first that reports a device, with every try.
func openRuntimes() (Device, []ProbeTry) {
	var all []ProbeTry
	for _, b := range []struct {
		kind   string
		search []string
	}{{"cuda", append(cudartSearch(os.Getenv), FindCUDARuntime()...)}, {"hip", hipSearch(os.Getenv)}} {
		for _, t := range expandSearch(b.kind, b.search) {
			if t.Err == "" {
				dev, err := openRuntime(b.kind, t.Path)
				if err == nil {
					if !strings.Contains(t.Path, "/") {
						if p := sys.LoadedLib(filepath.Base(t.Path)); p != "" {
							t.Path += " (" + p + ")"
						}
					}
					return dev, append(all, t)
				}
				t.Err = err.Error()
			}
			all = append(all, t)
		}
	}
	return nil, all
}

// rtDevice is device 0 of a CUDA or HIP runtime loaded with purego.
type rtDevice struct {
	kind, lib string
	api       rtAPI
	count     int
	name      string
	drv, rtv  string
	closed    atomic.Bool
}

// openRuntime loads one library. A library is never unloaded, even when it
// reports no device: the runtime registers exit handlers that would run
// into unmapped code.
func openRuntime(kind, path string) (*rtDevice, error) {
	// dlerror is per OS thread: read it on the thread that called dlopen.
	runtime.LockOSThread()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	runtime.UnlockOSThread()
	if err != nil {
		msg := err.Error()
		if !strings.Contains(path, "/") && (strings.Contains(msg, "No such file") || strings.TrimSpace(msg) == "") {
			return nil, errors.New("not found by the loader")
		}
		return nil, fmt.Errorf("dlopen: %w", err)
	}
	d := &rtDevice{kind: kind, lib: path}
	for _, b := range rtBindings(&d.api, kind) {
		found := false
		for _, n := range b.names {
			// Look the symbol up first: RegisterLibFunc panics on a miss.
			if addr, err := purego.Dlsym(h, n); err == nil && addr != 0 {
				purego.RegisterFunc(b.fn, addr)
				found = true
				break
			}
		}
		if !found && !b.optional {
			return nil, fmt.Errorf("loaded, but symbol %s is missing", b.names[0])
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var n int32
	if rc := d.api.getDeviceCount(&n); rc != 0 {
		return nil, d.errf(rc, "GetDeviceCount")
	}
	if n < 1 {
		return nil, fmt.Errorf("loaded, but it sees 0 devices")
	}
	d.count = int(n)
	if rc := d.api.setDevice(0); rc != 0 {
		return nil, d.errf(rc, "SetDevice(0)")
	}
	var v int32
	if d.api.driverVersion(&v) == 0 {
		d.drv = d.version(v)
	}
	if d.api.runtimeVersion(&v) == 0 {
		d.rtv = d.version(v)
	}
	d.name = kind + " device 0"
	name := make([]byte, devicePropBytes)
	switch {
	case d.api.deviceProps != nil && d.api.deviceProps(name, 0) == 0:
	case d.api.deviceName != nil && d.api.deviceName(name, 256, 0) == 0:
	default:
		name = nil
	}
	if i := bytes.IndexByte(name, 0); i > 0 {
		d.name = string(name[:i])
	}
	return d, nil
}

// version renders CUDA's 1000*major+10*minor or HIP's
// major*10^7+minor*10^5+patch.
func (d *rtDevice) version(v int32) string {
	if d.kind == "hip" {
		return fmt.Sprintf("%d.%d.%d", v/10000000, v/100000%100, v%100000)
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

func (d *rtDevice) errf(rc int32, call string, args ...any) error {
	what := d.kind + call
	if len(args) > 0 {
		what += " " + fmt.Sprint(args...)
	}
	msg := d.api.errorString(rc)
	if d.api.errorName != nil {
		return fmt.Errorf("%s: %s (%s = %d)", what, msg, d.api.errorName(rc), rc)
	}
	return fmt.Errorf("%s: %s (error %d)", what, msg, rc)
}

// call runs f on a locked OS thread with device 0 current: the current
// device is per OS thread, and goroutines move between threads.
func (d *rtDevice) call(f func() int32, call string, args ...any) error {
	if d.closed.Load() {
		return fmt.Errorf("%s%s: device closed", d.kind, call)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if rc := d.api.setDevice(0); rc != 0 {
		return d.errf(rc, "SetDevice(0)")
	}
	if rc := f(); rc != 0 {
		return d.errf(rc, call, args...)
	}
	return nil
}

func (d *rtDevice) Kind() string           { return d.kind }
func (d *rtDevice) Available() bool        { return true }
func (d *rtDevice) DeviceCount() int       { return d.count }
func (d *rtDevice) Name() string           { return d.name }
func (d *rtDevice) DriverVersion() string  { return d.drv }
func (d *rtDevice) RuntimeVersion() string { return d.rtv }
func (d *rtDevice) MemlockAccounted() bool { return false }

func (d *rtDevice) MemInfo() (free, total int64, err error) {
	var f, t uintptr
	err = d.call(func() int32 { return d.api.memGetInfo(&f, &t) }, "MemGetInfo")
	return int64(f), int64(t), err
}

func (d *rtDevice) Malloc(n int) (uintptr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("%sMalloc %d bytes: size must be > 0", d.kind, n)
	}
	var p uintptr
	err := d.call(func() int32 { return d.api.malloc(&p, uintptr(n)) }, "Malloc", hostmem.FormatBytes(int64(n)))
	return p, err
}

func (d *rtDevice) Free(p uintptr) error {
	return d.call(func() int32 { return d.api.free(p) }, "Free")
}

func (d *rtDevice) HostAlloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%sHostAlloc %d bytes: size must be > 0", d.kind, n)
	}
	var p unsafe.Pointer
	if err := d.call(func() int32 { return d.api.hostAlloc(&p, uintptr(n), 0) }, "HostAlloc", hostmem.FormatBytes(int64(n))); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

func (d *rtDevice) HostFree(b []byte) error {
	return d.call(func() int32 { return d.api.freeHost(b) }, "FreeHost")
}

func (d *rtDevice) HostRegister(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%sHostRegister: empty buffer", d.kind)
	}
	return d.call(func() int32 { return d.api.hostRegister(b, uintptr(len(b)), 0) }, "HostRegister", hostmem.FormatBytes(int64(len(b))))
}

func (d *rtDevice) HostUnregister(b []byte) error {
	return d.call(func() int32 { return d.api.hostUnregister(b) }, "HostUnregister")
}

func (d *rtDevice) IsPinned(b []byte) bool {
	if d.api.pointerAttrs == nil || len(b) == 0 {
		return false
	}
	attr := make([]byte, 64) // {int32 type; int32 device; void* dev; void* host}
	err := d.call(func() int32 { return d.api.pointerAttrs(attr, b) }, "PointerGetAttributes")
	return err == nil && *(*int32)(unsafe.Pointer(&attr[0])) == memoryTypeHost
}

func (d *rtDevice) NewStream() (AccelStream, error) {
	var s uintptr
	err := d.call(func() int32 { return d.api.streamCreate(&s, streamNonBlock) }, "StreamCreateWithFlags")
	return AccelStream(s), err
}

func (d *rtDevice) DestroyStream(s AccelStream) error {
	return d.call(func() int32 { return d.api.streamDestroy(uintptr(s)) }, "StreamDestroy")
}

func (d *rtDevice) CopyH2D(dst uintptr, src []byte, s AccelStream) error {
	if len(src) == 0 {
		return nil
	}
	return d.call(func() int32 { return d.api.memcpyH2D(dst, src, uintptr(len(src)), memcpyH2D, uintptr(s)) }, "MemcpyAsync H2D", hostmem.FormatBytes(int64(len(src))))
}

func (d *rtDevice) CopyD2H(dst []byte, src uintptr, s AccelStream) error {
	if len(dst) == 0 {
		return nil
	}
	return d.call(func() int32 { return d.api.memcpyD2H(dst, src, uintptr(len(dst)), memcpyD2H, uintptr(s)) }, "MemcpyAsync D2H", hostmem.FormatBytes(int64(len(dst))))
}

func (d *rtDevice) StreamSync(s AccelStream) error {
	return d.call(func() int32 { return d.api.streamSync(uintptr(s)) }, "StreamSynchronize")
}

func (d *rtDevice) NewEvent() (AccelEvent, error) {
	var e uintptr
	err := d.call(func() int32 { return d.api.eventCreate(&e) }, "EventCreate")
	return AccelEvent(e), err
}

func (d *rtDevice) DestroyEvent(e AccelEvent) error {
	return d.call(func() int32 { return d.api.eventDestroy(uintptr(e)) }, "EventDestroy")
}

func (d *rtDevice) Record(e AccelEvent, s AccelStream) error {
	return d.call(func() int32 { return d.api.eventRecord(uintptr(e), uintptr(s)) }, "EventRecord")
}

func (d *rtDevice) EventSync(e AccelEvent) error {
	return d.call(func() int32 { return d.api.eventSync(uintptr(e)) }, "EventSynchronize")
}

func (d *rtDevice) Elapsed(start, end AccelEvent) (time.Duration, error) {
	var ms float32
	err := d.call(func() int32 { return d.api.eventElapsed(&ms, uintptr(start), uintptr(end)) }, "EventElapsedTime")
	return time.Duration(float64(ms) * 1e6), err
}

func (d *rtDevice) Sync() error {
	return d.call(func() int32 { return d.api.deviceSync() }, "DeviceSynchronize")
}

// Close waits for the device's work; the library stays loaded (see
// openRuntime) and allocations are their owners' to free.
func (d *rtDevice) Close() error {
	if d.closed.Load() {
		return nil
	}
	err := d.Sync()
	d.closed.Store(true)
	return err
}
