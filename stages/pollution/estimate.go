package pollution

import (
	"context"

	"github.com/ac3/ac3/pipeline"
)

// answerTokens is the answer length expected per reviewed reply.
const answerTokens = 160

// Estimate implements pipeline.Estimator: one call per reviewed reply of
// the dataset, with the prompt rendered as the run would render it.
func (s *Stage) Estimate(_ context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	var out []pipeline.Call
	for _, v := range t.Variants {
		if v.Name != "llm" {
			continue
		}
		role := s.llm.core().Role
		for _, turn := range Turns(t.Conv) {
			in, _ := DatasetInput(t.Conv, turn)
			msgs, err := s.llm.Messages(in)
			if err != nil {
				return nil, err
			}
			out = append(out, pipeline.Call{Role: role, Key: pipeline.MessagesKey(msgs), PromptTokens: f.MessagesTokens(msgs), CompletionTokens: answerTokens})
		}
	}
	return out, nil
}
