//go:build !linux

package hostmem

// MemlockLimit is unlimited where nothing is page-locked.
func MemlockLimit() (limit int64, unlimited bool) { return 0, true }

// HasCapIPCLock is Linux only.
func HasCapIPCLock() bool { return false }
