package export

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"os"

	"github.com/ac3/ac3/pipeline/conv"
)

// Exports that leave out a row equal to an earlier one (preferences,
// winners) remember each row's digest in a ledger.DigestSet, on disk.
//
// Equal rows are not confined to one conversation and turn, so a set per
// turn would not do: two conversations that start alike (WildChat holds
// many: the same prompt sent again, a conversation continued in a new one)
// give equal contexts at their first turns, and a model's answers to equal
// requests come from the cache, so their rows are equal too. Nor can the set
// be in memory: a run can hold millions of verdicts.

// rowDigest hashes a row's message lists, each message length-prefixed so
// no two different rows run together into the same bytes.
type rowDigest struct{ h hash.Hash }

func newRowDigest() rowDigest { return rowDigest{sha256.New()} }

func (r rowDigest) text(s string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
	r.h.Write(n[:])
	r.h.Write([]byte(s))
}

func (r rowDigest) messages(ms []conv.Message) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(ms)))
	r.h.Write(n[:])
	for _, m := range ms {
		r.text(string(m.Role))
		r.text(m.Content)
	}
}

func (r rowDigest) sum() [16]byte {
	var d [16]byte
	copy(d[:], r.h.Sum(nil))
	return d
}

// removeFile removes path, if it is there.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
