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
	llm  *LLM
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
	s := &Stage{llm: o.LLM, from: o.FromTurn}
	if s.from < 2 {
		s.from = DefaultFrom
	}
	if o.Heuristic {
		s.heur = NewHeuristic()
	}
	if s.llm != nil {
		s.llm.core()
	}
	return s, nil
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Prompts returns the prompt the llm annotator renders (none for the
// heuristic alone), for the run to say which one is in use.
func (s *Stage) Prompts() []*prompt.Template {
	if s.llm == nil {
		return nil
	}
	return []*prompt.Template{s.llm.core().Prompt()}
}

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant {
	var out []pipeline.Variant
	if s.heur != nil {
		out = append(out, pipeline.Variant{Name: "heuristic", Version: fmt.Sprintf("%s;from=%d", HeuristicVersion, s.from)})
	}
	if s.llm != nil {
		out = append(out, pipeline.Variant{Name: "llm", Version: fmt.Sprintf("%s;from=%d", s.llm.Version(), s.from)})
	}
	return out
}

// ModelWindow implements pipeline.ModelStage: the window of the llm
// annotator's endpoint, or 0 when only the heuristic runs.
func (s *Stage) ModelWindow() int {
	if s.llm == nil {
		return 0
	}
	return pipeline.DefaultWindow(s.llm.Client, s.llm.Role)
}

// Turns returns the turns the stage labels in a conversation with n user
// turns (for dry runs).
func (s *Stage) Turns(n int) int { return max(0, n-s.from+1) }

// Process implements pipeline.Stage.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	n := t.Conv.UserTurns()
	out := make([]pipeline.Result, 0, len(t.Variants))
	for _, v := range t.Variants {
		var units []pipeline.Unit
		switch {
		case v.Name == "heuristic" && s.heur != nil:
			for turn := s.from; turn <= n; turn++ {
				lab, _ := s.heur.Label(t.Conv, turn)
				b, err := lab.Encode()
				if err != nil {
					return nil, err
				}
				units = append(units, pipeline.Unit{Turn: turn, Output: b})
			}
		case v.Name == "llm" && s.llm != nil:
			units = make([]pipeline.Unit, max(0, n-s.from+1))
			err := t.Each(ctx, len(units), 0, func(ctx context.Context, i int) error {
				u, err := s.llm.unit(ctx, t.Conv, s.from+i, t.Retry)
				units[i] = u
				return err
			})
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("classifying %s: no annotator %q", t.Conv.ID, v.Name)
		}
		out = append(out, pipeline.Result{Variant: v, Units: units})
	}
	return out, nil
}
