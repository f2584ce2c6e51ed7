//go:build linux && (amd64 || arm64)

package accel

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"kvsim/internal/testenv"
)

// fakeCudartC is a stand-in libcudart: host memory behind the CUDA runtime
// ABI kvsim binds (same symbols, types and error codes), so the purego
// path (loading, symbol lookup, argument passing, error strings, the
// per-thread current device) is exercised on machines without a GPU.
// Every call but the device count needs cudaSetDevice(0) on the calling
// thread first, as a check that kvsim sets the device on each OS thread.
const fakeCudartC = `
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>

static __thread int cur = -1;
#define NEED_DEV if (cur != 0) return 101 /* cudaErrorInvalidDevice */

int cudaGetDeviceCount(int *n) {
	const char *e = getenv("FAKE_CUDA_DEVICES");
	*n = e ? atoi(e) : 1;
	return *n ? 0 : 100; /* cudaErrorNoDevice */
}
int cudaSetDevice(int d) { if (d != 0) return 101; cur = 0; return 0; }
int cudaMalloc(void **p, size_t n) {
	NEED_DEV;
	if (n > ((size_t)1 << 40)) return 2; /* cudaErrorMemoryAllocation */
	*p = malloc(n); return *p ? 0 : 2;
}
int cudaFree(void *p) { NEED_DEV; free(p); return 0; }

#define NPIN 64
static struct { char *p; size_t n; } pins[NPIN];
static void pin(void *p, size_t n) { for (int i = 0; i < NPIN; i++) if (!pins[i].p) { pins[i].p = p; pins[i].n = n; return; } }
static int unpin(void *p) { for (int i = 0; i < NPIN; i++) if (pins[i].p == p) { pins[i].p = 0; return 0; } return 1; }
int cudaHostAlloc(void **p, size_t n, unsigned flags) {
	NEED_DEV;
	if (getenv("FAKE_CUDA_NOPIN")) return 2;
	*p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095); pin(*p, n); return 0;
}
int cudaFreeHost(void *p) { NEED_DEV; if (unpin(p)) return 1; free(p); return 0; }
int cudaHostRegister(void *p, size_t n, unsigned flags) { NEED_DEV; pin(p, n); return 0; }
int cudaHostUnregister(void *p) { NEED_DEV; return unpin(p) ? 712 : 0; }
int cudaPointerGetAttributes(void *attr, const void *ptr) {
	NEED_DEV;
	int *a = attr; a[0] = 0; a[1] = 0;
	for (int i = 0; i < NPIN; i++)
		if (pins[i].p && (const char *)ptr >= pins[i].p && (const char *)ptr < pins[i].p + pins[i].n) a[0] = 1;
	return 0;
}
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
	NEED_DEV;
	if (kind != 1 && kind != 2) return 21; /* cudaErrorInvalidMemcpyDirection */
	memcpy(dst, src, n); return 0;
}
int cudaStreamCreateWithFlags(void **s, unsigned flags) { NEED_DEV; *s = malloc(8); return flags == 1 ? 0 : 1; }
int cudaStreamDestroy(void *s) { NEED_DEV; free(s); return 0; }
int cudaStreamSynchronize(void *s) { NEED_DEV; return 0; }
int cudaEventCreate(double **e) { NEED_DEV; *e = malloc(sizeof(double)); **e = -1; return 0; }
int cudaEventDestroy(double *e) { NEED_DEV; free(e); return 0; }
int cudaEventRecord(double *e, void *s) {
	NEED_DEV;
	struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
	*e = t.tv_sec * 1e3 + t.tv_nsec / 1e6; return 0;
}
int cudaEventSynchronize(double *e) { NEED_DEV; return 0; }
int cudaEventElapsedTime(float *ms, double *a, double *b) {
	NEED_DEV;
	if (*a < 0 || *b < 0) return 600; /* cudaErrorNotReady */
	*ms = (float)(*b - *a); return 0;
}
int cudaDeviceSynchronize(void) { NEED_DEV; return 0; }
const char *cudaGetErrorString(int e) { return e == 2 ? "out of memory" : e == 101 ? "invalid device ordinal" : "fake error"; }
const char *cudaGetErrorName(int e) { return e == 2 ? "cudaErrorMemoryAllocation" : e == 101 ? "cudaErrorInvalidDevice" : "cudaErrorFake"; }
#ifdef HIP
int cudaDeviceGetName(char *name, int len, int d) { NEED_DEV; strncpy(name, "Fake MI300X", len); return 0; }
int cudaDriverGetVersion(int *v) { *v = 60443483; return 0; }
int cudaRuntimeGetVersion(int *v) { *v = 60443483; return 0; }
#else
int cudaDriverGetVersion(int *v) { *v = 13000; return 0; }
int cudaRuntimeGetVersion(int *v) { *v = 12080; return 0; }
#endif
int cudaMemGetInfo(size_t *f, size_t *t) { NEED_DEV; *f = (size_t)100 << 30; *t = (size_t)141 << 30; return 0; }
int cudaGetDeviceProperties_v2(char *prop, int d) { NEED_DEV; memset(prop, 0, 1032); strcpy(prop, "Fake H200"); return 0; }
`

// hipRenames turns the fake CUDA runtime into a fake HIP runtime: the
// calls map one to one.
var hipRenames = func() []string {
	out := []string{"-DHIP", "-DcudaHostAlloc=hipHostMalloc", "-DcudaFreeHost=hipHostFree"}
	for _, n := range strings.Fields(`GetDeviceCount SetDevice Malloc Free HostRegister HostUnregister
		PointerGetAttributes MemcpyAsync StreamCreateWithFlags StreamDestroy StreamSynchronize EventCreate
		EventDestroy EventRecord EventSynchronize EventElapsedTime DeviceSynchronize GetErrorString
		GetErrorName DriverGetVersion RuntimeGetVersion MemGetInfo GetDeviceProperties_v2 DeviceGetName`) {
		out = append(out, "-Dcuda"+n+"=hip"+n)
	}
	return out
}()

// fakeLibs are the fake runtimes buildFakeCudart can make: the CUDA one,
// one that lacks cudaEventCreate (renamed away), and a HIP one.
var fakeLibs = map[string][]string{"libfakecudart.so": nil, "libbrokencudart.so": {"-DcudaEventCreate=notCudaEventCreate"},
	"libfakehip.so": hipRenames}

// buildFakeCudart compiles the named fake runtimes with the system C
// compiler, or skips (fails under KVSIM_REQUIRE_ALL: CI installs gcc), and
// returns their paths. They go in the test's own
// temporary folder, removed when it ends (a library loaded from it stays
// mapped until the process exits).
func buildFakeCudart(t *testing.T, names ...string) []string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		testenv.Missing(t, "no C compiler to build a fake libcudart: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(src, []byte(fakeCudartC), 0o644); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		args := append([]string{"-shared", "-fPIC", "-O1", "-o", p, src}, fakeLibs[n]...)
		if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			testenv.Missing(t, "no C compiler to build a fake libcudart: %v: %s", err, b)
		}
		out = append(out, p)
	}
	return out
}

func openFakeCuda(t *testing.T) Device {
	lib := buildFakeCudart(t, "libfakecudart.so")[0]
	t.Setenv("KVSIM_CUDART", lib)
	dev, p := OpenDevice()
	if !dev.Available() {
		t.Fatalf("fake runtime not used:\n%s", p)
	}
	if p.Backend != "cuda" || p.Lib != lib || len(p.Tries) != 1 {
		t.Fatalf("probe %+v", p)
	}
	return dev
}

func TestCudaFakeRuntime(t *testing.T) {
	dev := openFakeCuda(t)
	defer dev.Close()
	if dev.Kind() != "cuda" || dev.Name() != "Fake H200" || dev.DriverVersion() != "13.0" || dev.RuntimeVersion() != "12.8" || dev.DeviceCount() != 1 {
		t.Fatalf("identity: %s %q %s %s %d", dev.Kind(), dev.Name(), dev.DriverVersion(), dev.RuntimeVersion(), dev.DeviceCount())
	}
	if free, total, err := dev.MemInfo(); err != nil || free != 100<<30 || total != 141<<30 {
		t.Fatalf("MemInfo %d %d %v", free, total, err)
	}
	_, err := dev.Malloc(2 << 40)
	if err == nil || err.Error() != "cudaMalloc 2 TiB: out of memory (cudaErrorMemoryAllocation = 2)" {
		t.Fatalf("error text: %v", err)
	}
	d, err := dev.Malloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(d)
	h, err := dev.HostAlloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if !dev.IsPinned(h[4096:]) {
		t.Fatal("cudaPointerGetAttributes not read")
	}
	for i := range h {
		h[i] = byte(i * 5)
	}
	st, err := dev.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.CopyH2D(d+10, h[:1000], st); err != nil {
		t.Fatal(err)
	}
	pageable, _ := accelHostAlloc(4096)
	defer accelHostFree(pageable)
	if dev.IsPinned(pageable) {
		t.Fatal("pageable memory reported pinned")
	}
	if err := dev.CopyD2H(pageable[:1000], d+10, st); err != nil || !bytes.Equal(pageable[:1000], h[:1000]) {
		t.Fatalf("round trip: %v", err)
	}
	if err := dev.HostRegister(pageable); err != nil || !dev.IsPinned(pageable) {
		t.Fatalf("register: %v", err)
	}
	if err := dev.HostUnregister(pageable); err != nil {
		t.Fatal(err)
	}
	if err := dev.HostUnregister(pageable); err == nil {
		t.Fatal("second unregister accepted")
	}
	if err := dev.HostFree(h); err != nil {
		t.Fatal(err)
	}
	if err := dev.StreamSync(st); err != nil {
		t.Fatal(err)
	}
	if err := dev.DestroyStream(st); err != nil {
		t.Fatal(err)
	}
	e, _ := dev.NewEvent()
	if _, err := dev.Elapsed(e, e); err == nil {
		t.Fatal("elapsed of an unrecorded event accepted")
	}
	dev.DestroyEvent(e)
}

// Calls from many goroutines (so many OS threads) each find device 0
// current: the fake fails calls on threads that did not set it.
func TestCudaFakeThreads(t *testing.T) {
	dev := openFakeCuda(t)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				p, err := dev.Malloc(4096)
				if err != nil {
					t.Error(err)
					return
				}
				if err := dev.Free(p); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestCudaFakeStoreAndCopies(t *testing.T) {
	dev := openFakeCuda(t)
	pool := NewPinnedBufferPool(dev, PinnedPoolOptions{})
	defer pool.Close()
	s := NewDeviceStore(dev, "hbm", 64<<10, pool)
	if s.Backend() != "cuda:Fake H200 (device memory)" {
		t.Fatalf("Backend %q", s.Backend())
	}
	for b := int32(0); b < 50; b++ {
		if err := s.Put(b, devFill(64<<10-int(b), byte(b))); err != nil {
			t.Fatal(err)
		}
	}
	dst := make([]byte, 64<<10)
	for b := int32(0); b < 50; b++ {
		if n, err := s.Get(b, dst); err != nil || !bytes.Equal(dst[:n], devFill(64<<10-int(b), byte(b))) {
			t.Fatalf("block %d: %v", b, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ps := NewDeviceStore(dev, "pinned", 4096, nil)
	if ps.Backend() != "cuda pinned host memory" || ps.Put(1, devFill(100, 1)) != nil {
		t.Fatalf("pinned store %q", ps.Backend())
	}
	ps.Close()
	res, err := MeasureCopies(dev, []int{4096, 1 << 20}, 2)
	if err != nil || len(res) != 2 || res[1].D2HPinnedGBs <= 0 {
		t.Fatalf("MeasureCopies: %v %+v", err, res)
	}
	t.Log("\n" + FormatCopyResults(res))
}

func TestCudaFakeProbeFailures(t *testing.T) {
	libs := buildFakeCudart(t, "libfakecudart.so", "libbrokencudart.so")
	lib, broken := libs[0], libs[1]
	t.Setenv("KVSIM_CUDART", broken)
	dev, p := OpenDevice()
	if dev.Available() {
		t.Skipf("a real runtime answered: %s", p.Lib)
	}
	if p.Tries[0].Err != "loaded, but symbol cudaEventCreate is missing" || !strings.Contains(p.Why, "cudaEventCreate is missing") {
		t.Fatalf("missing symbol: %+v / %s", p.Tries[0], p.Why)
	}
	t.Setenv("KVSIM_CUDART", lib)
	t.Setenv("FAKE_CUDA_DEVICES", "0")
	dev, p = OpenDevice()
	if dev.Available() {
		t.Skipf("a real runtime answered: %s", p.Lib)
	}
	if want := "cudaGetDeviceCount: fake error (cudaErrorFake = 100)"; p.Tries[0].Err != want || p.Why != "no CUDA runtime: cuda "+lib+": "+want {
		t.Fatalf("no device: %+v / %q", p.Tries[0], p.Why)
	}
}

func TestCudaFakePinnedRefused(t *testing.T) {
	dev := openFakeCuda(t)
	t.Setenv("FAKE_CUDA_NOPIN", "1")
	pool := NewPinnedBufferPool(dev, PinnedPoolOptions{})
	defer pool.Close()
	b, err := pool.Get(8192)
	if err != nil || b.Pinned {
		t.Fatalf("refused pinning: %v", err)
	}
	if why := pool.Stats().LastFallback; why != "cudaHostAlloc 8 KiB: out of memory (cudaErrorMemoryAllocation = 2)" {
		t.Fatalf("fallback reason %q", why)
	}
	pool.Put(b)
}

func TestHIPFakeRuntime(t *testing.T) {
	dev, err := openRuntime("hip", buildFakeCudart(t, "libfakehip.so")[0])
	if err != nil {
		t.Fatal(err)
	}
	if dev.Kind() != "hip" || dev.Name() != "Fake MI300X" || dev.DriverVersion() != "6.4.43483" {
		t.Fatalf("identity: %s %q %s", dev.Kind(), dev.Name(), dev.DriverVersion())
	}
	if _, err := dev.Malloc(2 << 40); err == nil || err.Error() != "hipMalloc 2 TiB: out of memory (cudaErrorMemoryAllocation = 2)" {
		t.Fatalf("error text: %v", err)
	}
	pool := NewPinnedBufferPool(dev, PinnedPoolOptions{})
	defer pool.Close()
	s := NewDeviceStore(dev, "hbm", 4096, pool)
	defer s.Close()
	if s.Backend() != "hip:Fake MI300X (device memory)" {
		t.Fatalf("Backend %q", s.Backend())
	}
	if err := s.Put(1, devFill(4000, 9)); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 4000)
	if _, err := s.Get(1, dst); err != nil || !bytes.Equal(dst, devFill(4000, 9)) {
		t.Fatalf("round trip: %v", err)
	}
	if res, err := MeasureCopies(dev, []int{4096}, 2); err != nil || res[0].H2DPinnedGBs <= 0 {
		t.Fatalf("MeasureCopies: %v", err)
	}
}
