package run

import (
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
)

// seenSet remembers content hashes in fixed memory (a Bloom filter of
// 2^27 bits, 16 MiB): a dry run over a dump of millions of conversations
// must not hold one entry per conversation. With 7 probes it wrongly
// reports a hash as seen about once in 30,000 at five million
// conversations, which only makes an estimate a hair lower.
type seenSet struct {
	bits []uint64
}

const (
	seenBits   = 1 << 27
	seenProbes = 7
)

func newSeenSet() *seenSet { return &seenSet{} }

// add records h and reports whether it was new.
func (s *seenSet) add(h string) bool {
	if s.bits == nil {
		s.bits = make([]uint64, seenBits/64)
	}
	a, b := split(h)
	fresh := false
	for i := uint64(0); i < seenProbes; i++ {
		bit := (a + i*b) % seenBits
		w, m := bit/64, uint64(1)<<(bit%64)
		if s.bits[w]&m == 0 {
			fresh = true
			s.bits[w] |= m
		}
	}
	return fresh
}

// split derives two independent 64-bit hashes from h (double hashing).
func split(h string) (uint64, uint64) {
	if raw, err := hex.DecodeString(h); err == nil && len(raw) >= 16 {
		return binary.LittleEndian.Uint64(raw), binary.LittleEndian.Uint64(raw[8:]) | 1
	}
	f := fnv.New128a()
	f.Write([]byte(h))
	sum := f.Sum(nil)
	return binary.LittleEndian.Uint64(sum), binary.LittleEndian.Uint64(sum[8:]) | 1
}
