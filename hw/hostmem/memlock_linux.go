//go:build linux

package hostmem

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MemlockLimit is the soft RLIMIT_MEMLOCK; unlimited also when
// CAP_IPC_LOCK lifts it.
func MemlockLimit() (limit int64, unlimited bool) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || HasCapIPCLock() {
		return 0, true
	}
	return int64(min(rl.Cur, 1<<62)), false
}

// HasCapIPCLock reads CapEff from /proc/self/status (bit 14).
func HasCapIPCLock() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<unix.CAP_IPC_LOCK) != 0
		}
	}
	return false
}
