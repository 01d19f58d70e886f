//go:build unix

package memgov

import "golang.org/x/sys/unix"

// processCPU is the process's user and system CPU seconds. rusage counts
// the time spent in C (SQLite, zstd), which the runtime's own CPU classes
// count as idle.
func processCPU() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
