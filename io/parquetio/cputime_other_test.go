//go:build !unix

package parquetio_test

import "time"

// cpuTime is not measured here; BenchmarkParquetRead then reports wall time
// only.
func cpuTime() time.Duration { return 0 }
