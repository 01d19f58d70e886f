//go:build windows

package ledger

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes an exclusive lock on one byte of f far past its text, so
// the holder's PID and host at the start stay readable (Windows locks are
// mandatory for the range they cover).
func tryLock(f *os.File) error {
	ol := &windows.Overlapped{Offset: 0, OffsetHigh: 0x7fffffff}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errWouldBlock
	}
	return err
}
