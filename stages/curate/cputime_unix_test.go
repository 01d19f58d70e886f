//go:build unix

package curate_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used. Benchmarks report tokens per
// CPU second beside tokens per wall second because the machines we share are
// often busy, and wall time then measures the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
