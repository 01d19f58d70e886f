package run

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/filter"
)

// NearDedupe is --dedupe near in the stored form of Filter: the settings of
// near-duplicate detection over the user turns (see filter.NearOptions).
// Zero fields take filter's defaults; the stored form has them filled in,
// so a run that used the defaults keeps them even if a later version
// changes them.
type NearDedupe struct {
	Threshold    float64 `json:"threshold"`
	ShingleWords int     `json:"shingle_words"`
}

func (n *NearDedupe) options() filter.NearOptions {
	return filter.NearOptions{Threshold: n.Threshold, ShingleWords: n.ShingleWords}
}

// resolved is n with the defaults filled in; nil stays nil.
func (n *NearDedupe) resolved() *NearDedupe {
	if n == nil {
		return nil
	}
	o := n.options().WithDefaults()
	return &NearDedupe{Threshold: o.Threshold, ShingleWords: o.ShingleWords}
}

// errNearShard refuses near dedupe in a shard: a shard sees only the
// conversations whose id hash falls in it, and the merge could not drop
// near duplicates across shards as one process would have (a conversation
// dropped in its shard may have matched one that another shard's earlier
// conversation drops in the merged order).
var errNearShard = errors.New("--dedupe near needs the whole input in one run: a shard sees only its own conversations, and near duplicates across shards cannot be dropped as one process would drop them; ingest without --shard")

// dedupes reports whether ingest drops exact duplicates: near dedupe drops
// them too, first.
func (f Filter) dedupes() bool { return f.Dedupe || f.Near != nil }

// nearDedupe builds ingest's near-duplicate settings; nil when off.
func (f Filter) nearDedupe() (*ledger.NearDedupe, error) {
	if f.Near == nil {
		return nil, nil
	}
	n, err := filter.NewNear(f.Near.options())
	if err != nil {
		return nil, err
	}
	return &ledger.NearDedupe{Sketch: n.Sketch, Similarity: filter.Similarity, Threshold: n.Threshold()}, nil
}

// nearSeen estimates, for a dry run, which conversations near dedupe would
// drop, in fixed memory: a conversation any of whose band keys was seen
// among the ones kept before it counts as dropped. Candidates are not
// compared by signature (that would need the index), so the count is an
// upper bound: it includes pairs that share a band but fall below the
// threshold, and the Bloom filter's rare false hits.
type nearSeen struct {
	near *filter.Near
	keys *seenSet
}

func (f Filter) nearSeen() (*nearSeen, error) {
	if f.Near == nil {
		return nil, nil
	}
	n, err := filter.NewNear(f.Near.options())
	if err != nil {
		return nil, err
	}
	return &nearSeen{near: n, keys: newSeenSet()}, nil
}

// drops reports whether c would be counted as a near duplicate, and
// remembers c's band keys when it would be kept.
func (s *nearSeen) drops(c *conv.Conversation) bool {
	_, bands, ok := s.near.Sketch(c)
	if !ok {
		return false
	}
	hexKeys := make([]string, len(bands))
	for i, k := range bands {
		// seenSet derives its two probe hashes from 16 bytes: the key,
		// then the key mixed (a multiply by an odd constant).
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], uint64(k))
		binary.LittleEndian.PutUint64(b[8:], uint64(k)*0x9e3779b97f4a7c15)
		hexKeys[i] = hex.EncodeToString(b[:])
		if s.keys.has(hexKeys[i]) {
			return true
		}
	}
	for _, h := range hexKeys {
		s.keys.add(h)
	}
	return false
}

// has reports whether h was added (or, rarely, a false hit).
func (s *seenSet) has(h string) bool {
	if s.bits == nil {
		return false
	}
	a, b := split(h)
	for i := uint64(0); i < seenProbes; i++ {
		bit := (a + i*b) % seenBits
		if s.bits[bit/64]&(uint64(1)<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}

// writeNearPairs shows, under the drop counts of 'ac3 status', the first
// near-duplicate pairs and where to find them all.
func writeNearPairs(w io.Writer, st ledger.Status) {
	if len(st.NearDuplicates) == 0 {
		return
	}
	fmt.Fprintf(w, "near duplicates, the first %d of %d ('ac3 export --what duplicates' lists all):\n", len(st.NearDuplicates), st.Dropped[ledger.DropNearDuplicate])
	for _, p := range st.NearDuplicates {
		src := conv.Source{File: filepath.Base(p.File), Line: p.Line, Row: p.Row}
		fmt.Fprintf(w, "  %s (%s) matched kept %s, similarity %.2f\n", p.DroppedID, src, p.KeptID, p.Similarity)
	}
}
