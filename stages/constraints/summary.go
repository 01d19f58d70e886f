package constraints

import (
	"sort"
	"strconv"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/annotator"
)

// TypeCount is how many constraints of one type were set, with the share of
// all constraints set and its 95% Wilson interval.
type TypeCount struct {
	Type   string
	Count  int
	Share  float64
	Lo, Hi float64
}

// TurnCount is how many constraints were set at user turns in a bucket
// ("1" … "9", "10+").
type TurnCount struct {
	Turns string
	Count int
}

// Summary describes the constraints units of a run for the report.
type Summary struct {
	Turns         int // user turns read (done units)
	Failed        int
	Conversations int
	// TurnsWithNew counts turns that set at least one constraint, and
	// ConversationsWithAny conversations whose registry is not empty at
	// their last read turn.
	TurnsWithNew         int
	ConversationsWithAny int
	Constraints          int // constraints set, all turns
	ByType               []TypeCount
	ByTurn               []TurnCount
	Annotators           map[string]int
}

// Summarizer folds constraints units into a Summary, one unit at a time,
// in memory that does not grow with the run. Add units grouped by
// conversation, as ledger.Units yields them (see annotator.Tally). Use
// NewSummarizer; the zero value is not ready.
type Summarizer struct {
	tally        annotator.Tally
	turnsWithNew int
	convsWithAny int
	constraints  int
	byType       map[string]int
	byTurn       map[string]int
	lastAny      bool // the current conversation was counted in ConversationsWithAny
}

// NewSummarizer returns an empty Summarizer.
func NewSummarizer() *Summarizer {
	return &Summarizer{byType: map[string]int{}, byTurn: map[string]int{}}
}

// Add counts one constraints unit (normally of one variant). Units that are
// not done or do not decode count as failed.
func (z *Summarizer) Add(u ledger.Unit) {
	r, first, ok := annotator.Count(&z.tally, u, Decode, func(r Record) string { return r.Annotator })
	if !ok {
		return
	}
	if first {
		z.lastAny = false
	}
	if len(r.New) > 0 {
		z.turnsWithNew++
	}
	// A conversation counts once, at the first read turn with a
	// constraint in force.
	if len(r.Registry) > 0 && !z.lastAny {
		z.convsWithAny++
		z.lastAny = true
	}
	for _, c := range r.New {
		z.constraints++
		z.byType[c.Type]++
		z.byTurn[turnBucket(c.Turn)]++
	}
}

// Summary returns the summary of the units added so far; adding more units
// later does not change it.
func (z *Summarizer) Summary() Summary {
	s := Summary{Turns: z.tally.Turns, Failed: z.tally.Failed, Conversations: z.tally.Conversations,
		TurnsWithNew: z.turnsWithNew, ConversationsWithAny: z.convsWithAny, Constraints: z.constraints,
		Annotators: z.tally.Annotators()}
	for _, t := range Types() {
		tc := TypeCount{Type: t, Count: z.byType[t]}
		tc.Share, tc.Lo, tc.Hi = annotator.Share(tc.Count, s.Constraints)
		s.ByType = append(s.ByType, tc)
	}
	for k, n := range z.byTurn {
		s.ByTurn = append(s.ByTurn, TurnCount{Turns: k, Count: n})
	}
	sort.Slice(s.ByTurn, func(i, j int) bool { return bucketOrder(s.ByTurn[i].Turns) < bucketOrder(s.ByTurn[j].Turns) })
	return s
}

func turnBucket(t int) string {
	if t >= 10 {
		return "10+"
	}
	return strconv.Itoa(t)
}

func bucketOrder(b string) int {
	if b == "10+" {
		return 10
	}
	n, _ := strconv.Atoi(b)
	return n
}
