//go:build linux

package hostmem

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"kvsim/hw/internal/sys"
	"kvsim/hw/ioengine"
)

// Pool is a DRAM pool: a memfd mapped MAP_SHARED and populated up front,
// so another process given the fd maps the same physical pages (see
// ServePool). It never uses MAP_NORESERVE: a hugepage shortage must show
// at creation, not as a SIGBUS on first touch. The memfd is sealed against
// shrinking and growing (and against further seals) before anyone can
// see it, so no process it is shared with can truncate it under another's
// mapping.
type Pool struct {
	mem      []byte
	fd       sys.FD
	backend  string
	fallback string
	pageSize int64
}

// NewPool creates a pool as o says. With Hugepages "try" a shortage falls
// back to 4 KiB pages (Fallback says why); with "require" it is an error
// that gives the reserved and free counts and the command that reserves
// enough.
func NewPool(o PoolOptions) (*Pool, error) {
	mode, hs, err := o.validate()
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		name = "kvsim-pool"
	}
	fallback := ""
	if mode != "off" {
		p, err := newMemfdPool(name, o.Size, &hs)
		if err == nil {
			return p, nil
		}
		if mode == "require" {
			return nil, fmt.Errorf("pool (hugepages=require): %w", err)
		}
		fallback = err.Error() + "; using 4 KiB pages"
	}
	p, err := newMemfdPool(name, o.Size, nil)
	if err != nil {
		return nil, err
	}
	p.fallback = fallback
	return p, nil
}

func newMemfdPool(name string, size int64, hs *HugeSpec) (*Pool, error) {
	page, flags, backend := int64(4096), unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING, "memfd+4K"
	if hs != nil {
		if _, err := os.Stat(hs.Sysfs); err != nil {
			return nil, fmt.Errorf("this kernel or CPU has no %s hugepages (%s is absent)", hs.Label, hs.Sysfs)
		}
		page, backend = hs.Bytes, "memfd+hugetlb-"+hs.Label
		flags |= unix.MFD_HUGETLB | unix.MFD_HUGE_2MB
		if hs.Bytes == 1<<30 {
			flags = unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING | unix.MFD_HUGETLB | unix.MFD_HUGE_1GB
		}
	}
	size = (size + page - 1) / page * page
	if size <= 0 || uint64(size) > uint64(^uintptr(0)>>1) {
		return nil, fmt.Errorf("pool size %d: out of range", size)
	}
	fd, err := sys.MemfdCreate(name, flags)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	kept := false
	defer func() {
		if !kept {
			fd.Close()
		}
	}()
	// ftruncate succeeds even with no hugepages free; mmap is where the
	// kernel reserves them, so that is where a shortage shows (ENOMEM).
	if err := unix.Ftruncate(fd.Int(), size); err != nil {
		return nil, fmt.Errorf("memfd ftruncate %d: %w", size, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd.Int()), unix.F_ADD_SEALS, poolSeals); err != nil {
		return nil, fmt.Errorf("memfd seal (F_ADD_SEALS): %w", err)
	}
	mem, err := mmapShared(fd.Int(), size)
	if err != nil {
		if hs != nil && errors.Is(err, unix.ENOMEM) {
			return nil, hugeShortage(*hs, size, err)
		}
		return nil, err
	}
	kept = true
	return &Pool{mem: mem, fd: fd, backend: backend, pageSize: page}, nil
}

// poolSeals fix a pool's size for good: a mapping can never lose its
// pages to a truncate (SIGBUS), and no one can add seals later.
const poolSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

func mmapShared(fd int, size int64) ([]byte, error) {
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	return unsafe.Slice((*byte)(p), size), nil
}

// HugepageCounts reads how many hugepages of size ("2MB" or "1GB") are
// reserved (nr_hugepages) and free.
func HugepageCounts(size string) (reserved, free int64, err error) {
	hs, err := parseHugeSize(size)
	if err != nil {
		return 0, 0, err
	}
	if reserved, err = ReadInt(hs.Sysfs + "/nr_hugepages"); err != nil {
		return 0, 0, err
	}
	free, err = ReadInt(hs.Sysfs + "/free_hugepages")
	return reserved, free, err
}

// ReadInt reads a file holding one integer (a sysfs or procfs counter).
func ReadInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// hugeShortage explains a failed hugetlb mapping and how to fix it.
func hugeShortage(hs HugeSpec, size int64, cause error) error {
	need := size / hs.Bytes
	nr, free, err := HugepageCounts(hs.Label)
	if err != nil {
		return fmt.Errorf("%s on %s hugepages: %w (and %v)", FormatBytes(size), hs.Label, cause, err)
	}
	// Free pages already promised to other mappings (resv) are not ours.
	avail := free
	if resv, err := ReadInt(hs.Sysfs + "/resv_hugepages"); err == nil {
		avail = max(free-resv, 0)
	}
	want := nr + max(need-avail, 0)
	fix := fmt.Sprintf("sysctl -w vm.nr_hugepages=%d", want)
	if hs.Bytes == 1<<30 {
		fix = fmt.Sprintf("echo %d > %s/nr_hugepages (1GB pages are easiest to get at boot: hugepagesz=1G hugepages=%d)", want, hs.Sysfs, want)
	}
	return fmt.Errorf("%s on %s hugepages needs %d pages, but %d are reserved and %d free (%v); reserve more as root: %s",
		FormatBytes(size), hs.Label, need, nr, free, cause, fix)
}

// Bytes is the whole pool.
func (p *Pool) Bytes() []byte { return p.mem }

// Fd is the memfd; it stays owned by the pool.
func (p *Pool) Fd() int { return p.fd.Int() }

// Size is the pool's length in bytes (Size from the options, rounded up).
func (p *Pool) Size() int64 { return int64(len(p.mem)) }

// PageSize is the size of the pages backing the pool.
func (p *Pool) PageSize() int64 { return p.pageSize }

// Backend says what backs the pool: "memfd+hugetlb-2MB",
// "memfd+hugetlb-1GB" or "memfd+4K".
func (p *Pool) Backend() string { return p.backend }

// Fallback is why hugepages were not used in "try" mode ("" if they were,
// or were not asked for).
func (p *Pool) Fallback() string { return p.fallback }

// Arena is a view of the pool for NewEngine, so that SSD I/O can go
// straight between the pool and files with registered buffers. Closing the
// view does nothing; the pool must outlive every engine that uses it.
func (p *Pool) Arena() *ioengine.Arena {
	return ioengine.ViewArena(p.mem, p.pageSize >= ioengine.HugePageSize, p.backend)
}

// Close unmaps the pool and closes its fd. Processes that received it keep
// their own mapping.
func (p *Pool) Close() error {
	if p.mem == nil {
		return nil
	}
	err := unix.MunmapPtr(unsafe.Pointer(&p.mem[0]), uintptr(len(p.mem)))
	p.mem = nil
	return errors.Join(err, p.fd.Close())
}
