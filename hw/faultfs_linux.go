package hw

import "golang.org/x/sys/unix"

func faultSync(fd int) error {
	for {
		if err := unix.Fdatasync(fd); err != unix.EINTR {
			return err
		}
	}
}
