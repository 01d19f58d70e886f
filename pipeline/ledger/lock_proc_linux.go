package ledger

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// kernelHolder returns the PID of the process holding an flock on f, as
// Linux lists it in /proc/locks, or 0 when it cannot tell. The kernel
// records the holder when the lock is taken, so a refused process learns it
// even when the holder has not yet written its PID into the sidecar.
func kernelHolder(f *os.File) int {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	return holderIn(locks, uint64(st.Dev), st.Ino)
}

// holderIn finds the flock holder of (dev, ino) in the text of /proc/locks,
// whose lines read "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9986982 0 EOF".
func holderIn(r interface{ Read([]byte) (int, error) }, dev, ino uint64) int {
	major, minor := (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff
	want := fmt.Sprintf(":%d", ino)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// A blocked waiter's line starts "1: ->"; skip those.
		if len(f) < 6 || f[1] != "FLOCK" || f[3] != "WRITE" {
			continue
		}
		id := f[5]
		if !strings.HasSuffix(id, want) {
			continue
		}
		parts := strings.Split(id, ":")
		if len(parts) != 3 {
			continue
		}
		ma, err1 := strconv.ParseUint(parts[0], 16, 64)
		mi, err2 := strconv.ParseUint(parts[1], 16, 64)
		if err1 != nil || err2 != nil || ma != major || mi != minor {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}
