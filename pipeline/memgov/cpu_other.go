//go:build !unix

package memgov

import "runtime/metrics"

// processCPU falls back to the runtime's estimate of Go and GC time.
func processCPU() float64 {
	m := []metrics.Sample{{Name: "/cpu/classes/user:cpu-seconds"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(m)
	var t float64
	for _, s := range m {
		if s.Value.Kind() == metrics.KindFloat64 {
			t += s.Value.Float64()
		}
	}
	return t
}
