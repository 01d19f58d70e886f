package constraints

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/annotator"
)

// Options choose the stage's annotators; each is one variant.
type Options struct {
	Heuristic bool // variant "heuristic"
	LLM       *LLM // variant "llm" when set
	// Registry is the llm variant's form: RegistrySequential (the paper's,
	// the registry so far in every request) or RegistryParallel (every
	// turn asked at once, the registry assembled by Consolidate). "" picks
	// by LLM.Template when one is set (a template for the
	// constraints_parallel prompt is the parallel form's), else by the
	// annotator role's mode: parallel in batch mode, where the sequential
	// form would need one batch round per user turn, sequential online.
	// Both forms are the variant "llm"; their versions differ, and the
	// sequential form's is what it was before the parallel form existed.
	Registry string
}

// Stage is the constraints stage: one unit per user turn t >= 1 per variant,
// each holding the registry as of its turn.
type Stage struct {
	heur *Heuristic
	// llm is the model-backed extractor, prepared with the prompt of its
	// form (RegistrySequential or RegistryParallel); nil when only the
	// heuristic runs.
	llm  *annotator.LLM
	form string
}

// NewStage returns the stage. It fails when no annotator is chosen, when
// Registry is not a form, or when LLM.Template is for the other form's
// prompt.
func NewStage(o Options) (*Stage, error) {
	if !o.Heuristic && o.LLM == nil {
		return nil, errors.New("creating constraints stage: no annotator chosen")
	}
	s := &Stage{}
	if o.Heuristic {
		s.heur = NewHeuristic()
	}
	if o.LLM == nil {
		return s, nil
	}
	form, err := o.form()
	if err != nil {
		return nil, fmt.Errorf("creating constraints stage: %w", err)
	}
	want := "constraints"
	if form == RegistryParallel {
		want = ParallelPromptName
	}
	if t := o.LLM.Template; t != nil && t.Name() != want && (t.Name() == "constraints" || t.Name() == ParallelPromptName) {
		return nil, fmt.Errorf("creating constraints stage: registry %s sends the %s prompt, and the template %s is for the %s prompt", form, want, cmp.Or(t.File(), "given"), t.Name())
	}
	if err := annotator.CheckPrompt((*annotator.LLM)(o.LLM), want); err != nil {
		return nil, fmt.Errorf("creating constraints stage: %w", err)
	}
	if form == RegistryParallel {
		s.llm = (*Proposer)(o.LLM).core()
	} else {
		s.llm = o.LLM.core()
	}
	if loaded := s.llm.Prompt(); loaded.Name() != want {
		// An LLM used before keeps the prompt it loaded first.
		return nil, fmt.Errorf("creating constraints stage: registry %s sends the %s prompt, and the extractor given has already loaded the %s prompt; pass a fresh one", form, want, loaded.Name())
	}
	s.form = form
	return s, nil
}

// form resolves o.Registry for the llm variant.
func (o Options) form() (string, error) {
	switch o.Registry {
	case RegistrySequential, RegistryParallel:
		return o.Registry, nil
	case "":
	default:
		return "", fmt.Errorf("registry %q, want %s or %s", o.Registry, RegistrySequential, RegistryParallel)
	}
	if t := o.LLM.Template; t != nil {
		if t.Name() == ParallelPromptName {
			return RegistryParallel, nil
		}
		return RegistrySequential, nil
	}
	role := cmp.Or(o.LLM.Role, annotator.DefaultRole)
	if o.LLM.Client != nil && o.LLM.Client.BatchMode(role) {
		return RegistryParallel, nil
	}
	return RegistrySequential, nil
}

// Registry returns the llm variant's form ("" when only the heuristic
// runs).
func (s *Stage) Registry() string { return s.form }

// BatchRoundsFor is how many batch rounds the stage needs for a conversation
// of n user turns when its model calls go through batches: one per turn for
// the sequential form, one for the parallel form, none for the heuristic.
func (s *Stage) BatchRoundsFor(n int) int {
	switch {
	case n <= 0:
		return 0
	case s.form == RegistryParallel:
		return 1
	case s.form == RegistrySequential:
		return n
	}
	return 0
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Prompts returns the prompt the llm extractor renders (none for the
// heuristic alone), for the run to say which one is in use.
func (s *Stage) Prompts() []*prompt.Template { return s.llm.Prompts() }

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant {
	var out []pipeline.Variant
	if s.heur != nil {
		out = append(out, pipeline.Variant{Name: "heuristic", Version: HeuristicVersion})
	}
	switch s.form {
	case RegistrySequential:
		out = append(out, pipeline.Variant{Name: annotator.VariantLLM, Version: s.llm.Version()})
	case RegistryParallel:
		out = append(out, pipeline.Variant{Name: annotator.VariantLLM, Version: parallelVersion(s.llm)})
	}
	return out
}

// ModelWindow implements pipeline.ModelStage: the window of the llm
// extractor's endpoint, or 0 when only the heuristic runs. In the
// sequential form each conversation has one call in flight at a time (see
// Process), so the window is filled by conversations.
func (s *Stage) ModelWindow() int { return s.llm.Window() }

// messages renders the prompt of the llm variant's form for in.
func (s *Stage) messages(in Input) ([]conv.Message, error) {
	if s.form == RegistryParallel {
		return parallelAsk.Messages(s.llm, in)
	}
	return ask.Messages(s.llm, in)
}

// Process implements pipeline.Stage. In the sequential form turns are read
// strictly in order because each one's input holds the registry the earlier
// ones built; the llm variant's turns go through Task.Each one at a time,
// so a stop between two of them leaves the conversation pending instead of
// paying for the rest. In the parallel form every turn is asked at once and
// the registries are built once all answers are in.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	n := t.Conv.UserTurns()
	return annotator.Results(t, func(v pipeline.Variant) ([]pipeline.Unit, error) {
		var reg []Constraint
		switch {
		case v.Name == "heuristic" && s.heur != nil:
			return annotator.RuleUnits(1, n, func(turn int) ([]byte, error) {
				var added []Constraint
				added, reg = s.heur.Extract(InputAt(t.Conv, turn, reg))
				return Record{New: added, Registry: reg, Annotator: "heuristic"}.Encode()
			})
		case v.Name == annotator.VariantLLM && s.form == RegistryParallel:
			return s.parallel(ctx, t)
		case v.Name == annotator.VariantLLM && s.form == RegistrySequential:
			return annotator.ModelUnits(ctx, t, n, 1, func(ctx context.Context, i int) (pipeline.Unit, error) {
				u, next, err := extract(ctx, s.llm, InputAt(t.Conv, i+1, reg), t.Retry)
				if err == nil {
					reg = next
				}
				return u, err
			})
		}
		return nil, fmt.Errorf("reading constraints of %s: no annotator %q", t.Conv.ID, v.Name)
	})
}

// parallel asks for every user turn of t's conversation at once, then folds
// the proposals into each turn's registry in turn order (Consolidate). A
// failed turn contributes nothing, as a failed turn of the sequential form
// leaves the registry as it was.
func (s *Stage) parallel(ctx context.Context, t pipeline.Task) ([]pipeline.Unit, error) {
	n := t.Conv.UserTurns()
	props := make([][]Proposal, n)
	names := make([]string, n)
	units, err := annotator.ModelUnits(ctx, t, n, 0, func(ctx context.Context, i int) (pipeline.Unit, error) {
		u, p, name, err := propose(ctx, s.llm, InputAt(t.Conv, i+1, nil), t.Retry)
		props[i], names[i] = p, name
		return u, err
	})
	if err != nil {
		return nil, err
	}
	var reg []Constraint
	for i := range units {
		if units[i].Failed {
			continue
		}
		var added []Constraint
		added, reg = Consolidate(reg, props[i], i+1)
		b, err := Record{New: added, Registry: reg, Annotator: names[i]}.Encode()
		if err != nil {
			return nil, fmt.Errorf("encoding turn %d of %s: %w", i+1, t.Conv.ID, err)
		}
		units[i].Output = b
	}
	return units, nil
}
