//go:build !unix

package curate_test

import "time"

// cpuTime is unavailable here; benchmarks then skip the tok/cpu-s metric.
func cpuTime() time.Duration { return 0 }
