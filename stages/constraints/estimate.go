package constraints

import (
	"context"

	"github.com/ac3/ac3/pipeline"
)

// answerTokens is the answer length expected per user turn: most turns set
// no constraint, and the answer is then an empty list.
const answerTokens = 120

// Estimate implements pipeline.Estimator: one call per user turn for the
// llm variant. The registry a prompt carries depends on earlier answers, so
// prompts are rendered with an empty one; the heuristic variant calls
// nothing.
func (s *Stage) Estimate(_ context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	var out []pipeline.Call
	for _, v := range t.Variants {
		if v.Name != "llm" || s.llm == nil {
			continue
		}
		role := s.llm.core().Role
		for turn := 1; turn <= t.Conv.UserTurns(); turn++ {
			msgs, err := s.llm.Messages(InputAt(t.Conv, turn, nil))
			if err != nil {
				return nil, err
			}
			out = append(out, pipeline.Call{Role: role, Key: pipeline.MessagesKey(msgs), PromptTokens: f.MessagesTokens(msgs), CompletionTokens: answerTokens})
		}
	}
	return out, nil
}
