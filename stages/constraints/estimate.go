package constraints

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
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
	var out []pipeline.Call
	for _, v := range t.Variants {
		if v.Name != "llm" || (s.llm == nil && s.prop == nil) {
			continue
		}
		var (
			role     string
			messages func(Input) ([]conv.Message, error)
		)
		if s.prop != nil {
			role, messages = s.prop.core().Role, s.prop.Messages
		} else {
			role, messages = s.llm.core().Role, s.llm.Messages
		}
		for turn := 1; turn <= t.Conv.UserTurns(); turn++ {
			msgs, err := messages(InputAt(t.Conv, turn, nil))
			if err != nil {
				return nil, fmt.Errorf("estimating turn %d of %s: %w", turn, t.Conv.ID, err)
			}
			out = append(out, pipeline.Call{Role: role, Key: pipeline.MessagesKey(msgs), PromptTokens: f.MessagesTokens(msgs), CompletionTokens: answerTokens})
		}
	}
	return out, nil
}
