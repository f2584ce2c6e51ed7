//go:build !unix

package trace

import "os"

// wakeOpen: no named pipe here blocks its opener.
func wakeOpen(string, os.FileInfo) {}
