package run

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/respond"
)

// MetaSeed is the settings key where the judge records the run seed; the
// report's bootstrap takes it by default.
const MetaSeed = "run.seed"

// planVersions is a stage's current plan: variant → version, and the
// variants in plan order.
func planVersions(plans map[string][]ledger.Variant, stage string) (map[string]string, []string) {
	out := map[string]string{}
	var names []string
	for _, v := range plans[stage] {
		out[v.Name] = v.Version
		names = append(names, v.Name)
	}
	return out, names
}

// build builds the respond stage over the curate stage's plan.
func (a *Respond) build(client *llm.Client, units respond.UnitReader, plans map[string][]ledger.Variant, m Model) (*respond.Stage, error) {
	cv, curated := planVersions(plans, curate.StageName)
	strategies := a.Strategies
	if len(strategies) == 0 {
		strategies = curated
	}
	if len(strategies) == 0 {
		return nil, errors.New("nothing curated in this run yet: run 'ac3 curate' first")
	}
	roles := a.Respondents
	if len(roles) == 0 {
		roles = []string{respond.DefaultRole}
	}
	var rs []respond.Respondent
	for _, role := range roles {
		r := respond.Respondent{Role: role, Settings: m.roleSettings(role)}
		if len(roles) > 1 || role != respond.DefaultRole {
			r.Label = role
		}
		rs = append(rs, r)
	}
	return respond.New(client, units, respond.Options{Strategies: strategies, CurateVersions: cv, Respondents: rs, Samples: a.Samples})
}

// build builds the judge stage over the respond stage's plan.
func (a *Judge) build(client *llm.Client, units judge.UnitReader, plans map[string][]ledger.Variant, m Model, seed int64) (*judge.Stage, error) {
	rv, _ := planVersions(plans, respond.StageName)
	var pairs []judge.Pair
	for _, p := range a.Pairs {
		pr, err := judge.ParsePair(p)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, pr)
	}
	role := cmp.Or(a.Role, judge.DefaultRole)
	return judge.New(client, units, judge.Options{
		Pairs: pairs, Context: a.Context, Order: a.Order, Seed: seed, RespondVersions: rv,
		Role: role, Settings: m.roleSettings(role), Prompt: a.Prompt,
	})
}

func (r *runner) respond(ctx context.Context) (bool, error) {
	a := r.plan.Respond
	if a == nil {
		return true, nil
	}
	r.heading("respond (%s)", strings.Join(a.Strategies, ","))
	client, plans, err := r.modelClient(ctx, respond.StageName)
	if err != nil || client == nil {
		return err == nil, err
	}
	st, err := a.build(client, r.l, plans, r.plan.Model)
	if err != nil {
		return false, err
	}
	res, err := r.runStage(ctx, stageRun{label: st.Name(), stage: st})
	if err != nil {
		return false, err
	}
	return r.addStage(res), nil
}

func (r *runner) judge(ctx context.Context) (bool, error) {
	a := r.plan.Judge
	if a == nil {
		return true, nil
	}
	r.heading("judge (%s, order %s)", strings.Join(a.Pairs, ","), cmp.Or(a.Order, judge.OrderRandom))
	client, plans, err := r.modelClient(ctx, judge.StageName)
	if err != nil || client == nil {
		return err == nil, err
	}
	st, err := a.build(client, r.l, plans, r.plan.Model, r.plan.Seed)
	if err != nil {
		return false, err
	}
	if err := r.l.SetMeta(ctx, MetaSeed, strconv.FormatInt(r.plan.Seed, 10)); err != nil {
		return false, err
	}
	res, err := r.runStage(ctx, stageRun{label: st.Name(), stage: st})
	if err != nil {
		return false, err
	}
	return r.addStage(res), nil
}

// modelClient is the model client for a model-backed stage, or nil when no
// endpoint is configured: the stage is then skipped, with one line in the
// log and a StageResult saying why. With a client it also returns the run's
// plans, which every such stage is built from.
func (r *runner) modelClient(ctx context.Context, stage string) (*llm.Client, map[string][]ledger.Variant, error) {
	client, err := r.modelClientAs(ctx, nil, stage, StageResult{Stage: stage, Label: stage})
	if err != nil || client == nil {
		return nil, nil, err
	}
	plans, err := r.l.Plans(ctx)
	if err != nil {
		return nil, nil, err
	}
	return client, plans, nil
}

// modelClientAs is modelClient for a stage that estimates its requests with
// counter (nil: none), says name in the log and records skipped as sr.
func (r *runner) modelClientAs(ctx context.Context, counter *tokens.Counter, name string, sr StageResult) (*llm.Client, error) {
	client, err := r.plan.Model.client(ctx, r.l, counter, r.opts.Progress)
	if errors.Is(err, ErrNoEndpoint) {
		r.logf("%s: skipped, it needs a model: %v\n", name, err)
		sr.Skipped = err.Error()
		r.res.Stages = append(r.res.Stages, sr)
		return nil, nil
	}
	return client, err
}
