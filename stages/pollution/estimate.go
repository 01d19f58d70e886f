package pollution

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline"
)

// answerTokens is the answer length expected per reviewed reply.
const answerTokens = 160

// ReadsPredictionsOf implements pipeline.PredictionReader: replies under
// review are read from the run, not from other stages' predictions.
func (s *Stage) ReadsPredictionsOf() []string { return nil }

// Estimate implements pipeline.Estimator: one call per reviewed reply of
// the dataset, with the prompt rendered as the run would render it. For a
// variant on generated replies, which a dry run usually forecasts before
// they exist, each round from DefaultFrom with a dataset reply counts one
// call per sample reviewed (one when Samples is 0), with the dataset's
// reply standing in for the generated one: the history is the same and
// the reply's length is what the estimate is unsure of either way.
func (s *Stage) Estimate(_ context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	var out []pipeline.Call
	for _, v := range t.Variants {
		rv, gen := s.responses[v.Name]
		if v.Name != VariantDataset && !gen {
			continue
		}
		samples := 1
		if gen && s.opts.Responses.Samples > 0 {
			samples = s.opts.Responses.Samples
		}
		for _, turn := range Turns(t.Conv) {
			in, _ := DatasetInput(t.Conv, turn)
			msgs, err := ask.Messages(s.llm, in)
			if err != nil {
				return nil, err
			}
			c := ask.Call(s.llm, f, msgs)
			for k := range samples {
				if gen {
					c.Key = fmt.Sprintf("%s|%s|%d", pipeline.MessagesKey(msgs), rv, k)
				}
				out = append(out, c)
			}
		}
	}
	return out, nil
}
