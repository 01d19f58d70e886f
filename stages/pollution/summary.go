package pollution

import (
	"maps"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
)

// Share is a count out of a total, with its 95% Wilson interval.
type Share struct {
	Count, Total int
	Share        float64
	Lo, Hi       float64
}

func share(k, n int) Share {
	s := Share{Count: k, Total: n}
	if n > 0 {
		s.Share = float64(k) / float64(n)
		iv := stats.Wilson(float64(k), n, 0.95)
		s.Lo, s.Hi = iv.Lo, iv.Hi
	}
	return s
}

// CategoryShare is one category's share of the reviewed turns and of the
// conversations with at least one reviewed turn.
type CategoryShare struct {
	Category      string
	Turns         Share
	Conversations Share
}

// Summary describes the pollution units of a run for the report.
type Summary struct {
	Turns         int // reviewed assistant turns (done units)
	Failed        int
	Conversations int
	// Any is pollution of any category, over turns and over conversations.
	AnyTurns         Share
	AnyConversations Share
	Categories       []CategoryShare // in Categories() order
	Annotators       map[string]int
}

// Summarizer folds pollution units into a Summary, one unit at a time, in
// memory that does not grow with the run: per-conversation shares need only
// the categories of the conversation being read. Add units grouped by
// conversation, as ledger.Units yields them. Use NewSummarizer; the zero
// value is not ready.
type Summarizer struct {
	s        Summary
	anyTurns int
	turnsBy  map[string]int
	// Conversations with pollution, of any category and per category, up
	// to but not including the current one.
	anyConv int
	convBy  map[string]int
	// The conversation being read and the categories found in it so far.
	lastConv string
	seen     bool
	curAny   bool
	curCats  map[string]bool
}

// NewSummarizer returns an empty Summarizer.
func NewSummarizer() *Summarizer {
	return &Summarizer{s: Summary{Annotators: map[string]int{}}, turnsBy: map[string]int{}, convBy: map[string]int{}, curCats: map[string]bool{}}
}

// Add counts one pollution unit (one variant's). Units that are not done or
// do not decode count as failed.
func (z *Summarizer) Add(u ledger.Unit) {
	s := &z.s
	if u.Status != ledger.Done {
		s.Failed++
		return
	}
	l, err := Decode(u.Output)
	if err != nil {
		s.Failed++
		return
	}
	s.Turns++
	if !z.seen || u.ConvID != z.lastConv {
		z.closeConv()
		s.Conversations++
		z.lastConv, z.seen = u.ConvID, true
	}
	s.Annotators[l.Annotator]++
	if !l.Present {
		return
	}
	z.anyTurns++
	z.curAny = true
	z.turnsBy[l.Category]++
	z.curCats[l.Category] = true
}

// closeConv moves the current conversation's findings into the totals.
func (z *Summarizer) closeConv() {
	if z.curAny {
		z.anyConv++
	}
	for c := range z.curCats {
		z.convBy[c]++
	}
	z.curAny = false
	clear(z.curCats)
}

// Summary returns the summary of the units added so far; adding more units
// later does not change it.
func (z *Summarizer) Summary() Summary {
	s := z.s
	s.Annotators = maps.Clone(z.s.Annotators)
	anyConv := z.anyConv
	if z.curAny {
		anyConv++
	}
	s.AnyTurns, s.AnyConversations = share(z.anyTurns, s.Turns), share(anyConv, s.Conversations)
	s.Categories = nil
	for _, c := range Categories() {
		n := z.convBy[c]
		if z.curCats[c] {
			n++
		}
		s.Categories = append(s.Categories, CategoryShare{Category: c, Turns: share(z.turnsBy[c], s.Turns), Conversations: share(n, s.Conversations)})
	}
	return s
}
