//go:build !unix

package trace

import "errors"

func mkfifo(string) error { return errors.New("no named pipes here") }
