package memgov

import "runtime/metrics"

// reader reads Samples from the runtime; its buffer is reused.
type reader struct {
	m []metrics.Sample
}

const (
	mTotal    = "/memory/classes/total:bytes"
	mReleased = "/memory/classes/heap/released:bytes"
	mCycles   = "/gc/cycles/total:gc-cycles"
	mGCCPU    = "/cpu/classes/gc/total:cpu-seconds"
)

func newReader() *reader {
	return &reader{m: []metrics.Sample{{Name: mTotal}, {Name: mReleased}, {Name: mCycles}, {Name: mGCCPU}}}
}

// read fills everything but Elapsed.
func (r *reader) read() Sample {
	metrics.Read(r.m)
	var s Sample
	// The soft limit counts what the runtime has mapped minus what it has
	// returned to the OS; so does the footprint the governor caps.
	s.Footprint = int64(uint64Of(r.m[0]) - uint64Of(r.m[1]))
	s.GCCycles = uint64Of(r.m[2])
	if r.m[3].Value.Kind() == metrics.KindFloat64 {
		s.GCCPU = r.m[3].Value.Float64()
	}
	s.CPU = processCPU()
	return s
}

func uint64Of(s metrics.Sample) uint64 {
	if s.Value.Kind() == metrics.KindUint64 {
		return s.Value.Uint64()
	}
	return 0
}
