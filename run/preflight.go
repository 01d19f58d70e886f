package run

import (
	"cmp"
	"context"
	"fmt"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/respond"
)

// preflight refuses a plan whose model endpoints lack their keys (see
// checkKeys), then builds every stage of the plan as the dry run does,
// before any stage runs, and refuses the plan when the run would stop at
// one of them: a strategy, pair or role that names nothing, a setting a
// stage cannot use, an upstream stage it needs. Without it such a plan was
// refused only when its step came, after the paid calls of the steps
// before it. l is the run (nil before it exists); the stages see the plans
// the steps before them will record, as in the dry run.
func (r *runner) preflight(ctx context.Context, l *ledger.Ledger) error {
	p := r.plan
	if err := p.checkKeys(); err != nil {
		return err
	}
	if p.Annotate == nil && p.Curate == nil && p.Respond == nil && p.Replies == nil && p.Judge == nil && p.CompInt == nil {
		return nil // no stage the dry run builds (lic checks its own settings in check)
	}
	e := &forecaster{plan: p, l: l}
	if err := e.prepare(ctx); err != nil {
		if e.counter == nil {
			return err
		}
		// A client that cannot be built stops the stages that need one
		// when they come, before they call anything; those that do not
		// need one must still run.
		e.client, e.noModel = nil, err
	}
	if err := e.build(ctx); err != nil {
		return fmt.Errorf("checking the plan before any stage runs: %w", err)
	}
	if e.fc.StopsAt != "" {
		return fmt.Errorf("%s: %w; nothing was run (--dry-run shows the whole plan)", e.fc.StopsAt, e.stopErr)
	}
	return e.checkRoles()
}

// needsModel reports whether a step of the plan calls a model.
func (p Plan) needsModel() bool {
	return p.Annotate != nil && p.Annotate.NeedsModel() || p.Curate != nil && p.Curate.needsModel() ||
		p.Respond != nil || p.Replies != nil || p.LiC != nil || p.Judge != nil || p.CompInt != nil
}

// checkKeys refuses a plan that calls a model while an endpoint its roles
// use names a key variable that is unset or empty (an *llm.KeyError).
// Nothing would be sent to that endpoint, and without this check the run
// would find out at its first model stage, after the steps before it.
func (p Plan) checkKeys() error {
	if p.Model.Options == nil || !p.needsModel() {
		return nil
	}
	return p.Model.Options.CheckKeys()
}

// checkRoles refuses a role the plan names (respondents, the judge) that
// the configured models do not bind, when no default binding answers for
// it: every one of its calls would fail.
func (e *forecaster) checkRoles() error {
	if e.client == nil {
		return nil // the stages that call a model are skipped, and say so
	}
	var roles []struct{ role, what string }
	if a := e.plan.Respond; a != nil {
		rs := a.Respondents
		if len(rs) == 0 {
			rs = []string{respond.DefaultRole}
		}
		for _, role := range rs {
			roles = append(roles, struct{ role, what string }{role, "respond: respondent role"})
		}
	}
	if a := e.plan.Judge; a != nil {
		roles = append(roles, struct{ role, what string }{cmp.Or(a.Role, judge.DefaultRole), "judge: role"})
	}
	for _, r := range roles {
		if _, err := e.client.Endpoint(r.role); err != nil {
			return fmt.Errorf("%s %q: no model is bound to it (known roles: %v); nothing was run", r.what, r.role, e.client.Roles())
		}
	}
	return nil
}
