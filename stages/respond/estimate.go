package respond

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// answerTokens is the answer length the estimate expects when the role sets
// no max_tokens.
const answerTokens = 512

// ReadsPredictionsOf implements pipeline.PredictionReader: respond's
// prompts are the curated contexts.
func (s *Stage) ReadsPredictionsOf() []string { return []string{curate.StageName} }

// Estimate implements pipeline.Estimator: one call per sample of every
// curated context of the task's variants. Contexts already curated in the
// run are read as stored; the others come from the curate stage's forecast.
// Two strategies that give the same context at a turn make one request
// (the cache answers the other), and the call keys say so.
func (s *Stage) Estimate(ctx context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	stored := map[string]map[int]pipeline.Predicted{} // strategy → turn
	if s.units != nil {
		var err error
		stored, err = ReadPlanned(ctx, s.units, curate.StageName, t.Conv.ID, "curated contexts", s.opts.CurateVersions, func(u ledger.Unit) (pipeline.Predicted, error) {
			x, err := curated.DecodeContext(u.Output)
			if err != nil {
				return pipeline.Predicted{}, fmt.Errorf("decoding curated context %s: %w", u.Key, err)
			}
			msgs := x.Materialize(t.Conv)
			return pipeline.Predicted{Key: pipeline.MessagesKey(msgs), Tokens: x.Tokens, Prefix: f.MessagesPrefix(msgs)}, nil
		})
		if err != nil {
			return nil, err
		}
	}
	var calls []pipeline.Call
	for _, v := range t.Variants {
		info, ok := s.byName[v.Name]
		if !ok {
			return nil, fmt.Errorf("estimating %s: no variant %q", t.Conv.ID, v.Name)
		}
		r := info.respondent
		for turn := 1; turn <= t.Conv.UserTurns(); turn++ {
			cx, ok := stored[info.strategy][turn]
			if !ok {
				if cx, ok = f.Get(curate.StageName, info.strategy, turn); !ok {
					continue
				}
			}
			answer := pipeline.KeyOf(StageName, r.Role, r.Settings, cx.Key)
			for i := range s.opts.Samples {
				calls = append(calls, pipeline.Call{Role: r.Role, Key: pipeline.KeyOf(answer, strconv.Itoa(i)), PromptTokens: cx.Tokens, CompletionTokens: answerTokens, Prefix: cx.Prefix})
			}
			f.Set(StageName, v.Name, turn, pipeline.Predicted{Key: answer, Tokens: answerTokens, Samples: s.opts.Samples})
		}
	}
	return calls, nil
}
