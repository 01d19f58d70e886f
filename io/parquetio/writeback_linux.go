//go:build linux

package parquetio

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's dirty pages to disk,
// without waiting for them. A file from Create is synced when it is
// committed; left to itself the kernel writes back nothing of a file this
// young, so that sync had the whole file to write while the process did
// nothing else (about 0.15 s of a 2.5 s conversion of 540 MB). Started
// after each row group, the writing overlaps the next row groups' work
// and the final sync finds little left. Failure only loses the head start.
func startWriteback(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	})
}
