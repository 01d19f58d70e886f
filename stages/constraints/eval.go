package constraints

import (
	"fmt"
	"io"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/annotator"
	"github.com/ac3/ac3/stages/classify"
)

// Example is one labelled user turn for constraint detection: the
// conversation up to and including turn Turn and the constraints that turn
// sets (empty for most).
type Example struct {
	ID          string         `json:"id"`
	Split       string         `json:"split"` // classify.Dev or classify.Test
	Messages    []conv.Message `json:"messages"`
	Turn        int            `json:"turn"`
	Constraints []struct {
		Text string `json:"text"`
		Type string `json:"type"`
	} `json:"constraints"`
	Source string `json:"source,omitempty"` // e.g. "compint:7" when a CompInt constraint is embedded
	Note   string `json:"note,omitempty"`
}

// Conversation returns the example as a conversation.
func (e Example) Conversation() *conv.Conversation {
	return &conv.Conversation{ID: e.ID, Messages: e.Messages}
}

// ReadExamples reads labelled turns from JSONL and checks each.
func ReadExamples(r io.Reader) ([]Example, error) {
	return annotator.ReadLabelled(r, func(e Example) error {
		if e.Split != classify.Dev && e.Split != classify.Test {
			return fmt.Errorf("(%s): split %q", e.ID, e.Split)
		}
		if _, ok := e.Conversation().UserTurn(e.Turn); !ok {
			return fmt.Errorf("(%s): no user turn %d", e.ID, e.Turn)
		}
		for _, c := range e.Constraints {
			if !validType(c.Type) {
				return fmt.Errorf("(%s): type %q", e.ID, c.Type)
			}
		}
		return nil
	})
}

// Scores are an extractor's results on one split: detection of turns that
// set a constraint (class "constraint") and of turns that set none (class
// "none"), and how often the guessed type is right on detected turns.
type Scores struct {
	Split     string
	N         int
	Detection []classify.ClassScore // "constraint", then "none"
	// TypeRight counts true-positive turns whose first found constraint
	// has a type among the gold types, out of TypeJudged.
	TypeRight, TypeJudged int
	Misses                []string // ids detected wrongly
}

// Evaluate runs extract on every example of split (with an empty registry
// and only a_{t-1}, as the stage does) and scores it.
func Evaluate(examples []Example, split string, extract func(Input) []Constraint) Scores {
	s := Scores{Split: split}
	var tp, fp, fn, tn int
	for _, e := range examples {
		if e.Split != split {
			continue
		}
		s.N++
		got := extract(InputAt(e.Conversation(), e.Turn, nil))
		gold := len(e.Constraints) > 0
		switch {
		case gold && len(got) > 0:
			tp++
			s.TypeJudged++
			for _, c := range e.Constraints {
				if c.Type == got[0].Type {
					s.TypeRight++
					break
				}
			}
		case !gold && len(got) > 0:
			fp++
			s.Misses = append(s.Misses, e.ID)
		case gold:
			fn++
			s.Misses = append(s.Misses, e.ID)
		default:
			tn++
		}
	}
	s.Detection = []classify.ClassScore{
		classify.NewClassScore("constraint", tp, fp, fn),
		classify.NewClassScore("none", tn, fn, fp),
	}
	return s
}
