//go:build unix

package trace

import (
	"os"
	"syscall"
)

// wakeOpen ends an open(2) of the named pipe at path that waits for a
// writer, by being one for an instant (the opener then reads nothing).
func wakeOpen(path string, fi os.FileInfo) {
	if fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}
