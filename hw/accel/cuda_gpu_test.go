package accel

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"kvsim/hw/hostmem"
	"kvsim/internal/testenv"
)

// Tests named *GPU* need a real accelerator (CUDA, or HIP: they run on
// whatever OpenDevice finds). Without one they skip, or fail with
// KVSIM_REQUIRE_GPU=1 (testenv.MissingGPU; hw/accel/gpucheck.sh sets it).

var (
	gpuOnce  sync.Once
	gpuDev   Device
	gpuProbe Probe
)

func needGPU(t *testing.T) Device {
	t.Helper()
	gpuOnce.Do(func() { gpuDev, gpuProbe = OpenDevice() })
	if !gpuDev.Available() {
		if testenv.RequireGPU() { // the whole probe, to debug the machine
			testenv.MissingGPU(t, "%s\n%s", gpuProbe.Why, gpuProbe)
		}
		testenv.MissingGPU(t, "%s", gpuProbe.Why)
	}
	return gpuDev
}

func TestCudaGPURoundTrip(t *testing.T) {
	dev := needGPU(t)
	free, total, err := dev.MemInfo()
	t.Logf("%s %q (%d devices), driver %s, runtime %s, %s free of %s (%v); via %s",
		dev.Kind(), dev.Name(), dev.DeviceCount(), dev.DriverVersion(), dev.RuntimeVersion(),
		hostmem.FormatBytes(free), hostmem.FormatBytes(total), err, gpuProbe.Lib)
	const n = 64 << 20
	d, err := dev.Malloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(d)
	pinned, err := dev.HostAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.HostFree(pinned)
	if !dev.IsPinned(pinned) && dev.Kind() == "cuda" {
		t.Error("cudaPointerGetAttributes does not see cudaHostAlloc memory as host memory")
	}
	pageable, err := accelHostAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer accelHostFree(pageable)
	if dev.IsPinned(pageable) {
		t.Error("pageable memory reported pinned")
	}
	for i := range pinned {
		pinned[i] = byte(i*31 + i>>12)
	}
	st, err := dev.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.DestroyStream(st)
	// Pinned up, pageable down, at an odd offset and length.
	if err := dev.CopyH2D(d+4099, pinned[:n-8192], st); err != nil {
		t.Fatal(err)
	}
	if err := dev.CopyD2H(pageable[:n-8192], d+4099, st); err != nil {
		t.Fatal(err)
	}
	if err := dev.StreamSync(st); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pageable[:n-8192], pinned[:n-8192]) {
		t.Fatal("data changed on the round trip")
	}
	// Registered mmap memory: pinned in place.
	func() {
		if err := dev.HostRegister(pageable); err != nil {
			t.Errorf("HostRegister of mmap'd memory: %v", err)
			return
		}
		defer func() {
			if err := dev.HostUnregister(pageable); err != nil {
				t.Error(err)
			}
		}()
		if !dev.IsPinned(pageable[1<<20:]) && dev.Kind() == "cuda" {
			t.Error("registered memory not seen as pinned")
		}
		clear(pageable)
		if err := dev.CopyD2H(pageable[:n-8192], d+4099, st); err != nil {
			t.Fatal(err)
		}
		if err := dev.StreamSync(st); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pageable[:n-8192], pinned[:n-8192]) {
			t.Fatal("data changed on the round trip to registered memory")
		}
	}()
	// Errors come back as text, not crashes.
	if _, err := dev.Malloc(1 << 50); err == nil {
		t.Error("a 1 PiB cudaMalloc succeeded")
	} else {
		t.Logf("1 PiB allocation: %v", err)
	}
}

func TestCudaGPUPinnedPool(t *testing.T) {
	dev := needGPU(t)
	pool := NewPinnedBufferPool(dev, PinnedPoolOptions{})
	defer pool.Close()
	t0 := time.Now()
	b, err := pool.Get(32 << 20)
	if err != nil || !b.Pinned {
		t.Fatalf("pinned buffer: %v (%s)", err, pool.Stats())
	}
	alloc := time.Since(t0)
	pool.Put(b)
	t0 = time.Now()
	b, _ = pool.Get(16 << 20)
	reuse := time.Since(t0)
	pool.Put(b)
	t.Logf("32 MiB pinned: %v to allocate, %v to reuse; %s", alloc, reuse, pool.Stats())
	// The DRAM pool's memory (hugepages where reserved) registered in place.
	dram, err := hostmem.NewPool(hostmem.PoolOptions{Size: 256 << 20, Hugepages: "try", Name: "kvsim-gpucheck"})
	if err != nil {
		t.Fatal(err)
	}
	defer dram.Close()
	t0 = time.Now()
	if err := pool.RegisterHost(dram.Bytes()); err != nil {
		t.Errorf("register the %s DRAM pool: %v", dram.Backend(), err)
		return
	}
	t.Logf("registered 256 MiB %s DRAM pool in %v", dram.Backend(), time.Since(t0))
	if !pool.IsPinned(dram.Bytes()[4096:8192]) {
		t.Error("registered DRAM pool not seen as pinned")
	}
	if err := pool.UnregisterHost(dram.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func TestCudaGPUDeviceStore(t *testing.T) {
	dev := needGPU(t)
	pool := NewPinnedBufferPool(dev, PinnedPoolOptions{})
	defer pool.Close()
	const slot = 2 << 20
	for _, kind := range []string{"hbm", "pinned"} {
		s := NewDeviceStore(dev, kind, slot, pool)
		t.Logf("%s: %s", kind, s.Backend())
		src := make([]byte, slot) // Go heap: staged for hbm
		t0 := time.Now()
		for b := int32(0); b < 100; b++ {
			for i := 0; i < len(src); i += 4096 {
				src[i] = byte(b) + byte(i>>12)
			}
			if err := s.Put(b, src[:slot-int(b)]); err != nil {
				t.Fatal(err)
			}
		}
		put := time.Since(t0)
		dst := make([]byte, slot)
		t0 = time.Now()
		for b := int32(0); b < 100; b++ {
			n, err := s.Get(b, dst)
			if err != nil || n != slot-int(b) {
				t.Fatalf("get %d: %d %v", b, n, err)
			}
			for i := 0; i < n; i += 4096 {
				if dst[i] != byte(b)+byte(i>>12) {
					t.Fatalf("%s block %d byte %d: got %d", kind, b, i, dst[i])
				}
			}
		}
		get := time.Since(t0)
		t.Logf("%s: 100 x 2 MiB from Go heap memory: put %.2f GB/s, get %.2f GB/s (staged, synchronous)",
			kind, gbps(100*slot, put), gbps(100*slot, get))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s", pool.Stats())
}

// TestGPUCopies measures pinned and pageable copy bandwidth and logs a
// table and one JSON line (KVSIM_GPU_COPIES {...}) for hw/accel/gpucheck.sh.
// KVSIM_COPY_SIZES (comma-separated bytes) and KVSIM_COPY_ITERS override
// the sizes and copy counts.
func TestGPUCopies(t *testing.T) {
	dev := needGPU(t)
	sizes := DefaultCopySizes
	if v := os.Getenv("KVSIM_COPY_SIZES"); v != "" {
		sizes = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("KVSIM_COPY_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	iters, _ := strconv.Atoi(os.Getenv("KVSIM_COPY_ITERS"))
	res, err := MeasureCopies(dev, sizes, iters)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s, driver %s, runtime %s\n%s", dev.Kind(), dev.Name(), dev.DriverVersion(), dev.RuntimeVersion(), FormatCopyResults(res))
	out, _ := json.Marshal(struct {
		Backend string       `json:"backend"`
		Device  string       `json:"device"`
		Driver  string       `json:"driver"`
		Runtime string       `json:"runtime"`
		Results []CopyResult `json:"results"`
	}{dev.Kind(), dev.Name(), dev.DriverVersion(), dev.RuntimeVersion(), res})
	t.Logf("KVSIM_GPU_COPIES %s", out)
	// Logged, not asserted: a timing on a shared machine is a measurement.
	for _, r := range res {
		if r.Bytes >= 16<<20 && r.D2HRatio < 1 {
			t.Logf("%s: pinned D2H (%.1f GB/s) slower than pageable (%.1f GB/s) in this run", hostmem.FormatBytes(int64(r.Bytes)), r.D2HPinnedGBs, r.D2HPageableGBs)
		}
	}
}
