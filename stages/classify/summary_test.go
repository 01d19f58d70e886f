package classify_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/classify"
)

// summarize folds units with a Summarizer, in the order given.
func summarize(units []ledger.Unit) classify.Summary {
	z := classify.NewSummarizer()
	for _, u := range units {
		z.Add(u)
	}
	return z.Summary()
}

// referenceSummary is the summary computed with a set of every conversation,
// as the report did before it streamed: the fold must agree with it.
func referenceSummary(units []ledger.Unit) classify.Summary {
	s := classify.Summary{Annotators: map[string]int{}, Refs: map[string]int{}}
	counts, convs := map[string]int{}, map[string]bool{}
	for _, u := range units {
		l, err := classify.Decode(u.Output)
		if u.Status != ledger.Done || err != nil {
			s.Failed++
			continue
		}
		s.Turns++
		convs[u.ConvID] = true
		counts[l.Type]++
		s.Annotators[l.Annotator]++
		if len(l.Refs) == 0 {
			s.SelfContained++
		}
		for _, r := range l.Refs {
			s.Refs[r]++
		}
	}
	s.Conversations = len(convs)
	for _, t := range classify.Types() {
		ts := classify.TypeShare{Type: t, Count: counts[t]}
		if s.Turns > 0 {
			ts.Share = float64(ts.Count) / float64(s.Turns)
			iv := stats.Wilson(float64(ts.Count), s.Turns, 0.95)
			ts.Lo, ts.Hi = iv.Lo, iv.Hi
		}
		s.Types = append(s.Types, ts)
	}
	return s
}

// randomUnits draws classify units for convs conversations in ledger order
// from a fixed PCG, with failed and undecodable units between good ones.
func randomUnits(seed uint64, convs int) []ledger.Unit {
	r := rand.New(rand.NewPCG(seed, 2))
	var us []ledger.Unit
	for c := range convs {
		id := fmt.Sprintf("conv-%x", r.Uint32())
		n := 1 + r.IntN(5)
		for turn := 2; turn < 2+n; turn++ {
			u := ledger.Unit{ConvID: id, ConvSeq: int64(c + 1), Turn: turn, Status: ledger.Done}
			switch r.IntN(10) {
			case 0:
				u.Status = ledger.Failed
			case 1:
				u.Output = []byte(`{"type": "chitchat"}`)
			default:
				l := classify.Label{Type: classify.Types()[r.IntN(3)], Annotator: []string{"heuristic", "llm:m"}[r.IntN(2)], Refs: []string{"1a", "2u", "3a"}[:r.IntN(3)]}
				u.Output, _ = l.Encode()
			}
			us = append(us, u)
		}
	}
	return us
}

func TestSummarizerMatchesReference(t *testing.T) {
	tests := []struct {
		name  string
		units []ledger.Unit
	}{
		{"none", nil},
		{"one conversation", randomUnits(1, 1)},
		{"many", randomUnits(2, 300)},
		{"only failed", []ledger.Unit{{ConvID: "a", Status: ledger.Failed}, {ConvID: "b", Status: ledger.Failed}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := summarize(tt.units), referenceSummary(tt.units)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("fold %+v\nwant %+v", got, want)
			}
			if g, w := got.RefTags(), want.RefTags(); !reflect.DeepEqual(g, w) {
				t.Errorf("ref tags %v, want %v", g, w)
			}
		})
	}
}

// A summary taken midway is not changed by later units.
func TestSummarizerSnapshot(t *testing.T) {
	us := randomUnits(3, 20)
	z := classify.NewSummarizer()
	for _, u := range us[:len(us)/2] {
		z.Add(u)
	}
	mid := z.Summary()
	want := referenceSummary(us[:len(us)/2])
	for _, u := range us[len(us)/2:] {
		z.Add(u)
	}
	if !reflect.DeepEqual(mid, want) {
		t.Errorf("midway summary changed by later units: %+v, want %+v", mid, want)
	}
}
