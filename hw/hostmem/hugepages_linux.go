//go:build linux

package hostmem

import (
	"fmt"
	"os"
	"strconv"
)

// SetHugepages sets how many hugepages of size ("2MB" or "1GB") the kernel
// keeps reserved (nr_hugepages in sysfs; for 2MB the same as
// sysctl vm.nr_hugepages). It needs root. The kernel may grant fewer than
// asked (memory too fragmented): got is what it holds now, prev what it
// held before, for putting back.
func SetHugepages(size string, n int64) (prev, got int64, err error) {
	hs, err := parseHugeSize(size)
	if err != nil {
		return 0, 0, err
	}
	path := hs.Sysfs + "/nr_hugepages"
	if prev, err = ReadInt(path); err != nil {
		return 0, 0, fmt.Errorf("hugepages: %w", err)
	}
	if err := os.WriteFile(path, []byte(strconv.FormatInt(n, 10)), 0); err != nil {
		return prev, prev, fmt.Errorf("hugepages: %w", err)
	}
	got, err = ReadInt(path)
	return prev, got, err
}
