//go:build linux

package hostmem

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"kvsim/hw/ioengine"
	"kvsim/internal/testenv"
)

// freeHugepages makes exactly n pages of size free for the test, by
// changing nr_hugepages as root, and puts it back when the test ends. When
// n pages are free already it needs no root. It returns how many are free.
func freeHugepages(t *testing.T, size string, n int64) int64 {
	t.Helper()
	nr, free, err := HugepageCounts(size)
	if err != nil {
		probeLacks(t, "%s hugepages: %v", size, err)
	}
	if free == n {
		return free
	}
	probeRoot(t)
	prev, _, err := SetHugepages(size, nr-free+n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A page another test process still maps (go test runs hw's
		// packages at once, and their arenas try hugetlb) is given back
		// only when it is unmapped: retry for a while before calling
		// the restore failed.
		var got int64
		var err error
		for deadline := testenv.Deadline(t); ; time.Sleep(50 * time.Millisecond) {
			if _, got, err = SetHugepages(size, prev); (err == nil && got == prev) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || got != prev {
			t.Errorf("restoring %s nr_hugepages to %d: got %d, %v", size, prev, got, err)
		}
	})
	_, free, err = HugepageCounts(size)
	if err != nil {
		t.Fatal(err)
	}
	return free
}

func TestPoolRequireNoHugepages(t *testing.T) {
	probeLeaks(t)
	if free := freeHugepages(t, "2MB", 0); free != 0 {
		t.Fatalf("%d 2MB pages still free", free)
	}
	nr, _, _ := HugepageCounts("2MB")
	_, err := NewPool(PoolOptions{Size: 4 << 20, Hugepages: "require"})
	for _, want := range []string{
		"pool (hugepages=require): 4 MiB on 2MB hugepages needs 2 pages",
		fmt.Sprintf("but %d are reserved and 0 free", nr),
		"cannot allocate memory",
		fmt.Sprintf("reserve more as root: sysctl -w vm.nr_hugepages=%d", nr+2),
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewPool(require) = %v\nwant it to say %q", err, want)
		}
	}
}

func TestPoolTryNoHugepages(t *testing.T) {
	probeLeaks(t)
	freeHugepages(t, "2MB", 0)
	p := newTestPool(t, PoolOptions{Size: 4 << 20, Hugepages: "try"})
	if p.Backend() != "memfd+4K" || !strings.Contains(p.Fallback(), "needs 2 pages") || !strings.HasSuffix(p.Fallback(), "; using 4 KiB pages") {
		t.Errorf("backend %q, fallback %q", p.Backend(), p.Fallback())
	}
}

func TestPoolRequireHugepages(t *testing.T) {
	probeLeaks(t)
	if free := freeHugepages(t, "2MB", 4); free < 3 {
		probeLacks(t, "the kernel granted only %d free 2MB pages", free)
	}
	p := newTestPool(t, PoolOptions{Size: 5 << 20, Hugepages: "require"})
	if p.Backend() != "memfd+hugetlb-2MB" || p.Fallback() != "" || p.PageSize() != 2<<20 || p.Size() != 6<<20 {
		t.Errorf("backend %q fallback %q page %d size %d", p.Backend(), p.Fallback(), p.PageSize(), p.Size())
	}
	if _, free, _ := HugepageCounts("2MB"); free != 1 {
		t.Errorf("%d pages free with the pool open, want 1", free)
	}
	p.Bytes()[p.Size()-1] = 1
	// An arena takes hugetlb pages too when they are free.
	a, err := ioengine.NewArena(2 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if a.Backend() != "hugetlb-2MB" || !a.Huge {
		t.Errorf("arena on %s", a.Backend())
	}
	a.Close()
}

func TestPool1GB(t *testing.T) {
	probeLeaks(t)
	if _, err := os.Stat(HugeSpecs[1].Sysfs); err != nil {
		probeLacks(t, "no 1GB hugepages: %v", err)
	}
	if free := freeHugepages(t, "1GB", 1); free < 1 {
		probeLacks(t, "the kernel could not find 1 GiB of contiguous memory for a 1GB page")
	}
	p := newTestPool(t, PoolOptions{Size: 1, Hugepages: "require", HugepageSize: "1GB"})
	if p.Backend() != "memfd+hugetlb-1GB" || p.Size() != 1<<30 {
		t.Errorf("backend %q size %d", p.Backend(), p.Size())
	}
}

// BenchmarkPoolPopulate creates, populates (MAP_POPULATE) and closes a
// 1 GiB pool on 4 KiB pages and on 2 MiB hugetlb pages (KVSIM_POOL_SIZE
// overrides the size). The hugetlb case needs the pages reserved first:
// scripts/bench-populate.sh does that.
func BenchmarkPoolPopulate(b *testing.B) {
	size := int64(1 << 30)
	if s := os.Getenv("KVSIM_POOL_SIZE"); s != "" {
		fmt.Sscan(s, &size)
	}
	for _, c := range []struct{ name, huge string }{{"4K", "off"}, {"hugetlb-2MB", "require"}} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				p, err := NewPool(PoolOptions{Size: size, Hugepages: c.huge})
				if err != nil {
					if errors.Is(err, ioengine.ErrUnsupported) || c.huge != "off" {
						b.Skip(err)
					}
					b.Fatal(err)
				}
				total += time.Since(start)
				p.Close()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/pool")
			b.SetBytes(size)
		})
	}
}
