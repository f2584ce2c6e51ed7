//go:build linux && (amd64 || arm64)

package rdma

import "os"

func unsetenv(k string) error { return os.Unsetenv(k) }
