package run

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
)

// StageFailures is one stage variant the run covered that has failed units
// recorded in the run file, whichever pass recorded them: they stay there
// until 'ac3 retry' queues them again, so a later pass that finds nothing
// to do still sees them.
type StageFailures struct {
	Stage   string
	Variant string
	// Tasks (conversation × variant) with a failed unit, and the failed
	// units, over the stage's scope.
	Tasks, Units int64
	// Groups are the failed units grouped by reason, most frequent first,
	// each with an example (as 'ac3 status' lists them).
	Groups []ledger.FailureGroup
}

// noteFailures reads, from the run file's progress counts (SQLite counts
// them from indexes: no unit is read), the failed units of stage's
// variants, and keeps those that have any in the result, replacing what an
// earlier step of this run read for the same variant.
func (r *runner) noteFailures(ctx context.Context, stage string, variants []ledger.Variant) error {
	for _, v := range variants {
		ss, err := r.l.StageProgress(ctx, stage, v)
		if err != nil {
			return fmt.Errorf("counting the failed units of %s/%s: %w", stage, v.Name, err)
		}
		i := slices.IndexFunc(r.res.Failed, func(f StageFailures) bool { return f.Stage == stage && f.Variant == v.Name })
		if ss.Failed == 0 && ss.UnitsFailed == 0 {
			if i >= 0 {
				r.res.Failed = slices.Delete(r.res.Failed, i, i+1)
			}
			continue
		}
		f := StageFailures{Stage: stage, Variant: v.Name, Tasks: ss.Failed, Units: ss.UnitsFailed, Groups: ss.Failures}
		if i >= 0 {
			r.res.Failed[i] = f
		} else {
			r.res.Failed = append(r.res.Failed, f)
		}
	}
	return nil
}

// skippedFailures notes the failed units of the stages the run covered but
// skipped (no endpoint): their failures are still the run's, and the
// command must not end as if there were none. Their variants are those of
// the stage's recorded plan.
func (r *runner) skippedFailures(ctx context.Context) error {
	var plans map[string][]ledger.Variant
	for _, s := range r.res.Stages {
		if s.Skipped == "" || slices.ContainsFunc(r.res.Failed, func(f StageFailures) bool { return f.Stage == s.Stage }) {
			continue
		}
		if plans == nil {
			var err error
			if plans, err = r.l.Plans(ctx); err != nil {
				return fmt.Errorf("reading the stages' plans: %w", err)
			}
		}
		if err := r.noteFailures(ctx, s.Stage, plans[s.Stage]); err != nil {
			return err
		}
	}
	return nil
}

// WriteFailed writes how a command ends on the run's state rather than the
// pass's: one line per stage variant of r.Failed, whichever pass recorded
// it, the step they blocked, and the 'ac3 retry' commands (on db) that
// queue them again. accepted is --accept-failed, which leaves them failed
// and does not hold for a blocked run. It reports whether the failures
// stand, which the command's exit status says (2).
func (r Result) WriteFailed(w io.Writer, db string, accepted bool) (failing bool) {
	if len(r.Failed) == 0 {
		return false
	}
	var tasks int64
	var where, stages []string
	for _, f := range r.Failed {
		tasks += f.Tasks
		where = append(where, fmt.Sprintf("%s/%s %d", f.Stage, f.Variant, f.Tasks))
		if !slices.Contains(stages, f.Stage) {
			stages = append(stages, f.Stage)
		}
		line := fmt.Sprintf("failed: %s/%s: %d tasks, %d units", f.Stage, f.Variant, f.Tasks, f.Units)
		if len(f.Groups) > 0 {
			g := f.Groups[0]
			line += fmt.Sprintf("; %d with %q, e.g. conversation %s turn %d", g.Units, g.Reason, g.Example.ConvID, g.Example.Turn)
			if len(f.Groups) > 1 {
				line += fmt.Sprintf(" (and %d other reasons: 'ac3 status --db %s')", len(f.Groups)-1, db)
			}
		}
		fmt.Fprintln(w, line)
	}
	retry := make([]string, len(stages))
	for i, s := range stages {
		retry[i] = fmt.Sprintf("'ac3 retry --db %s --stage %s'", db, s)
	}
	if r.Blocked != "" {
		fmt.Fprintln(w, r.Blocked)
	}
	what := fmt.Sprintf("%d tasks have failed units recorded in the run (%s), each with its error and the model's raw answer", tasks, strings.Join(where, ", "))
	if accepted && r.Blocked == "" {
		fmt.Fprintf(w, "%s; accepted (--accept-failed): they stay failed until %s queues them again\n", what, strings.Join(retry, " and "))
		return false
	}
	fmt.Fprintf(w, "%s: %s queues them again for the next run of this command; --accept-failed accepts them\n", what, strings.Join(retry, " and "))
	return true
}
