package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/pollution"
	"github.com/ac3/ac3/stages/respond"
)

// PollutionTargets reads the names of the replies pollution reviews, as
// the annotate command's --on and a config's stages.pollution.on give
// them: "dataset" (the conversations' own replies) and "generated" or
// "responses" (those respond wrote). unknown is the first other name.
func PollutionTargets(on []string) (dataset, generated bool, unknown string) {
	for _, t := range on {
		switch t {
		case "dataset":
			dataset = true
		case "generated", "responses":
			generated = true
		default:
			return dataset, generated, t
		}
	}
	return dataset, generated, ""
}

// ReviewReplies reviews the replies respond generated for context
// pollution, per respond variant, with the prompt and five categories the
// dataset's replies get (Huang et al.'s Table 1: how often replies written
// under each history are polluted). With the filler strategy among the
// respond variants, its replies are the paper's filler-history baseline,
// regenerated on the same turns as every other strategy's; the report then
// pairs each strategy with it turn by turn. It runs after respond, once
// respond has recorded every conversation.
type ReviewReplies struct {
	// Strategies are the respond variants to review ("fc", "filler",
	// "fc@big"); empty reviews every respond variant of the run.
	Strategies []string
	// Samples is how many samples of each reply to review; 0 reviews all.
	Samples int
	// Dataset keeps the review of the dataset's own replies in the
	// stage's plan (stages.pollution.on lists dataset too), so the report
	// shows both.
	Dataset bool
	Workers int
	// Prompt replaces the pollution prompt with a user's template (the one
	// the dataset's replies get too), checked with prompt.ParseFile against
	// pollution.PromptSpec; nil keeps ours.
	Prompt *prompt.Template
}

// build builds the pollution stage over respond's plan.
func (a *ReviewReplies) build(client *llm.Client, units pollution.UnitReader, plans map[string][]ledger.Variant) (*pollution.Stage, *pollution.ResponseOptions, error) {
	rv, _ := planVersions(plans, respond.StageName)
	ro := &pollution.ResponseOptions{Units: units, Strategies: a.Strategies, RespondVersions: rv, Samples: a.Samples}
	st, err := pollution.New(&pollution.LLM{Client: client, Template: a.Prompt}, pollution.Options{Dataset: a.Dataset, Responses: ro})
	return st, ro, err
}

// label names the step in headings and results.
func (a *ReviewReplies) label() string {
	s := "all"
	if len(a.Strategies) > 0 {
		s = strings.Join(a.Strategies, ",")
	}
	return "pollution (generated replies: " + s + ")"
}

func (r *runner) replies(ctx context.Context) (bool, error) {
	a := r.plan.Replies
	if a == nil {
		return true, nil
	}
	r.heading("%s", a.label())
	skip := func(why string) (bool, error) {
		r.logf("pollution on generated replies: skipped, %s\n", why)
		r.res.Stages = append(r.res.Stages, StageResult{Stage: pollution.StageName, Label: a.label(), Skipped: why})
		return true, nil
	}
	client, err := r.plan.Model.client(ctx, r.l, nil, r.opts.Progress)
	if errors.Is(err, ErrNoEndpoint) {
		return skip(fmt.Sprintf("it needs a model: %v", err))
	}
	if err != nil {
		return false, err
	}
	plans, err := r.l.Plans(ctx)
	if err != nil {
		return false, err
	}
	if len(plans[respond.StageName]) == 0 {
		return skip("respond has generated nothing in this run yet (add stages.respond)")
	}
	st, ro, err := a.build(client, r.l, plans)
	if err != nil {
		return false, err
	}
	// A review started before respond finished would record the missing
	// replies as unavailable and never look again.
	if err := ro.Ready(ctx, r.l); err != nil {
		return skip(err.Error())
	}
	res, err := r.runStage(ctx, stageRun{label: a.label(), stage: st, workers: a.Workers})
	if err != nil {
		return false, err
	}
	return r.addStage(res), nil
}
