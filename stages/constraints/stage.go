package constraints

import (
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline"
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

// Process implements pipeline.Stage. Turns are read strictly in order
// because each one's input holds the registry the earlier ones built.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	n := t.Conv.UserTurns()
	out := make([]pipeline.Result, 0, len(t.Variants))
	for _, v := range t.Variants {
		var units []pipeline.Unit
		var reg []Constraint
		for turn := 1; turn <= n; turn++ {
			in := InputAt(t.Conv, turn, reg)
			switch {
			case v.Name == "heuristic" && s.heur != nil:
				var added []Constraint
				added, reg = s.heur.Extract(in)
				b, err := Record{New: added, Registry: reg, Annotator: "heuristic"}.Encode()
				if err != nil {
					return nil, err
				}
				units = append(units, pipeline.Unit{Turn: turn, Output: b})
			case v.Name == "llm" && s.llm != nil:
				u, next, err := s.llm.extract(ctx, in, t.Retry)
				if err != nil {
					return nil, err
				}
				reg = next
				units = append(units, u)
			default:
				return nil, fmt.Errorf("reading constraints of %s: no annotator %q", t.Conv.ID, v.Name)
			}
		}
		out = append(out, pipeline.Result{Variant: v, Units: units})
	}
	return out, nil
}
