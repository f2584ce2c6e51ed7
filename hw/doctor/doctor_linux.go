//go:build linux

package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"kvsim/hw"
	"kvsim/hw/accel"
	"kvsim/hw/hostmem"
	"kvsim/hw/ioengine"
	"kvsim/hw/rdma"
)

// Run checks this machine for KV offload: hugepages, transparent
// hugepages, io_uring, O_DIRECT in o.Dir, the memlock limit, GPUs and the
// CUDA runtime, RDMA devices and the verbs library, and NVMe controllers. It needs no root, and
// absent hardware is a finding (StatusAbsent), never an error.
func Run(o Options) ([]Check, error) {
	if o.Dir == "" {
		o.Dir = "."
	}
	gpu := o.gpu()
	return []Check{
		o.hugepages(hostmem.HugeSpecs[0]),
		o.hugepages(hostmem.HugeSpecs[1]),
		o.thp(),
		o.ioUring(),
		o.directIO(),
		memlock(),
		gpu,
		o.cudaRuntime(gpu.Status == StatusOK),
		o.device(gpu.Status == StatusOK),
		o.rdma(),
		o.rdmaVerbs(),
		o.nvme(),
	}, nil
}

func (o Options) path(p string) string { return filepath.Join(o.root, p) }

// device loads the GPU runtime the way replay does and reports the device,
// driver and runtime versions (or why the GPU tiers will be emulated).
func (o Options) device(haveGPU bool) Check {
	c := Check{Name: "gpu-device"}
	if o.root != "" { // a test's fake tree: nothing to load
		c.Status, c.Found = StatusAbsent, "not probed"
		return c
	}
	dev, probe := accel.OpenDevice()
	defer dev.Close()
	if dev.Kind() == "emulated" {
		c.Status, c.Found = StatusAbsent, "GPU tiers will be emulated: "+probe.Why
		if haveGPU {
			c.Status = StatusWarn
			c.Fix = "make libcudart loadable (KVSIM_CUDART=/path/to/libcudart.so.N) so replay drives the GPU"
		}
		return c
	}
	c.Status = StatusOK
	c.Found = fmt.Sprintf("%s: %s x%d, driver %s, runtime %s (%s)", dev.Kind(), dev.Name(), dev.DeviceCount(),
		dev.DriverVersion(), dev.RuntimeVersion(), probe.Lib)
	return c
}

func (o Options) readString(p string) (string, error) {
	b, err := os.ReadFile(o.path(p))
	return strings.TrimSpace(string(b)), err
}

func (o Options) hugepages(hs hostmem.HugeSpec) Check {
	c := Check{Name: "hugepages-" + hs.Label}
	dir := o.path(hs.Sysfs)
	if _, err := os.Stat(dir); err != nil {
		c.Status, c.Found = StatusAbsent, fmt.Sprintf("no %s hugepages on this kernel/CPU (%s is absent)", hs.Label, hs.Sysfs)
		return c
	}
	nr, err1 := hostmem.ReadInt(dir + "/nr_hugepages")
	free, err2 := hostmem.ReadInt(dir + "/free_hugepages")
	if err := errors.Join(err1, err2); err != nil {
		c.Status, c.Found = StatusWarn, "cannot read the counts: "+err.Error()
		return c
	}
	c.Found = fmt.Sprintf("%d reserved, %d free (%s free)", nr, free, hostmem.FormatBytes(free*hs.Bytes))
	is2M := hs.Bytes == 2<<20
	reserve := func(n int64) string {
		if is2M {
			return fmt.Sprintf("as root: sysctl -w vm.nr_hugepages=%d (%s), then check HugePages_Free in /proc/meminfo", n, hostmem.FormatBytes(n*hs.Bytes))
		}
		return fmt.Sprintf("as root: echo %d > %s/nr_hugepages, or boot with hugepagesz=1G hugepages=%d", n, hs.Sysfs, n)
	}
	switch {
	case nr == 0 && is2M:
		c.Status, c.Found = StatusWarn, "0 reserved: the DRAM pool falls back to 4 KiB pages (populating it takes several times longer) and I/O buffers rely on THP"
		c.Fix = reserve(512)
	case nr == 0:
		c.Status, c.Found = StatusAbsent, "0 reserved (optional: 2MB pages serve the pool as well)"
		c.Fix = reserve(1)
	case free == 0:
		c.Status = StatusWarn
		c.Found += ": all in use"
		c.Fix = reserve(nr * 2)
	default:
		c.Status = StatusOK
	}
	return c
}

func (o Options) thp() Check {
	const p = "/sys/kernel/mm/transparent_hugepage/enabled"
	c := Check{Name: "transparent-hugepages"}
	s, err := o.readString(p)
	if err != nil {
		c.Status, c.Found = StatusAbsent, "no transparent hugepage support ("+p+" is absent)"
		return c
	}
	mode := s
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			mode = s[i+1 : i+j]
		}
	}
	c.Found = "mode " + mode
	switch mode {
	case "always", "madvise":
		c.Status = StatusOK
		c.Found += ": I/O buffers get 2 MiB pages by madvise when no hugetlb pages are reserved"
	default:
		c.Status = StatusWarn
		c.Found += ": without reserved hugetlb pages, I/O buffers are on 4 KiB pages"
		c.Fix = "as root: echo madvise > " + p
	}
	return c
}

func (o Options) ioUring() Check {
	c := Check{Name: "io_uring"}
	var found []string
	disabled, derr := o.readString("/proc/sys/kernel/io_uring_disabled")
	if derr == nil {
		found = append(found, "io_uring_disabled="+disabled)
	}
	if _, err := ioengine.ProbeUring(4); err != nil {
		c.Status = StatusWarn
		found = append(found, err.Error()+"; kvsim falls back to pread/pwrite")
		c.Found = strings.Join(found, "; ")
		switch {
		case errors.Is(err, unix.ENOSYS):
			c.Fix = "a kernel built with CONFIG_IO_URING (5.6+; 6.1+ recommended), or outside a sandbox such as gVisor"
		case disabled != "" && disabled != "0":
			c.Fix = "as root: sysctl -w kernel.io_uring_disabled=0"
		default:
			c.Fix = "allow io_uring_setup/enter/register in the seccomp profile (containers), or sysctl -w kernel.io_uring_disabled=0"
		}
		return c
	}
	found = append(found, "io_uring_setup works")
	// Registered buffers are pinned memory: the memlock limit applies.
	if a, err := ioengine.NewArenaPages(ioengine.HugePageSize, false); err == nil {
		reason, err := ioengine.ProbeUring(4, a)
		a.Close()
		if reason == "" && err == nil {
			found = append(found, "registered buffers work")
		} else {
			found = append(found, "registered buffers fail: "+strings.TrimSuffix(reason, "; io_uring runs with unregistered buffers"))
			c.Fix = "raise the memlock limit (see memlock)"
		}
	}
	c.Status = StatusOK
	if c.Fix != "" {
		c.Status = StatusWarn
	}
	c.Found = strings.Join(found, "; ")
	return c
}

func (o Options) directIO() Check {
	c := Check{Name: "o_direct"}
	dir, _ := filepath.Abs(o.Dir)
	fs, a, err := ioengine.ProbeDirectIO(dir)
	dev := blockDevice(dir)
	on := dir
	if fs != "" {
		on += " (" + fs + dev + ")"
	}
	switch {
	case err == nil:
		c.Status = StatusOK
		c.Found = fmt.Sprintf("%s: O_DIRECT works, alignment %d B for offsets and lengths, %d B for buffers", on, a.Offset, a.Mem)
	case errors.Is(err, ioengine.ErrNoDirectIO):
		c.Status = StatusFail
		c.Found = err.Error()
		c.Fix = "put the SSD tier's store directory on a disk filesystem (ext4, xfs) and check it with kvsim doctor --dir DIR"
	default:
		c.Status = StatusWarn
		c.Found = on + ": cannot test O_DIRECT: " + err.Error()
		c.Fix = "run kvsim doctor --dir DIR on a directory you can write"
	}
	return c
}

// blockDevice names the disk under dir (", on vda") from /sys/dev/block.
func blockDevice(dir string) string {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return ""
	}
	link, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return ""
	}
	return ", on " + filepath.Base(link)
}

func memlock() Check {
	c := Check{Name: "memlock"}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		c.Status, c.Found = StatusWarn, "getrlimit: "+err.Error()
		return c
	}
	const fix = "ulimit -l unlimited (limits.conf: '* - memlock unlimited'; systemd: LimitMEMLOCK=infinity; docker: --ulimit memlock=-1)"
	switch {
	case rl.Cur == unix.RLIM_INFINITY:
		c.Status, c.Found = StatusOK, "unlimited"
	case hostmem.HasCapIPCLock():
		c.Status, c.Found = StatusOK, fmt.Sprintf("%s, but this process has CAP_IPC_LOCK, which lifts it", hostmem.FormatBytes(int64(rl.Cur)))
	case rl.Cur < 1<<30:
		c.Status = StatusWarn
		c.Found = fmt.Sprintf("%s: pinned host memory (cudaHostRegister, RDMA registration, io_uring registered buffers) beyond it fails", hostmem.FormatBytes(int64(rl.Cur)))
		c.Fix = fix
	default:
		c.Status, c.Found = StatusOK, hostmem.FormatBytes(int64(rl.Cur))
	}
	return c
}

func (o Options) gpu() Check {
	c := Check{Name: "gpu"}
	var models []string
	dirs, _ := filepath.Glob(o.path("/proc/driver/nvidia/gpus/*"))
	for _, d := range dirs {
		model := "NVIDIA GPU"
		if b, err := os.ReadFile(filepath.Join(d, "information")); err == nil {
			for line := range strings.SplitSeq(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "Model:"); ok {
					model = strings.TrimSpace(v)
				}
			}
		}
		models = append(models, model+" ("+filepath.Base(d)+")")
	}
	if len(models) == 0 {
		if devs, _ := filepath.Glob(o.path("/dev/nvidia[0-9]*")); len(devs) > 0 {
			models = append(models, fmt.Sprintf("%d NVIDIA device node(s) in /dev, no /proc/driver/nvidia", len(devs)))
		}
	}
	if _, err := os.Stat(o.path("/dev/kfd")); err == nil {
		models = append(models, "AMD GPU (/dev/kfd)")
	}
	if len(models) == 0 {
		c.Status, c.Found = StatusAbsent, "no GPU: the HBM and pinned tiers are emulated in host memory"
		return c
	}
	c.Status, c.Found = StatusOK, strings.Join(models, ", ")
	return c
}

func (o Options) cudaRuntime(haveGPU bool) Check {
	c := Check{Name: "cuda-runtime"}
	if p := os.Getenv("KVSIM_CUDART"); p != "" {
		if _, err := os.Stat(p); err != nil {
			c.Status, c.Found = StatusFail, "KVSIM_CUDART="+p+": "+err.Error()
			c.Fix = "point KVSIM_CUDART at an existing libcudart.so.N, or unset it"
			return c
		}
	}
	found := accel.FindCUDARuntimeIn(o.root)
	if len(found) == 0 {
		c.Status, c.Found = StatusAbsent, "no libcudart.so.* in the loader paths, CUDA_HOME, /usr/local/cuda or Python environments"
		if haveGPU {
			c.Status = StatusWarn
		}
		c.Fix = "install the CUDA runtime (pip install nvidia-cuda-runtime-cu12, or the CUDA toolkit), or set KVSIM_CUDART=/path/to/libcudart.so.N"
		return c
	}
	c.Status, c.Found = StatusOK, found[0]
	if len(found) > 1 {
		c.Found += fmt.Sprintf(" (and %d more: %s)", len(found)-1, strings.Join(found[1:], ", "))
	}
	if !haveGPU {
		c.Found += "; no GPU to use it with"
	}
	return c
}

func (o Options) rdma() Check {
	c := Check{Name: "rdma"}
	devs := hw.ProbeRDMA(o.root)
	if len(devs) == 0 {
		c.Status, c.Found = StatusAbsent, "no RDMA devices in /sys/class/infiniband: remote tiers are simulated only"
		return c
	}
	var found []string
	for _, d := range devs {
		desc := d.Name
		for _, p := range d.Ports {
			desc += fmt.Sprintf(" port %s: %s %s %s", p.Port, p.LinkLayer, p.State, p.Rate)
		}
		found = append(found, strings.Join(strings.Fields(desc), " "))
	}
	c.Status, c.Found = StatusOK, strings.Join(found, "; ")
	return c
}

// rdmaVerbs loads libibverbs the way the verbs path does and reports the
// devices and ports it enumerates, or in one line why the path is off.
func (o Options) rdmaVerbs() Check {
	if o.root != "" { // a test's fake tree: nothing to load
		return Check{Name: "rdma-verbs", Status: StatusAbsent, Found: "not probed"}
	}
	return verbsCheck(rdma.ProbeVerbs(), len(hw.ProbeRDMA("")))
}

// verbsCheck words a verbs probe; sysfsDevices is how many RDMA devices
// sysfs lists, which turns a missing library or device into a warning.
func verbsCheck(p rdma.Probe, sysfsDevices int) Check {
	c := Check{Name: "rdma-verbs", Found: p.String()}
	switch {
	case p.Err == nil:
		c.Status = StatusOK
	case errors.Is(p.Err, rdma.ErrNoLibrary):
		c.Status = StatusAbsent
		c.Fix = "apt-get install libibverbs1 ibverbs-providers, or set KVSIM_IBVERBS=/path/to/libibverbs.so.1"
		if sysfsDevices > 0 {
			c.Status = StatusWarn
		}
	case errors.Is(p.Err, rdma.ErrPortDown):
		c.Status = StatusWarn
		c.Fix = "bring a port up: the cable and switch, a subnet manager (opensm) on InfiniBand, ip link set IFACE up on RoCE"
	case sysfsDevices > 0:
		c.Status = StatusWarn
		c.Fix = "the kernel lists RDMA devices the library cannot open: install the NIC's provider (ibverbs-providers) and load ib_uverbs"
	default:
		c.Status = StatusAbsent
		c.Fix = "optional; to try the verbs path without a NIC, as root: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev IFACE (soft-RoCE)"
	}
	return c
}

func (o Options) nvme() Check {
	c := Check{Name: "nvme"}
	ctrls := hw.ProbeNVMe(o.root)
	if len(ctrls) == 0 {
		c.Status, c.Found = StatusAbsent, "no NVMe controllers in /sys/class/nvme, so no NVMe-oF namespace: an nvmeof tier runs on --dir or a device standing in"
		return c
	}
	var found, fabric []string
	for _, d := range ctrls {
		desc := d.Name + " " + d.Transport
		if d.Fabric() {
			desc += " (NVMe-oF)"
			fabric = append(fabric, d.Name)
		}
		if d.Model != "" {
			desc += " " + d.Model
		}
		if d.Address != "" {
			desc += " at " + d.Address
		}
		found = append(found, desc)
	}
	summary := "no NVMe-oF controller: an nvmeof tier's device would be a local drive or a stand-in"
	if len(fabric) > 0 {
		summary = "NVMe-oF namespaces behind " + strings.Join(fabric, ", ") + " (an nvmeof tier's device = /dev/<controller>n<N>)"
	}
	c.Status, c.Found = StatusOK, strings.Join(found, "; ")+"; "+summary
	return c
}
