package classify

import (
	"context"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/annotator"
)

// answerTokens is the answer length expected of the model per labelled
// turn (a short JSON object after a line of reasoning).
const answerTokens = 160

// Estimate implements pipeline.Estimator: one call per labelled turn for
// the llm variant, whose prompt is rendered as the run would render it; the
// heuristic variant calls nothing.
func (s *Stage) Estimate(_ context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	return annotator.Estimate(t, f, s.llm, answerTokens, s.from, t.Conv.UserTurns(), func(turn int) ([]conv.Message, error) {
		return ask.Messages(s.llm, turnOf{t.Conv, turn})
	})
}
