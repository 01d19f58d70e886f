package pollution

import (
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/annotator"
)

// Share is a count out of a total, with its 95% Wilson interval.
type Share struct {
	Count, Total int
	Share        float64
	Lo, Hi       float64
}

func share(k, n int) Share {
	s := Share{Count: k, Total: n}
	s.Share, s.Lo, s.Hi = annotator.Share(k, n)
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
// conversation, as ledger.Units yields them (see annotator.Tally). Use
// NewSummarizer; the zero value is not ready.
type Summarizer struct {
	tally    annotator.Tally
	anyTurns int
	turnsBy  map[string]int
	// Conversations with pollution, of any category and per category, up
	// to but not including the current one.
	anyConv int
	convBy  map[string]int
	// The categories found so far in the conversation being read.
	curAny  bool
	curCats map[string]bool
}

// NewSummarizer returns an empty Summarizer.
func NewSummarizer() *Summarizer {
	return &Summarizer{turnsBy: map[string]int{}, convBy: map[string]int{}, curCats: map[string]bool{}}
}

// Add counts one pollution unit (one variant's). Units that are not done or
// do not decode count as failed.
func (z *Summarizer) Add(u ledger.Unit) {
	l, first, ok := annotator.Count(&z.tally, u, Decode, func(l Label) string { return l.Annotator })
	if !ok {
		return
	}
	if first {
		z.closeConv()
	}
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
	s := Summary{Turns: z.tally.Turns, Failed: z.tally.Failed, Conversations: z.tally.Conversations, Annotators: z.tally.Annotators()}
	anyConv := z.anyConv
	if z.curAny {
		anyConv++
	}
	s.AnyTurns, s.AnyConversations = share(z.anyTurns, s.Turns), share(anyConv, s.Conversations)
	for _, c := range Categories() {
		n := z.convBy[c]
		if z.curCats[c] {
			n++
		}
		s.Categories = append(s.Categories, CategoryShare{Category: c, Turns: share(z.turnsBy[c], s.Turns), Conversations: share(n, s.Conversations)})
	}
	return s
}
