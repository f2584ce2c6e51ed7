package accel

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAccelSearchOrder(t *testing.T) {
	env := map[string]string{"KVSIM_CUDART": "/x/libcudart.so", "CUDA_HOME": "/ch", "VIRTUAL_ENV": "/venv", "CONDA_PREFIX": "/conda"}
	s := cudartSearch(func(k string) string { return env[k] })
	idx := func(want string) int {
		i := slices.Index(s, want)
		if i < 0 {
			t.Fatalf("%s not searched: %q", want, s)
		}
		return i
	}
	order := []string{
		"/x/libcudart.so",
		"libcudart.so.13",
		"libcudart.so.12",
		"libcudart.so",
		"/ch/lib64/libcudart.so.13",
		"/usr/local/cuda/lib64/libcudart.so.13",
		"/venv/lib/python3*/site-packages/nvidia/cu13/lib/libcudart.so.13",
		"/venv/lib/python3*/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
		"/conda/lib/python3*/site-packages/nvidia/cu13/lib/libcudart.so.13",
		"/opt/*/lib/python3*/site-packages/nvidia/cu13/lib/libcudart.so.13",
		"/opt/*/*/lib/python3*/site-packages/nvidia/cu13/lib/libcudart.so.13",
		"/usr/local/lib/python3*/dist-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
		"/usr/lib/python3/dist-packages/nvidia/cu13/lib/libcudart.so.13",
		"/conda/lib/libcudart.so.13",
		"/usr/lib/" + debianMultiarch() + "/libcudart.so.12",
	}
	for i := 1; i < len(order); i++ {
		if idx(order[i-1]) >= idx(order[i]) {
			t.Errorf("%s searched after %s", order[i-1], order[i])
		}
	}
	h := hipSearch(func(k string) string { return map[string]string{"KVSIM_HIP": "/h.so"}[k] })
	if h[0] != "/h.so" || h[1] != "libamdhip64.so.7" || !slices.Contains(h, "/opt/rocm/lib/libamdhip64.so") {
		t.Errorf("hip search %q", h)
	}
}

func TestAccelExpandSearch(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "venv/lib/python3.12/site-packages/nvidia/cu13/lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(lib, "libcudart.so.13.0.96")
	os.WriteFile(real, []byte("x"), 0o644)
	os.Symlink("libcudart.so.13.0.96", filepath.Join(lib, "libcudart.so.13"))
	os.Symlink("nowhere", filepath.Join(dir, "dangling.so"))
	tries := expandSearch("cuda", []string{
		"libcudart.so.13",
		filepath.Join(dir, "venv/lib/python3*/site-packages/nvidia/cu13/lib/libcudart.so.13"),
		filepath.Join(lib, "libcudart.so.13.0.96"), // same file: kept once
		filepath.Join(dir, "missing/libcudart.so.12"),
		filepath.Join(dir, "none*/libcudart.so.12"),
		filepath.Join(dir, "dangling.so"),
	})
	want := []ProbeTry{
		{"cuda", "libcudart.so.13", ""},
		{"cuda", filepath.Join(lib, "libcudart.so.13"), ""},
		{"cuda", filepath.Join(dir, "missing/libcudart.so.12"), "not found"},
		{"cuda", filepath.Join(dir, "none*/libcudart.so.12"), "not found"},
		{"cuda", filepath.Join(dir, "dangling.so"), "not found"},
	}
	if !slices.Equal(tries, want) {
		t.Fatalf("got  %q\nwant %q", tries, want)
	}
}

func TestAccelOpenDevice(t *testing.T) {
	dev, p := OpenDevice()
	defer dev.Close()
	t.Logf("probe:\n%s", p)
	if dev.Available() {
		if p.Backend != dev.Kind() || p.Lib == "" || p.Why != "" || p.Tries[len(p.Tries)-1].Err != "" {
			t.Fatalf("probe of a found device: %+v", p)
		}
		return
	}
	if p.Backend != "emulated" || !strings.HasPrefix(p.Why, "no CUDA runtime: ") || dev.Kind() != "emulated" {
		t.Fatalf("probe without a device: %+v", p)
	}
	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		if len(p.Tries) < 10 || !strings.Contains(p.String(), "libcudart.so.13") || !strings.Contains(p.String(), "libamdhip64") {
			t.Fatalf("probe does not show where it looked:\n%s", p)
		}
	}
	if !strings.HasPrefix(dev.Name(), "emulated (no CUDA runtime: ") {
		t.Fatalf("emulated device name %q", dev.Name())
	}
}

func TestAccelOpenDeviceOverride(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("runtime loading is linux/amd64, linux/arm64 only")
	}
	notLib := filepath.Join(t.TempDir(), "libcudart.so.13")
	os.WriteFile(notLib, []byte("not an ELF file"), 0o644)
	t.Setenv("KVSIM_CUDART", notLib)
	dev, p := OpenDevice()
	defer dev.Close()
	if dev.Available() {
		t.Skip("a real runtime was found after the override: " + p.Lib)
	}
	if p.Tries[0].Path != notLib || !strings.HasPrefix(p.Tries[0].Err, "dlopen: ") {
		t.Fatalf("override not tried first, or no reason: %+v", p.Tries[0])
	}
	// A library that loads but fails is a better reason than "not found".
	if !strings.Contains(p.Why, notLib) {
		t.Fatalf("Why %q does not name the broken library", p.Why)
	}
	t.Setenv("KVSIM_CUDART", "")
	t.Setenv("KVSIM_ACCEL", "emulated")
	if _, p := OpenDevice(); p.Why != "KVSIM_ACCEL=emulated" || len(p.Tries) != 0 {
		t.Fatalf("KVSIM_ACCEL=emulated still probed: %+v", p)
	}
}

func TestAccelEmulatedDevice(t *testing.T) {
	d := NewEmulatedDevice("test")
	defer d.Close()
	if d.Available() || d.Kind() != "emulated" || d.Name() != "emulated (test)" {
		t.Fatalf("identity: %v %q %q", d.Available(), d.Kind(), d.Name())
	}
	p, err := d.Malloc(10000)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := d.Malloc(4096)
	host, err := d.HostAlloc(16 << 10) // small: page-locking needs memlock room
	if err != nil {
		t.Fatal(err)
	}
	defer d.HostFree(host)
	if !d.IsPinned(host) {
		t.Fatal("HostAlloc memory not pinned")
	}
	for i := range host {
		host[i] = byte(i * 3)
	}
	st, _ := d.NewStream()
	e0, _ := d.NewEvent()
	e1, _ := d.NewEvent()
	d.Record(e0, st)
	if err := d.CopyH2D(p+100, host[:9000], st); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyH2D(q, host[:4096], st); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, 9000)
	if err := d.CopyD2H(back, p+100, st); err != nil || !bytes.Equal(back, host[:9000]) {
		t.Fatalf("round trip: %v", err)
	}
	time.Sleep(time.Millisecond)
	d.Record(e1, st)
	// A lower bound only, which load cannot break: it checks the unit.
	if el, err := d.Elapsed(e0, e1); err != nil || el < time.Millisecond {
		t.Fatalf("elapsed %v %v", el, err)
	}
	if err := d.CopyH2D(p+9000, host[:2000], st); err == nil {
		t.Fatal("copy past the allocation accepted")
	}
	if err := d.CopyD2H(back, q+1, st); err == nil {
		t.Fatal("copy past the allocation accepted")
	}
	if err := d.Free(p); err != nil {
		t.Fatal(err)
	}
	if err := d.Free(p); err == nil {
		t.Fatal("double free accepted")
	}
	if err := d.CopyH2D(p, host[:10], st); err == nil {
		t.Fatal("copy to freed memory accepted")
	}
	if err := d.CopyH2D(q, host[:10], st); err != nil {
		t.Fatalf("other allocation lost: %v", err)
	}
}

func TestAccelMeasureCopies(t *testing.T) {
	f := newFakeDev()
	res, err := MeasureCopies(f, []int{4096, 64 << 10}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[1].Bytes != 64<<10 || res[0].Iters != 3 {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		if r.H2DPinnedGBs <= 0 || r.D2HPageableGBs <= 0 || r.H2DRatio <= 0 || r.D2HRatio <= 0 {
			t.Fatalf("empty measurement %+v", r)
		}
	}
	// 4 measurements x (1 warm-up + 3) per size.
	if f.n("CopyH2D") != 16 || f.n("CopyD2H") != 16 {
		t.Fatalf("copies: %d H2D, %d D2H", f.n("CopyH2D"), f.n("CopyD2H"))
	}
	if f.liveDevice != 0 || f.livePinned != 0 {
		t.Fatalf("leaks: %d device allocations, %d pinned bytes", f.liveDevice, f.livePinned)
	}
	t.Log("\n" + FormatCopyResults(res))
	f.failPinned = true
	if _, err := MeasureCopies(f, []int{4096}, 1); err == nil || !strings.Contains(err.Error(), "pinned host buffer") {
		t.Fatalf("pinning failure: %v", err)
	}
	if _, err := MeasureCopies(f, []int{0}, 1); err == nil {
		t.Fatal("size 0 accepted")
	}
}
