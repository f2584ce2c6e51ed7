//go:build linux

package sys

import (
	"os"
	"path/filepath"
	"strings"
)

// LoadedLib finds where the dynamic loader found a library loaded by its
// bare name (libcudart.so.12), from /proc/self/maps; "" if it is not
// mapped.
func LoadedLib(name string) string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	stem, _, _ := strings.Cut(name, ".so")
	for line := range strings.SplitSeq(string(b), "\n") {
		if i := strings.Index(line, "/"); i >= 0 && strings.HasPrefix(filepath.Base(line[i:]), stem+".so") {
			return line[i:]
		}
	}
	return ""
}
