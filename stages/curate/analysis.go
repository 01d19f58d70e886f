package curate

import (
	"context"
	"errors"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/memory"
)

// The AC3 analysis as the strategies share it: made once per turn and
// conversation and kept in the Workspace, where every operator with the
// same analyzer and memory (and the online memory's chain) finds it; and
// what the model-backed strategies do in batch mode, where an answer not
// in the cache comes back a round trip later.

// analysisResult is a memoized analysis of one turn.
type analysisResult struct {
	a   analyze.Analysis
	use analyze.Usage
	err error
}

// analysis returns the analysis of turn t, running it once per conversation
// for every operator with the same analyzer and memory.
func analysisOf(ctx context.Context, an *analyze.Analyzer, m memory.Memory, c *conv.Conversation, t int, ws *Workspace) (analyze.Analysis, analyze.Usage, error) {
	if v, ok := ws.recall(analysisKey(an, m, t)); ok {
		r := v.(analysisResult)
		return r.a, r.use, r.err
	}
	a, use, err := an.Analyze(ctx, c, t, m.Cheatsheet, ws.Retry())
	return a, use, rememberAnalysis(ctx, an, m, t, ws, a, use, err)
}

func analysisKey(an *analyze.Analyzer, m memory.Memory, t int) memoKey {
	return memoKey{kind: "analysis", version: an.Version() + "|" + m.Hash, n: t}
}

// rememberAnalysis keeps in ws the analysis of turn t that an made with
// memory m (and ws's re-ask counter), so the operators reuse it, and returns
// its error as the operators see it: a unit failure as a *TurnError. An
// analysis cut short by ctx is not kept.
func rememberAnalysis(ctx context.Context, an *analyze.Analyzer, m memory.Memory, t int, ws *Workspace, a analyze.Analysis, use analyze.Usage, err error) error {
	if err != nil {
		if raw, ok := analyze.Failure(err); ok {
			err = &TurnError{Turn: t, Raw: raw, Err: err}
		}
	}
	if ctx.Err() == nil {
		ws.remember(analysisKey(an, m, t), analysisResult{a, use, err})
	}
	return err
}

// batched reports whether an's calls go to batches, where an answer not in
// the cache comes back a round trip (minutes to a day) later.
func batched(an *analyze.Analyzer) bool {
	cl := an.Client()
	return cl != nil && cl.BatchMode(an.Role())
}

// deferrals collects what a pass that asks every call at once meets: the
// first deferral to a batch, which leaves the task pending, and a unit
// failure, which is only noted, since the pass in turn order meets it where
// the online run would.
type deferrals struct{ err error }

// note keeps a deferral and passes over a unit failure; any other error is
// returned, to stop the run.
func (d *deferrals) note(err error) error {
	var te *TurnError
	switch {
	case err == nil:
	case errors.Is(err, llm.ErrDeferred):
		if d.err == nil {
			d.err = err
		}
	case errors.As(err, &te):
	default:
		if _, failed := analyze.Failure(err); !failed {
			return err
		}
	}
	return nil
}
