package annotator

import (
	"maps"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
)

// Tally is what every annotation stage's summary counts alike: units done
// (turns), failed, the conversations they belong to and the outputs per
// annotator. Units must come grouped by conversation, as ledger.Units yields
// them: a conversation is counted when its first unit arrives, so one whose
// units were split by another's would count twice. The zero Tally is
// ready.
type Tally struct {
	Turns         int // done units whose output decodes
	Failed        int // units not done, or whose output does not decode
	Conversations int // conversations with at least one of Turns
	annotators    map[string]int
	lastConv      string
	seen          bool // a turn was counted, so lastConv is meaningful
}

// Count folds u into z. ok is false when u counts as failed; otherwise v is
// its output as decode read it, credited to the annotator named by who, and
// first says that u opens a conversation.
func Count[T any](z *Tally, u ledger.Unit, decode func([]byte) (T, error), who func(T) string) (v T, first, ok bool) {
	if u.Status != ledger.Done {
		z.Failed++
		return v, false, false
	}
	v, err := decode(u.Output)
	if err != nil {
		z.Failed++
		return v, false, false
	}
	z.Turns++
	if !z.seen || u.ConvID != z.lastConv {
		z.Conversations++
		z.lastConv, z.seen, first = u.ConvID, true, true
	}
	if z.annotators == nil {
		z.annotators = map[string]int{}
	}
	z.annotators[who(v)]++
	return v, first, true
}

// Annotators returns a copy of the counts per annotator, never nil, so a
// summary handed out does not change with later units.
func (z *Tally) Annotators() map[string]int {
	m := make(map[string]int, len(z.annotators))
	maps.Copy(m, z.annotators)
	return m
}

// Share is k out of n as a share and its 95% Wilson interval; all zero when
// n is 0. Units are taken as independent, though those of one conversation
// are not, so the interval is a little narrow.
func Share(k, n int) (share, lo, hi float64) {
	if n <= 0 {
		return 0, 0, 0
	}
	iv := stats.Wilson(float64(k), n, 0.95)
	return float64(k) / float64(n), iv.Lo, iv.Hi
}
