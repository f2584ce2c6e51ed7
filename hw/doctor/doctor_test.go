//go:build linux

package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/hw/accel"
	"kvsim/hw/ioengine"
	"kvsim/hw/rdma"
)

var doctorNames = []string{"hugepages-2MB", "hugepages-1GB", "transparent-hugepages", "io_uring", "o_direct", "memlock", "gpu", "cuda-runtime", "gpu-device", "rdma", "rdma-verbs", "nvme"}

func checkMap(t *testing.T, checks []Check) map[string]Check {
	t.Helper()
	m := map[string]Check{}
	for i, c := range checks {
		if i >= len(doctorNames) || c.Name != doctorNames[i] {
			t.Errorf("check %d is %q, want %q", i, c.Name, doctorNames[min(i, len(doctorNames)-1)])
		}
		switch c.Status {
		case StatusOK, StatusWarn, StatusFail, StatusAbsent:
		default:
			t.Errorf("%s: status %q", c.Name, c.Status)
		}
		if c.Found == "" {
			t.Errorf("%s: nothing found", c.Name)
		}
		if (c.Status == StatusWarn || c.Status == StatusFail) && c.Fix == "" {
			t.Errorf("%s: %s with no fix", c.Name, c.Status)
		}
		m[c.Name] = c
	}
	if len(checks) != len(doctorNames) {
		t.Errorf("%d checks, want %d", len(checks), len(doctorNames))
	}
	return m
}

// TestDoctorHere runs every check on this machine.
func TestDoctorHere(t *testing.T) {
	probeLeaks(t)
	dir := probeDiskDir(t)
	checks, err := Run(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m := checkMap(t, checks)
	for _, c := range checks {
		t.Logf("%-8s %-22s %s", c.Status, c.Name, c.Found)
	}
	if c := m["o_direct"]; c.Status != StatusOK || !strings.Contains(c.Found, "O_DIRECT works") {
		t.Errorf("o_direct on %s: %+v", dir, c)
	}
	if _, err := ioengine.ProbeUring(1); err == nil && m["io_uring"].Status != StatusOK {
		t.Errorf("io_uring works but doctor says %+v", m["io_uring"])
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("doctor left files in %s", dir)
	}
}

func TestDoctorTmpfs(t *testing.T) {
	if fs, _ := ioengine.FSType("/dev/shm"); fs != "tmpfs" {
		probeLacks(t, "/dev/shm is not tmpfs")
	}
	checks, err := Run(Options{Dir: "/dev/shm"})
	if err != nil {
		t.Fatal(err)
	}
	c := checkMap(t, checks)["o_direct"]
	if c.Status != StatusFail || c.Found != "store directory /dev/shm is on tmpfs, which has no O_DIRECT; put it on a disk filesystem (ext4, xfs)" {
		t.Errorf("%+v", c)
	}
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDoctorFakeMachine reads a made-up /sys, /proc and /opt: a machine
// with hugepages, an H200, a CUDA 13 wheel in a virtualenv, an RDMA NIC
// and NVMe over PCIe and TCP.
func TestDoctorFakeMachine(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"LD_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CUDA_HOME", "KVSIM_CUDART"} {
		t.Setenv(v, "")
	}
	cudart := "/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13"
	writeTree(t, root, map[string]string{
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":   "512\n",
		"sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages": "500\n",
		"sys/kernel/mm/transparent_hugepage/enabled":              "always madvise [never]\n",
		"proc/sys/kernel/io_uring_disabled":                       "0\n",
		"proc/driver/nvidia/gpus/0000:19:00.0/information":        "Model: \t NVIDIA H200\nIRQ: 42\n",
		cudart: "",
		"sys/class/infiniband/mlx5_0/ports/1/link_layer": "InfiniBand\n",
		"sys/class/infiniband/mlx5_0/ports/1/state":      "4: ACTIVE\n",
		"sys/class/infiniband/mlx5_0/ports/1/rate":       "400 Gb/sec (4X NDR)\n",
		"sys/class/nvme/nvme0/transport":                 "pcie\n",
		"sys/class/nvme/nvme0/model":                     "SAMSUNG MZWLO3T8\n",
		"sys/class/nvme/nvme1/transport":                 "tcp\n",
		"sys/class/nvme/nvme1/address":                   "traddr=10.0.0.2,trsvcid=4420\n",
	})
	checks, err := Run(Options{Dir: t.TempDir(), root: root})
	if err != nil {
		t.Fatal(err)
	}
	m := checkMap(t, checks)
	want := map[string]struct{ status, found string }{
		"hugepages-2MB":         {StatusOK, "512 reserved, 500 free (1000 MiB free)"},
		"hugepages-1GB":         {StatusAbsent, "no 1GB hugepages on this kernel/CPU"},
		"transparent-hugepages": {StatusWarn, "mode never"},
		"io_uring":              {"", "io_uring_disabled=0"},
		"gpu":                   {StatusOK, "NVIDIA H200 (0000:19:00.0)"},
		"cuda-runtime":          {StatusOK, filepath.Join(root, cudart)},
		"rdma":                  {StatusOK, "mlx5_0 port 1: InfiniBand 4: ACTIVE 400 Gb/sec (4X NDR)"},
		"nvme":                  {StatusOK, "nvme0 pcie SAMSUNG MZWLO3T8; nvme1 tcp (NVMe-oF) at traddr=10.0.0.2,trsvcid=4420; NVMe-oF namespaces behind nvme1 (an nvmeof tier's device = /dev/<controller>n<N>)"},
	}
	for name, w := range want {
		c := m[name]
		if (w.status != "" && c.Status != w.status) || !strings.Contains(c.Found, w.found) {
			t.Errorf("%s: %s %q, want %s %q", name, c.Status, c.Found, w.status, w.found)
		}
	}
	if !strings.Contains(m["transparent-hugepages"].Fix, "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled") {
		t.Errorf("thp fix: %q", m["transparent-hugepages"].Fix)
	}

	// The CUDA 12 layout, found through $VIRTUAL_ENV; an override that
	// points nowhere is a failure; nothing at all is absent.
	venv := t.TempDir()
	cu12 := filepath.Join(venv, "lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12")
	writeTree(t, "/", map[string]string{cu12: ""})
	os.RemoveAll(filepath.Join(root, "opt"))
	t.Setenv("VIRTUAL_ENV", venv)
	if c := (Options{root: root}).cudaRuntime(true); c.Status != StatusOK || !strings.HasPrefix(c.Found, cu12) {
		t.Errorf("CUDA 12 wheel: %+v", c)
	}
	t.Setenv("KVSIM_CUDART", filepath.Join(root, "nope.so"))
	if c := (Options{root: root}).cudaRuntime(true); c.Status != StatusFail {
		t.Errorf("KVSIM_CUDART to nothing: %+v", c)
	}
	t.Setenv("KVSIM_CUDART", "")
	t.Setenv("VIRTUAL_ENV", "")
	if c := (Options{root: root}).cudaRuntime(false); c.Status != StatusAbsent || c.Fix == "" {
		t.Errorf("no CUDA: %+v", c)
	}
	if c := (Options{root: root}).cudaRuntime(true); c.Status != StatusWarn {
		t.Errorf("GPU without CUDA: %+v", c)
	}
	// An empty machine: everything optional is absent, nothing fails.
	empty := t.TempDir()
	checks, _ = Run(Options{Dir: t.TempDir(), root: empty})
	for _, c := range checks {
		if c.Status == StatusFail {
			t.Errorf("empty machine: %+v", c)
		}
	}
}

func TestFindCUDARuntimeLoaderPath(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"libcudart.so.12": "", "libcudart.so.13": "", "libcudart.so": ""})
	t.Setenv("LD_LIBRARY_PATH", dir)
	t.Setenv("KVSIM_CUDART", "")
	got := accel.FindCUDARuntime()
	if len(got) < 2 || got[0] != filepath.Join(dir, "libcudart.so.13") || got[1] != filepath.Join(dir, "libcudart.so.12") {
		t.Errorf("FindCUDARuntime = %v", got)
	}
}

// TestVerbsCheck: each state of the verbs path, as doctor words it.
func TestVerbsCheck(t *testing.T) {
	noLib := fmt.Errorf("rdma: %w: cannot load libibverbs.so.1: install Debian's libibverbs1", rdma.ErrNoLibrary)
	noDev := fmt.Errorf("rdma: %w: libibverbs.so.1 loaded, but it sees no device", rdma.ErrNoDevice)
	up := rdma.DeviceInfo{Name: "mlx5_0", MaxMRSize: 1 << 40, Ports: []rdma.PortInfo{{Num: 1, State: "ACTIVE", LinkLayer: "InfiniBand", MTU: 4096, LID: 3}}}
	down := rdma.DeviceInfo{Name: "mlx5_0", MaxMRSize: 1 << 40, Ports: []rdma.PortInfo{{Num: 1, State: "DOWN", LinkLayer: "InfiniBand"}}}
	for _, c := range []struct {
		name   string
		p      rdma.Probe
		sysfs  int
		status string
		found  string
		fix    string
	}{
		{"usable", rdma.Probe{Lib: "/usr/lib/libibverbs.so.1", Devices: []rdma.DeviceInfo{up}}, 1, StatusOK,
			"libibverbs (/usr/lib/libibverbs.so.1): mlx5_0 (max MR 1 TiB): port 1 ACTIVE InfiniBand MTU 4096 LID 3", ""},
		{"no library", rdma.Probe{Err: noLib}, 0, StatusAbsent, "install Debian's libibverbs1", "apt-get install libibverbs1"},
		{"no library, a NIC", rdma.Probe{Err: noLib}, 1, StatusWarn, "install Debian's libibverbs1", "apt-get install libibverbs1"},
		{"no device", rdma.Probe{Lib: "x", Err: noDev}, 0, StatusAbsent, "sees no device", "rdma link add rxe0 type rxe"},
		{"no device, sysfs has one", rdma.Probe{Lib: "x", Err: noDev}, 1, StatusWarn, "sees no device", "ibverbs-providers"},
		{"port down", rdma.Probe{Lib: "x", Devices: []rdma.DeviceInfo{down}, Err: fmt.Errorf("%w: no port is ACTIVE", rdma.ErrPortDown)}, 1, StatusWarn,
			"mlx5_0 (max MR 1 TiB): port 1 DOWN InfiniBand: RDMA port not active: no port is ACTIVE", "subnet manager"},
	} {
		got := verbsCheck(c.p, c.sysfs)
		if got.Name != "rdma-verbs" || got.Status != c.status || !strings.Contains(got.Found, c.found) || !strings.Contains(got.Fix, c.fix) || strings.Contains(got.Found, "\n") {
			t.Errorf("%s: %+v", c.name, got)
		}
		if got.Status == StatusOK && got.Fix != "" {
			t.Errorf("%s: a fix for nothing: %q", c.name, got.Fix)
		}
	}
}
