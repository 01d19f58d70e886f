package constraints

import (
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/annotator"
)

// Options choose the stage's annotators; each is one variant.
type Options struct {
	Heuristic bool // variant "heuristic"
	LLM       *LLM // variant "llm" when set
}

// Stage is the constraints stage: one unit per user turn t >= 1 per variant,
// read in order, each holding the registry as of its turn.
type Stage struct {
	heur *Heuristic
	llm  *LLM
}

// NewStage returns the stage. It fails when no annotator is chosen.
func NewStage(o Options) (*Stage, error) {
	if !o.Heuristic && o.LLM == nil {
		return nil, errors.New("creating constraints stage: no annotator chosen")
	}
	if err := annotator.CheckPrompt((*annotator.LLM)(o.LLM), "constraints"); err != nil {
		return nil, fmt.Errorf("creating constraints stage: %w", err)
	}
	s := &Stage{llm: o.LLM}
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

// Prompts returns the prompt the llm extractor renders (none for the
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
		out = append(out, pipeline.Variant{Name: "heuristic", Version: HeuristicVersion})
	}
	if s.llm != nil {
		out = append(out, pipeline.Variant{Name: "llm", Version: s.llm.Version()})
	}
	return out
}

// ModelWindow implements pipeline.ModelStage: the window of the llm
// extractor's endpoint, or 0 when only the heuristic runs. Each conversation
// has one call in flight at a time (see Process), so the window is filled
// by conversations.
func (s *Stage) ModelWindow() int {
	if s.llm == nil {
		return 0
	}
	return pipeline.DefaultWindow(s.llm.Client, s.llm.Role)
}

// Process implements pipeline.Stage. Turns are read strictly in order
// because each one's input holds the registry the earlier ones built; the
// llm variant's turns go through Task.Each one at a time, so a stop between
// two of them leaves the conversation pending instead of paying for the
// rest.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	n := t.Conv.UserTurns()
	out := make([]pipeline.Result, 0, len(t.Variants))
	for _, v := range t.Variants {
		var units []pipeline.Unit
		var reg []Constraint
		switch {
		case v.Name == "heuristic" && s.heur != nil:
			for turn := 1; turn <= n; turn++ {
				var added []Constraint
				added, reg = s.heur.Extract(InputAt(t.Conv, turn, reg))
				b, err := Record{New: added, Registry: reg, Annotator: "heuristic"}.Encode()
				if err != nil {
					return nil, err
				}
				units = append(units, pipeline.Unit{Turn: turn, Output: b})
			}
		case v.Name == "llm" && s.llm != nil:
			units = make([]pipeline.Unit, n)
			err := t.Each(ctx, n, 1, func(ctx context.Context, i int) error {
				u, next, err := s.llm.extract(ctx, InputAt(t.Conv, i+1, reg), t.Retry)
				if err != nil {
					return err
				}
				units[i], reg = u, next
				return nil
			})
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("reading constraints of %s: no annotator %q", t.Conv.ID, v.Name)
		}
		out = append(out, pipeline.Result{Variant: v, Units: units})
	}
	return out, nil
}
