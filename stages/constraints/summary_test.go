package constraints_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/constraints"
)

// summarize folds units with a Summarizer, in the order given.
func summarize(units []ledger.Unit) constraints.Summary {
	z := constraints.NewSummarizer()
	for _, u := range units {
		z.Add(u)
	}
	return z.Summary()
}

// referenceSummary computes the summary with sets of every conversation,
// as the report did before it streamed.
func referenceSummary(units []ledger.Unit) constraints.Summary {
	s := constraints.Summary{Annotators: map[string]int{}}
	byType, byTurn := map[string]int{}, map[string]int{}
	convs, withAny := map[string]bool{}, map[string]bool{}
	bucket := func(t int) string {
		if t >= 10 {
			return "10+"
		}
		return strconv.Itoa(t)
	}
	for _, u := range units {
		r, err := constraints.Decode(u.Output)
		if u.Status != ledger.Done || err != nil {
			s.Failed++
			continue
		}
		s.Turns++
		convs[u.ConvID] = true
		s.Annotators[r.Annotator]++
		if len(r.New) > 0 {
			s.TurnsWithNew++
		}
		if len(r.Registry) > 0 {
			withAny[u.ConvID] = true
		}
		for _, c := range r.New {
			s.Constraints++
			byType[c.Type]++
			byTurn[bucket(c.Turn)]++
		}
	}
	s.Conversations, s.ConversationsWithAny = len(convs), len(withAny)
	for _, t := range constraints.Types() {
		tc := constraints.TypeCount{Type: t, Count: byType[t]}
		if s.Constraints > 0 {
			tc.Share = float64(tc.Count) / float64(s.Constraints)
			iv := stats.Wilson(float64(tc.Count), s.Constraints, 0.95)
			tc.Lo, tc.Hi = iv.Lo, iv.Hi
		}
		s.ByType = append(s.ByType, tc)
	}
	for k, n := range byTurn {
		s.ByTurn = append(s.ByTurn, constraints.TurnCount{Turns: k, Count: n})
	}
	order := func(b string) int {
		if b == "10+" {
			return 10
		}
		n, _ := strconv.Atoi(b)
		return n
	}
	sort.Slice(s.ByTurn, func(i, j int) bool { return order(s.ByTurn[i].Turns) < order(s.ByTurn[j].Turns) })
	return s
}

// randomUnits draws constraints units for convs conversations in ledger
// order from a fixed PCG: constraints set now and then, registries that
// grow, failed and undecodable units between.
func randomUnits(seed uint64, convs int) []ledger.Unit {
	r := rand.New(rand.NewPCG(seed, 3))
	var us []ledger.Unit
	for c := range convs {
		id := fmt.Sprintf("conv-%x", r.Uint32())
		var reg []constraints.Constraint
		n := 1 + r.IntN(12)
		for turn := 1; turn <= n; turn++ {
			u := ledger.Unit{ConvID: id, ConvSeq: int64(c + 1), Turn: turn, Status: ledger.Done}
			switch r.IntN(12) {
			case 0:
				u.Status = ledger.Failed
				us = append(us, u)
				continue
			case 1:
				u.Output = []byte(`{"new": 3}`)
				us = append(us, u)
				continue
			}
			var rec constraints.Record
			if r.IntN(4) == 0 {
				k := constraints.Constraint{Text: "x", Type: constraints.Types()[r.IntN(5)], Turn: turn}
				rec.New = []constraints.Constraint{k}
				reg = append(reg, k)
			}
			rec.Registry, rec.Annotator = reg, []string{"heuristic", "llm:m"}[r.IntN(2)]
			u.Output, _ = json.Marshal(rec)
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
			if len(got.ByTurn) == 0 && len(want.ByTurn) == 0 {
				got.ByTurn, want.ByTurn = nil, nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("fold %+v\nwant %+v", got, want)
			}
		})
	}
}
