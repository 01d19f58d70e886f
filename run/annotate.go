package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/pollution"
)

// AnnotateFlags is what 'ac3 annotate' was asked on its command line.
type AnnotateFlags struct {
	Stages     []string // classify (or refs), constraints, pollution
	Annotator  string   // Heuristic or LLM, for classify and constraints
	On         []string // pollution: dataset, responses
	Strategies []string // pollution on responses: the respond variants to review
	Samples    int      // pollution on responses: samples per reply (0: all)
	Choose     bool     // Strategies or Samples were given
	Workers    int
}

// Plan checks the flags and returns the annotate plan, with the review of
// generated replies when pollution is asked on responses.
func (f AnnotateFlags) Plan() (Annotate, *ReviewReplies, error) {
	a := Annotate{Workers: f.Workers}
	if f.Annotator != Heuristic && f.Annotator != LLM {
		return a, nil, fmt.Errorf("--annotator %q: want %s or %s", f.Annotator, Heuristic, LLM)
	}
	wantPollution := false
	for _, s := range f.Stages {
		switch s {
		case classify.StageName, "refs":
			a.Classify = f.Annotator
		case constraints.StageName:
			a.Constraints = f.Annotator
		case pollution.StageName:
			wantPollution = true
		default:
			return a, nil, fmt.Errorf("--stages: unknown stage %q (want %s)", s, strings.Join(AnnotateStages(), ", "))
		}
	}
	dataset, responses, bad := PollutionTargets(f.On)
	switch {
	case bad != "":
		return a, nil, fmt.Errorf("--on: %q, want dataset or responses", bad)
	case !responses && f.Choose:
		return a, nil, fmt.Errorf("--strategies and --samples choose generated replies to review: add --on responses")
	case f.Samples < 0:
		return a, nil, fmt.Errorf("--samples %d: want 0 (all) or more", f.Samples)
	}
	a.Pollution = wantPollution && dataset
	if !wantPollution || !responses {
		return a, nil, nil
	}
	return a, &ReviewReplies{Strategies: f.Strategies, Samples: f.Samples, Dataset: dataset, Workers: f.Workers}, nil
}

// AnnotateStages are the stages an annotate plan can run, in run order
// (refs come with classify).
func AnnotateStages() []string {
	return []string{classify.StageName, constraints.StageName, pollution.StageName}
}

// NeedsModel reports whether a stage of a needs a model.
func (a Annotate) NeedsModel() bool {
	return a.Classify == LLM || a.Constraints == LLM || a.Pollution
}

// Empty reports whether a runs no stage.
func (a Annotate) Empty() bool { return a.Classify == "" && a.Constraints == "" && !a.Pollution }

// Describe names the stages and their annotators, e.g.
// "classify+refs:llm, constraints:heuristic".
func (a Annotate) Describe() string {
	var parts []string
	if a.Classify != "" {
		parts = append(parts, "classify+refs:"+a.Classify)
	}
	if a.Constraints != "" {
		parts = append(parts, "constraints:"+a.Constraints)
	}
	if a.Pollution {
		parts = append(parts, "pollution:llm")
	}
	return strings.Join(parts, ", ")
}

// annotateStage is one planned annotation stage: its display name and how
// to build it.
type annotateStage struct {
	label string
	model bool
	build func(client *llm.Client) (pipeline.Stage, error)
}

func (a Annotate) stages() []annotateStage {
	var out []annotateStage
	if a.Classify != "" {
		ann := a.Classify
		out = append(out, annotateStage{label: "classify (" + ann + ")", model: ann == LLM, build: func(cl *llm.Client) (pipeline.Stage, error) {
			o := classify.Options{Heuristic: ann == Heuristic}
			if ann == LLM {
				o.LLM = &classify.LLM{Client: cl, Template: a.Prompts["classify"]}
			}
			return classify.NewStage(o)
		}})
	}
	if a.Constraints != "" {
		ann := a.Constraints
		out = append(out, annotateStage{label: "constraints (" + ann + ")", model: ann == LLM, build: func(cl *llm.Client) (pipeline.Stage, error) {
			o := constraints.Options{Heuristic: ann == Heuristic, Registry: a.ConstraintsRegistry}
			if ann == LLM {
				o.LLM = &constraints.LLM{Client: cl, Template: a.Prompts["constraints"]}
			}
			return constraints.NewStage(o)
		}})
	}
	if a.Pollution {
		out = append(out, annotateStage{label: "pollution (llm)", model: true, build: func(cl *llm.Client) (pipeline.Stage, error) {
			return pollution.NewStage(&pollution.LLM{Client: cl, Template: a.Prompts["pollution"]})
		}})
	}
	return out
}

// annotate runs the annotation stages in order (see runStages: in batch
// mode they share their rounds of batches). Stages that need a model are
// skipped with one line when no endpoint is configured.
func (r *runner) annotate(ctx context.Context) (bool, error) {
	a := r.plan.Annotate
	if a == nil || a.Empty() {
		return true, nil
	}
	r.heading("annotate (%s)", a.Describe())
	var client *llm.Client
	var noModel error
	if a.NeedsModel() {
		cl, err := r.plan.Model.client(ctx, r.l, nil, r.opts.Progress)
		switch {
		case errors.Is(err, ErrNoEndpoint):
			noModel = err
		case err != nil:
			return false, err
		default:
			client = cl
		}
	}
	var skipped []string
	for _, p := range a.stages() {
		if p.model && client == nil {
			skipped = append(skipped, p.label)
			r.res.Stages = append(r.res.Stages, StageResult{Stage: strings.Fields(p.label)[0], Label: p.label, Skipped: noModel.Error()})
		}
	}
	if len(skipped) > 0 {
		r.logf("%s: skipped, %v\n", strings.Join(skipped, ", "), noModel)
	}
	var runs []stageRun
	for _, p := range a.stages() {
		if p.model && client == nil {
			continue
		}
		st, err := p.build(client)
		if err != nil {
			return false, err
		}
		runs = append(runs, stageRun{label: p.label, stage: st, workers: a.Workers, perConversation: true})
	}
	// None of the three reads another's answers: in batch mode they pass in
	// turn and share their rounds of batches.
	results, err := r.runStages(ctx, runs)
	if err != nil {
		return false, err
	}
	goOn := len(results) == len(runs)
	for _, res := range results {
		if !r.addStage(res) {
			goOn = false
		}
	}
	return goOn, nil
}
