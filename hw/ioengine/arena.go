//go:build linux

package ioengine

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Arena is mmap'd memory for I/O buffers: page-aligned, invisible to the
// garbage collector, so its addresses may be handed to the kernel.
type Arena struct {
	mem     []byte
	Huge    bool // backed by 2 MiB pages (hugetlb or THP)
	backend string
	view    bool // borrowed from a Pool: Close leaves the mapping alone
}

// HugePageSize is the size of the huge pages arenas and pools use.
const HugePageSize = 2 << 20

const hugeSize = HugePageSize

// ViewArena is an Arena over memory someone else owns (a Pool), so that
// NewEngine can register it; closing the view leaves the mapping alone.
func ViewArena(mem []byte, huge bool, backend string) *Arena {
	return &Arena{mem: mem, Huge: huge, backend: backend, view: true}
}

// NewArena maps size bytes (rounded up to 2 MiB). It tries hugetlb pages,
// then a THP-advised mapping, then plain 4 KiB pages.
func NewArena(size int) (*Arena, error) { return NewArenaPages(size, true) }

// NewArenaPages is NewArena with a choice: huge=false maps 4 KiB pages
// only (THP disabled for the range), to measure what the page size costs.
// A 1 MiB request from 4 KiB pages needs 256 segments, more than many
// disks take in one command, so the page size shows in SSD throughput.
func NewArenaPages(size int, huge bool) (*Arena, error) {
	size = (size + hugeSize - 1) &^ (hugeSize - 1)
	if size == 0 {
		size = hugeSize
	}
	const prot = unix.PROT_READ | unix.PROT_WRITE
	const flags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if huge {
		if p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), prot, flags|unix.MAP_POPULATE|unix.MAP_HUGETLB|unix.MAP_HUGE_2MB); err == nil {
			return &Arena{mem: unsafe.Slice((*byte)(p), size), Huge: true, backend: "hugetlb-2MB"}, nil
		}
	}
	// Over-map by 2 MiB so the range can start on a 2 MiB boundary: THP
	// only backs aligned 2 MiB extents.
	raw, err := unix.MmapPtr(-1, 0, nil, uintptr(size+hugeSize), prot, flags)
	if err != nil {
		return nil, fmt.Errorf("arena: mmap %d bytes: %w", size, err)
	}
	head := (hugeSize - uintptr(raw)%hugeSize) % hugeSize
	p := unsafe.Add(raw, head)
	if head > 0 {
		_ = unix.MunmapPtr(raw, head)
	}
	if tail := hugeSize - head; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, size), tail)
	}
	a := &Arena{mem: unsafe.Slice((*byte)(p), size), backend: "4K"}
	advice := unix.MADV_NOHUGEPAGE
	if huge {
		advice = unix.MADV_HUGEPAGE
	}
	thp := unix.Madvise(a.mem, advice) == nil && huge
	populate(a.mem)
	if thp && anonHugeBytes(uintptr(p)) >= int64(size)/2 {
		a.Huge, a.backend = true, "thp-2MB"
	}
	return a, nil
}

// populate faults every page in now (after the THP advice, so the faults
// take 2 MiB pages), keeping page faults out of the timed I/O.
func populate(mem []byte) {
	if unix.Madvise(mem, unix.MADV_POPULATE_WRITE) == nil {
		return
	}
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 0
	}
}

// anonHugeBytes reads AnonHugePages of the mapping that holds addr from
// /proc/self/smaps: whether THP actually backs it. (A neighbouring mapping
// with the same flags may have merged into it; that only overstates.)
func anonHugeBytes(addr uintptr) int64 {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, rest, ok := strings.Cut(line, "-"); ok && !strings.Contains(lo, ":") {
			hi, _, _ := strings.Cut(rest, " ")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(addr) >= l && uint64(addr) < h
				continue
			}
		}
		if v, ok := strings.CutPrefix(line, "AnonHugePages:"); ok && in {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Bytes is the whole arena.
func (a *Arena) Bytes() []byte { return a.mem }

// Slice returns n bytes at off.
func (a *Arena) Slice(off, n int) []byte { return a.mem[off : off+n : off+n] }

// Backend says what pages back the arena: "hugetlb-2MB", "thp-2MB", "4K",
// or the pool's backend for a pool's view.
func (a *Arena) Backend() string { return a.backend }

// Close unmaps the arena; slices from it must not be used afterwards.
// Closing a pool's view does nothing: the pool owns that mapping.
func (a *Arena) Close() error {
	if a.mem == nil {
		return nil
	}
	mem := a.mem
	a.mem = nil
	if a.view {
		return nil
	}
	return unix.MunmapPtr(unsafe.Pointer(&mem[0]), uintptr(len(mem)))
}
