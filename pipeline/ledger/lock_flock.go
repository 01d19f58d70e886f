//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos

package ledger

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive flock on f without waiting. flock (unlike
// fcntl's record locks) belongs to the open file, so a second Open in the
// same process is refused too, and closing some other descriptor of the
// file does not drop it.
func tryLock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return errWouldBlock
		default:
			return err
		}
	}
}
