package classify

import (
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/annotator"
)

// DefaultFrom is the first user turn classified: turn 1 has no history.
const DefaultFrom = 2

// Options choose the stage's annotators; each is one variant.
type Options struct {
	Heuristic bool // run the rule-based annotator (variant "heuristic")
	LLM       *LLM // run the model-backed annotator (variant "llm") when set
	FromTurn  int  // default DefaultFrom
}

// Stage is the classify stage: one unit per user turn t >= FromTurn, per
// annotator variant. Units of the llm variant are model calls, one per turn.
// Each turn's prompt is built from the conversation alone, never from
// another turn's label, so the turns of a conversation are asked
// concurrently (Task.Each) within the engine's model window.
type Stage struct {
	heur *Heuristic
	llm  *annotator.LLM // the llm annotator, prepared; nil when it does not run
	from int
}

// NewStage returns the stage. It fails when no annotator is chosen.
func NewStage(o Options) (*Stage, error) {
	if !o.Heuristic && o.LLM == nil {
		return nil, errors.New("creating classify stage: no annotator chosen")
	}
	if err := annotator.CheckPrompt((*annotator.LLM)(o.LLM), "classify"); err != nil {
		return nil, fmt.Errorf("creating classify stage: %w", err)
	}
	s := &Stage{from: o.FromTurn}
	if s.from < 2 {
		s.from = DefaultFrom
	}
	if o.Heuristic {
		s.heur = NewHeuristic()
	}
	if o.LLM != nil {
		s.llm = o.LLM.core()
	}
	return s, nil
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Prompts returns the prompt the llm annotator renders (none for the
// heuristic alone), for the run to say which one is in use.
func (s *Stage) Prompts() []*prompt.Template { return s.llm.Prompts() }

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant {
	var out []pipeline.Variant
	if s.heur != nil {
		out = append(out, pipeline.Variant{Name: "heuristic", Version: fmt.Sprintf("%s;from=%d", HeuristicVersion, s.from)})
	}
	if s.llm != nil {
		out = append(out, pipeline.Variant{Name: annotator.VariantLLM, Version: fmt.Sprintf("%s;from=%d", s.llm.Version(), s.from)})
	}
	return out
}

// ModelWindow implements pipeline.ModelStage: the window of the llm
// annotator's endpoint, or 0 when only the heuristic runs.
func (s *Stage) ModelWindow() int { return s.llm.Window() }

// Turns returns the turns the stage labels in a conversation with n user
// turns (for dry runs).
func (s *Stage) Turns(n int) int { return max(0, n-s.from+1) }

// Process implements pipeline.Stage.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	n := t.Conv.UserTurns()
	return annotator.Results(t, func(v pipeline.Variant) ([]pipeline.Unit, error) {
		switch {
		case v.Name == "heuristic" && s.heur != nil:
			return annotator.RuleUnits(s.from, n, func(turn int) ([]byte, error) {
				lab, _ := s.heur.Label(t.Conv, turn)
				return lab.Encode()
			})
		case v.Name == annotator.VariantLLM && s.llm != nil:
			return annotator.ModelUnits(ctx, t, s.Turns(n), 0, func(ctx context.Context, i int) (pipeline.Unit, error) {
				return unit(ctx, s.llm, t.Conv, s.from+i, t.Retry)
			})
		}
		return nil, fmt.Errorf("classifying %s: no annotator %q", t.Conv.ID, v.Name)
	})
}
