package pollution_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/pollution"
)

// summarize folds units with a Summarizer, in the order given.
func summarize(units []ledger.Unit) pollution.Summary {
	z := pollution.NewSummarizer()
	for _, u := range units {
		z.Add(u)
	}
	return z.Summary()
}

// referenceSummary computes the summary with sets of every conversation,
// as the report did before it streamed.
func referenceSummary(units []ledger.Unit) pollution.Summary {
	s := pollution.Summary{Annotators: map[string]int{}}
	convs, anyConv := map[string]bool{}, map[string]bool{}
	turnsBy, convBy := map[string]int{}, map[string]map[string]bool{}
	anyTurns := 0
	for _, u := range units {
		l, err := pollution.Decode(u.Output)
		if u.Status != ledger.Done || err != nil {
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
	for _, c := range pollution.Categories() {
		s.Categories = append(s.Categories, pollution.CategoryShare{Category: c, Turns: share(turnsBy[c], s.Turns), Conversations: share(len(convBy[c]), s.Conversations)})
	}
	return s
}

// share is k of n with its 95% Wilson interval, as the package reports it.
func share(k, n int) pollution.Share {
	s := pollution.Share{Count: k, Total: n}
	if n > 0 {
		s.Share = float64(k) / float64(n)
		iv := stats.Wilson(float64(k), n, 0.95)
		s.Lo, s.Hi = iv.Lo, iv.Hi
	}
	return s
}

// randomUnits draws pollution units for convs conversations in ledger
// order from a fixed PCG, several categories per conversation, with failed
// and undecodable units between.
func randomUnits(seed uint64, convs int) []ledger.Unit {
	r := rand.New(rand.NewPCG(seed, 4))
	var us []ledger.Unit
	cats := pollution.Categories()
	for c := range convs {
		id := fmt.Sprintf("conv-%x", r.Uint32())
		n := 1 + r.IntN(8)
		for turn := 2; turn < 2+n; turn++ {
			u := ledger.Unit{ConvID: id, ConvSeq: int64(c + 1), Turn: turn, Status: ledger.Done}
			switch r.IntN(12) {
			case 0:
				u.Status = ledger.Failed
			case 1:
				u.Output = []byte(`{"present": "yes"}`)
			default:
				l := pollution.Label{Present: r.IntN(3) == 0, Annotator: "llm:m"}
				if l.Present {
					l.Category = cats[r.IntN(len(cats))]
				}
				u.Output, _ = l.Encode()
			}
			us = append(us, u)
		}
	}
	return us
}

func TestSummarizerMatchesReference(t *testing.T) {
	for _, tt := range []struct {
		name  string
		units []ledger.Unit
	}{
		{"none", nil},
		{"one conversation", randomUnits(1, 1)},
		{"many", randomUnits(2, 300)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, want := summarize(tt.units), referenceSummary(tt.units)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("fold %+v\nwant %+v", got, want)
			}
		})
	}
}
