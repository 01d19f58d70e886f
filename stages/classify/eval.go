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
// Gold types are the three turn types, never Unknown.
type Example struct {
	ID       string         `json:"id"`
	Split    string         `json:"split"`
	Messages []conv.Message `json:"messages"`
	Turn     int            `json:"turn"`
	Type     string         `json:"type"`
	Refs     []string       `json:"refs"`
	Note     string         `json:"note,omitempty"`
	// Lang is the language of the user turn (ISO 639-1, e.g. "en"); empty
	// in sets that are English only.
	Lang string `json:"lang,omitempty"`
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

// Scores are an annotator's results on one split. An annotator may abstain
// (answer Unknown): abstentions count in N but not in Labelled, and the
// accuracy, the class scores and macro-F1 are over the labelled turns only,
// so an abstention is neither right nor wrong; Coverage says how often the
// annotator answered at all.
type Scores struct {
	Split    string
	N        int          // examples of the split
	Labelled int          // examples the annotator gave a type (not Unknown)
	Coverage float64      // Labelled / N
	Accuracy float64      // right types / Labelled
	Classes  []ClassScore // in Types() order, over the labelled examples
	// MacroF1 is the mean F1 of the three classes over the labelled
	// examples; a class whose F1 is undefined (never predicted and never
	// gold among them) counts as 0.
	MacroF1 float64
	// MajorityRate is the share of the split's most common gold type: the
	// accuracy of always answering it. MajorityRateLabelled is the same on
	// the labelled examples only, the fair baseline for Accuracy when the
	// annotator abstains on a skewed subset.
	MajorityRate         float64
	MajorityRateLabelled float64
	// RefsExact counts labelled examples whose refs match the gold refs
	// exactly.
	RefsExact int
	Misses    []string // ids of wrongly typed examples, for inspection
	Abstained []string // ids of examples labelled Unknown
}

// Evaluate labels every example of split with label and scores the types.
func Evaluate(examples []Example, split string, label func(c *conv.Conversation, t int) Label) Scores {
	s := Scores{Split: split}
	tp, fp, fn := map[string]int{}, map[string]int{}, map[string]int{}
	gold, goldLabelled := map[string]int{}, map[string]int{}
	correct := 0
	for _, e := range examples {
		if e.Split != split {
			continue
		}
		s.N++
		gold[e.Type]++
		got := label(e.Conversation(), e.Turn)
		if got.Type == Unknown {
			s.Abstained = append(s.Abstained, e.ID)
			continue
		}
		s.Labelled++
		goldLabelled[e.Type]++
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
	s.Coverage = ratio(s.Labelled, s.N)
	s.Accuracy = ratio(correct, s.Labelled)
	s.MajorityRate = ratio(maxCount(gold), s.N)
	s.MajorityRateLabelled = ratio(maxCount(goldLabelled), s.Labelled)
	var f1s float64
	for _, t := range Types() {
		c := NewClassScore(t, tp[t], fp[t], fn[t])
		s.Classes = append(s.Classes, c)
		if !math.IsNaN(c.F1) {
			f1s += c.F1
		}
	}
	s.MacroF1 = math.NaN()
	if s.Labelled > 0 {
		s.MacroF1 = f1s / float64(len(Types()))
	}
	return s
}

func maxCount(m map[string]int) int {
	n := 0
	for _, c := range m {
		n = max(n, c)
	}
	return n
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
