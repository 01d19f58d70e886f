package pipeline

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline/ledger"
)

// StageScope is the scope stage s runs over: its own (Scoped), or every
// origin, narrowed by on, the run's setting for the stage (a config's
// `on: [source, lic-sim]`; ledger.AllOrigins when it has none). A setting
// that shares no origin with the stage's own is an error naming both, so a
// typo does not silently plan nothing.
func StageScope(s Stage, on ledger.Scope) (ledger.Scope, error) {
	own := ledger.AllOrigins
	if sc, ok := s.(Scoped); ok {
		own = sc.Scope()
	}
	scope, ok := own.Intersect(on)
	if !ok {
		return ledger.Scope{}, fmt.Errorf("scoping %s: it runs over %s conversations only, and on: %s leaves none of them", s.Name(), own, on)
	}
	return scope, nil
}

// Plan is what Begin recorded and counted for a stage: its scope (the
// stage's own narrowed by the run's setting) and its tasks pending and
// already recorded within it.
type Plan struct {
	Scope    ledger.Scope
	Pending  int64
	Recorded int64
}

// Begin records what stage s will run, as status and Progress count it (its
// variants, ledger.SetPlan, and its scope narrowed by on, ledger.SetScope),
// and counts its pending tasks. A caller that runs the stage next passes
// the plan in Options.Plan, so Run neither records nor counts again; a
// caller that only plans (a stage with nothing pending) stops here.
func Begin(ctx context.Context, l *ledger.Ledger, s Stage, on ledger.Scope) (Plan, error) {
	scope, err := StageScope(s, on)
	if err != nil {
		return Plan{}, err
	}
	if err := l.SetPlan(ctx, s.Name(), toLedger(s.Variants())); err != nil {
		return Plan{}, err
	}
	if err := recordScope(ctx, l, s.Name(), scope); err != nil {
		return Plan{}, err
	}
	pending, recorded, err := PendingIn(ctx, l, s, scope)
	if err != nil {
		return Plan{}, err
	}
	return Plan{Scope: scope, Pending: pending, Recorded: recorded}, nil
}

// recordScope stores a stage's scope when it differs from the stored one,
// so a run that does not change it writes nothing.
func recordScope(ctx context.Context, l *ledger.Ledger, stage string, scope ledger.Scope) error {
	had, err := l.StageScope(ctx, stage)
	if err != nil {
		return err
	}
	if had.Equal(scope) {
		return nil
	}
	return l.SetScope(ctx, stage, scope)
}

func toLedger(vs []Variant) []ledger.Variant {
	out := make([]ledger.Variant, len(vs))
	for i, v := range vs {
		out[i] = ledger.Variant(v)
	}
	return out
}

// IncompleteError says a stage that a later step depends on as a whole
// (see Barrier) still has work pending or failed.
type IncompleteError struct {
	Stage   string
	Pending int64 // tasks never attempted
	Failed  int64 // tasks recorded with a failed unit
}

func (e *IncompleteError) Error() string {
	switch {
	case e.Failed > 0 && e.Pending > 0:
		return fmt.Sprintf("%s is not finished: %d tasks pending and %d failed (run it to the end, and 'ac3 retry --stage %s')", e.Stage, e.Pending, e.Failed, e.Stage)
	case e.Failed > 0:
		return fmt.Sprintf("%s is not finished: %d tasks failed ('ac3 retry --stage %s' runs them again)", e.Stage, e.Failed, e.Stage)
	}
	return fmt.Sprintf("%s is not finished: %d tasks pending (run it to the end)", e.Stage, e.Pending)
}

// Barrier returns nil when every task of stage s over its scope (narrowed
// by on) is recorded done, and an *IncompleteError saying what is left
// otherwise. A step that folds over a stage's results in seq order, such
// as deriving conversations from them (see Derive), runs only past this
// barrier: what it makes, and the order it is stored in, must not depend on
// how far the stage had got.
func Barrier(ctx context.Context, l *ledger.Ledger, s Stage, on ledger.Scope) error {
	scope, err := StageScope(s, on)
	if err != nil {
		return err
	}
	v := l.In(scope)
	n, err := v.CountConversations(ctx)
	if err != nil {
		return err
	}
	e := &IncompleteError{Stage: s.Name()}
	for _, vr := range s.Variants() {
		done, failed, err := v.TaskCounts(ctx, s.Name(), ledger.Variant(vr))
		if err != nil {
			return err
		}
		e.Pending += max(n-done-failed, 0)
		e.Failed += failed
	}
	if e.Pending > 0 || e.Failed > 0 {
		return e
	}
	return nil
}
