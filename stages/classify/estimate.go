package classify

import (
	"context"

	"github.com/ac3/ac3/pipeline"
)

// answerTokens is the answer length expected of the model per labelled
// turn (a short JSON object after a line of reasoning).
const answerTokens = 160

// Estimate implements pipeline.Estimator: one call per labelled turn for
// the llm variant, whose prompt is rendered as the run would render it; the
// heuristic variant calls nothing.
func (s *Stage) Estimate(_ context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	var out []pipeline.Call
	for _, v := range t.Variants {
		if v.Name != "llm" || s.llm == nil {
			continue
		}
		core := s.llm.core()
		for turn := s.from; turn <= t.Conv.UserTurns(); turn++ {
			msgs, _, err := render(core, t.Conv, turn)
			if err != nil {
				return nil, err
			}
			out = append(out, pipeline.Call{Role: core.Role, Key: pipeline.MessagesKey(msgs), PromptTokens: f.MessagesTokens(msgs), CompletionTokens: answerTokens})
		}
	}
	return out, nil
}
