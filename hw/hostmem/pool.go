package hostmem

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// PoolOptions configures NewPool.
type PoolOptions struct {
	// Size in bytes; rounded up to a whole number of pages.
	Size int64
	// Hugepages: "off" (or empty) for 4 KiB pages; "try" for hugepages with
	// a fallback to 4 KiB pages that Pool.Fallback reports; "require" to
	// fail when the reserved hugepages do not cover Size (as Mooncake does
	// when MC_STORE_USE_HUGEPAGE is set).
	Hugepages string
	// HugepageSize: "2MB" (default) or "1GB".
	HugepageSize string
	// Name labels the memfd (seen in /proc/PID/fd and /proc/PID/maps).
	Name string
}

// HugeSpec is one hugepage size as the kernel names it.
type HugeSpec struct {
	Label string // "2MB"
	Bytes int64
	Sysfs string // /sys/kernel/mm/hugepages/hugepages-<kB>kB
}

// HugeSpecs are the hugepage sizes kvsim knows: 2MB, then 1GB.

var HugeSpecs = []HugeSpec{
	{"2MB", 2 << 20, "/sys/kernel/mm/hugepages/hugepages-2048kB"},
	{"1GB", 1 << 30, "/sys/kernel/mm/hugepages/hugepages-1048576kB"},
}

func parseHugeSize(s string) (HugeSpec, error) {
	switch strings.ToUpper(s) {
	case "", "2MB", "2M", "2MIB":
		return HugeSpecs[0], nil
	case "1GB", "1G", "1GIB":
		return HugeSpecs[1], nil
	}
	return HugeSpec{}, fmt.Errorf("hugepage size %q: must be 2MB or 1GB", s)
}

func (o *PoolOptions) validate() (mode string, hs HugeSpec, err error) {
	if o.Size <= 0 {
		return "", hs, fmt.Errorf("pool size %d: must be > 0", o.Size)
	}
	mode = strings.ToLower(o.Hugepages)
	switch mode {
	case "":
		mode = "off"
	case "off", "try", "require":
	default:
		return "", hs, fmt.Errorf("hugepages %q: must be off, try or require", o.Hugepages)
	}
	hs, err = parseHugeSize(o.HugepageSize)
	return mode, hs, err
}

// Slots hands out fixed-size blocks of a byte range: a free stack of
// indices, so Alloc and Free are O(1) and allocate nothing. Not safe for
// concurrent use (wrap it in a mutex if needed). With slotBytes a multiple
// of 4096 and page-aligned memory, every slot suits O_DIRECT.
type Slots struct {
	mem   []byte
	size  int
	free  []int32
	inUse []bool
}

// NewSlots splits mem (e.g. Pool.Bytes()) into len(mem)/slotBytes slots;
// the tail that does not fill a slot is unused.
func NewSlots(mem []byte, slotBytes int) *Slots {
	if slotBytes <= 0 {
		panic(fmt.Sprintf("hw.NewSlots: slot size %d must be > 0", slotBytes))
	}
	n := len(mem) / slotBytes
	s := &Slots{mem: mem, size: slotBytes, free: make([]int32, n), inUse: make([]bool, n)}
	for i := range s.free {
		s.free[i] = int32(n - 1 - i) // Alloc hands out 0, 1, 2, ... first
	}
	return s
}

// Alloc takes a free slot; ok is false when all are in use.
func (s *Slots) Alloc() (idx int, ok bool) {
	if len(s.free) == 0 {
		return -1, false
	}
	idx = int(s.free[len(s.free)-1])
	s.free = s.free[:len(s.free)-1]
	s.inUse[idx] = true
	return idx, true
}

// Free returns slot idx; freeing a slot that is not in use panics, as a
// double free would otherwise hand one block to two owners.
func (s *Slots) Free(idx int) {
	if idx < 0 || idx >= len(s.inUse) || !s.inUse[idx] {
		panic(fmt.Sprintf("hw.Slots.Free(%d): slot not in use", idx))
	}
	s.inUse[idx] = false
	s.free = append(s.free, int32(idx))
}

// Slot is slot idx's bytes (capacity limited to the slot).
func (s *Slots) Slot(idx int) []byte {
	off := idx * s.size
	return s.mem[off : off+s.size : off+s.size]
}

// Cap is the number of slots.
func (s *Slots) Cap() int { return len(s.inUse) }

// InUse is the number of allocated slots.
func (s *Slots) InUse() int { return len(s.inUse) - len(s.free) }

// SlotBytes is the size of one slot.
func (s *Slots) SlotBytes() int { return s.size }

// FormatBytes renders n in binary units ("1 GiB", "1.5 MiB").
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + " " + units[i]
}
