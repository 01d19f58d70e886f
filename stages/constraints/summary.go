package constraints

import (
	"sort"
	"strconv"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
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

// Summarize summarises constraints units (normally one variant's, as read
// with ledger.Units). Units that do not decode count as failed.
func Summarize(units []ledger.Unit) Summary {
	s := Summary{Annotators: map[string]int{}}
	byType := map[string]int{}
	byTurn := map[string]int{}
	convs := map[string]bool{}
	withAny := map[string]bool{}
	for _, u := range units {
		if u.Status != "done" {
			s.Failed++
			continue
		}
		r, err := Decode(u.Output)
		if err != nil {
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
			byTurn[turnBucket(c.Turn)]++
		}
	}
	s.Conversations, s.ConversationsWithAny = len(convs), len(withAny)
	for _, t := range Types() {
		tc := TypeCount{Type: t, Count: byType[t]}
		if s.Constraints > 0 {
			tc.Share = float64(tc.Count) / float64(s.Constraints)
			iv := stats.Wilson(float64(tc.Count), s.Constraints, 0.95)
			tc.Lo, tc.Hi = iv.Lo, iv.Hi
		}
		s.ByType = append(s.ByType, tc)
	}
	for k, n := range byTurn {
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
