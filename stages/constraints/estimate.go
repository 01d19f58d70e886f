package constraints

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/annotator"
)

// answerTokens is the answer length expected per user turn: most turns set
// no constraint, and the answer is then an empty list.
const answerTokens = 120

// Estimate implements pipeline.Estimator: one call per user turn for the
// llm variant. In the sequential form the registry a prompt carries depends
// on earlier answers, so prompts are rendered with an empty one; the
// parallel form's prompts are exactly those the run sends. The heuristic
// variant calls nothing.
func (s *Stage) Estimate(_ context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	return annotator.Estimate(t, f, s.llm, answerTokens, 1, t.Conv.UserTurns(), func(turn int) ([]conv.Message, error) {
		msgs, err := s.messages(InputAt(t.Conv, turn, nil))
		if err != nil {
			return nil, fmt.Errorf("estimating turn %d of %s: %w", turn, t.Conv.ID, err)
		}
		return msgs, nil
	})
}
