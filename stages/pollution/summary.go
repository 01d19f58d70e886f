package pollution

import (
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

// Summarize summarises pollution units (one variant's, as read with
// ledger.Units). Units that do not decode count as failed.
func Summarize(units []ledger.Unit) Summary {
	s := Summary{Annotators: map[string]int{}}
	convs := map[string]bool{}
	anyConv := map[string]bool{}
	turnsBy := map[string]int{}
	convBy := map[string]map[string]bool{}
	anyTurns := 0
	for _, u := range units {
		if u.Status != "done" {
			s.Failed++
			continue
		}
		l, err := Decode(u.Output)
		if err != nil {
			s.Failed++
			continue
		}
		s.Turns++
		convs[u.ConvID] = true
		s.Annotators[l.Annotator]++
		if !l.Present {
			continue
		}
		anyTurns++
		anyConv[u.ConvID] = true
		turnsBy[l.Category]++
		if convBy[l.Category] == nil {
			convBy[l.Category] = map[string]bool{}
		}
		convBy[l.Category][u.ConvID] = true
	}
	s.Conversations = len(convs)
	s.AnyTurns, s.AnyConversations = share(anyTurns, s.Turns), share(len(anyConv), s.Conversations)
	for _, c := range Categories() {
		s.Categories = append(s.Categories, CategoryShare{Category: c, Turns: share(turnsBy[c], s.Turns), Conversations: share(len(convBy[c]), s.Conversations)})
	}
	return s
}
