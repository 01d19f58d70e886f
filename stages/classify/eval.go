package classify

import (
	"fmt"
	"io"
	"math"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/annotator"
)

// The labelled-set splits. Heuristics may be tuned on Dev only; Test is
// held out and reported as is.
const (
	Dev  = "dev"
	Test = "test"
)

// Example is one labelled user turn: the conversation up to and including
// the turn (assistant turns included), the turn number and the gold label.
type Example struct {
	ID       string         `json:"id"`
	Split    string         `json:"split"`
	Messages []conv.Message `json:"messages"`
	Turn     int            `json:"turn"`
	Type     string         `json:"type"`
	Refs     []string       `json:"refs"`
	Note     string         `json:"note,omitempty"`
}

// Conversation returns the example as a conversation.
func (e Example) Conversation() *conv.Conversation {
	return &conv.Conversation{ID: e.ID, Messages: e.Messages}
}

// ReadExamples reads labelled turns from JSONL (one Example a line) and
// checks each: a known type and split, and a user turn t >= 2.
func ReadExamples(r io.Reader) ([]Example, error) {
	return annotator.ReadLabelled(r, func(e Example) error {
		if !validType(e.Type) || (e.Split != Dev && e.Split != Test) {
			return fmt.Errorf("(%s): type %q, split %q", e.ID, e.Type, e.Split)
		}
		if _, ok := e.Conversation().UserTurn(e.Turn); !ok || e.Turn < 2 {
			return fmt.Errorf("(%s): no user turn %d (t >= 2)", e.ID, e.Turn)
		}
		return nil
	})
}

// ClassScore is precision, recall and F1 of one class (one-vs-rest).
type ClassScore struct {
	Class             string
	Support           int // gold examples of the class
	TP, FP, FN        int
	Precision, Recall float64
	F1                float64
}

// NewClassScore computes the ratios from the counts; an undefined ratio is
// NaN (nothing predicted, or nothing to find).
func NewClassScore(class string, tp, fp, fn int) ClassScore {
	c := ClassScore{Class: class, Support: tp + fn, TP: tp, FP: fp, FN: fn}
	c.Precision, c.Recall = ratio(tp, tp+fp), ratio(tp, tp+fn)
	c.F1 = math.NaN()
	if p, r := c.Precision, c.Recall; !math.IsNaN(p) && !math.IsNaN(r) {
		c.F1 = 0
		if p+r > 0 {
			c.F1 = 2 * p * r / (p + r)
		}
	}
	return c
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Scores are an annotator's results on one split.
type Scores struct {
	Split    string
	N        int
	Accuracy float64
	Classes  []ClassScore // in Types() order
	MacroF1  float64
	// RefsExact counts examples whose refs match the gold refs exactly.
	RefsExact int
	Misses    []string // ids of wrongly typed examples, for inspection
}

// Evaluate labels every example of split with label and scores the types.
func Evaluate(examples []Example, split string, label func(c *conv.Conversation, t int) Label) Scores {
	s := Scores{Split: split}
	tp, fp, fn := map[string]int{}, map[string]int{}, map[string]int{}
	correct := 0
	for _, e := range examples {
		if e.Split != split {
			continue
		}
		s.N++
		got := label(e.Conversation(), e.Turn)
		if got.Type == e.Type {
			correct++
			tp[e.Type]++
		} else {
			fp[got.Type]++
			fn[e.Type]++
			s.Misses = append(s.Misses, e.ID)
		}
		if sameRefs(got.Refs, e.Refs) {
			s.RefsExact++
		}
	}
	s.Accuracy = ratio(correct, s.N)
	var f1s float64
	for _, t := range Types() {
		c := NewClassScore(t, tp[t], fp[t], fn[t])
		s.Classes = append(s.Classes, c)
		if !math.IsNaN(c.F1) {
			f1s += c.F1
		}
	}
	s.MacroF1 = f1s / float64(len(Types()))
	return s
}

func sameRefs(a, b []string) bool {
	set := map[string]bool{}
	for _, r := range a {
		set[r] = true
	}
	if len(set) != len(b) {
		return false
	}
	for _, r := range b {
		if !set[r] {
			return false
		}
	}
	return true
}
