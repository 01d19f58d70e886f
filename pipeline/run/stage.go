package run

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/progress"
)

// StageResult is what one stage of a run did.
type StageResult struct {
	Stage string // the stage's name, as `ac3 retry --stage` takes it
	Label string // what the log called it, e.g. "classify (llm)"
	// Skipped says why the stage did not run (no endpoint), "" when it ran.
	Skipped string
	// Tasks (conversation × variant) done and failed in this run, units
	// stored, and tasks recorded by earlier runs.
	Done, Failed, Units, Previous int64
	// Stopped: a Ctrl-C or the budget stopped the stage before the end.
	Stopped    bool
	StopReason error // the budget error, when the budget stopped it
}

func toLedger(vs []pipeline.Variant) []ledger.Variant {
	out := make([]ledger.Variant, len(vs))
	for i, v := range vs {
		out[i] = ledger.Variant(v)
	}
	return out
}

// stageRun is one stage to run with its display settings.
type stageRun struct {
	label   string
	stage   pipeline.Stage
	workers int // CPU-bound stages: tasks at once
	window  int // model-backed stages: tasks open at once (0: derived)
	// perConversation words the counts as conversations, for stages with
	// one variant, where a task is a conversation.
	perConversation bool
	// scope narrows the conversations the stage runs over (the LiC replay
	// runs curate and respond over trajectories only); zero: all.
	scope ledger.Scope
}

// runStage runs every pending task of the stage with a progress meter
// (tasks, tokens, and dollars from the run's call records, so cached
// answers cost nothing), stopping gracefully at the budget. It records the
// stage's plan first, says "nothing to do" when everything is recorded,
// and logs what it did.
func (r *runner) runStage(ctx context.Context, s stageRun) (StageResult, error) {
	st := s.stage
	res := StageResult{Stage: st.Name(), Label: s.label}
	for _, line := range userPrompts(st) {
		r.logf("%s: %s\n", s.label, line)
	}
	if err := pipeline.RecordPlan(ctx, r.l, st, s.scope); err != nil {
		return res, err
	}
	pending, recorded, err := pipeline.PendingIn(ctx, r.l, st, s.scope)
	if err != nil {
		return res, err
	}
	lv := toLedger(st.Variants())
	if pending == 0 {
		res.Previous = recorded
		r.logf("%s: nothing to do, all %d tasks (conversation × variant) are already recorded\n", s.label, recorded)
		// Nothing to do is not nothing wrong: failed units of an earlier
		// pass are still recorded.
		return res, r.noteFailures(ctx, st.Name(), lv)
	}
	spent, err := r.l.SpendUSD(ctx)
	if err != nil {
		return res, err
	}
	unit := "tasks"
	if s.perConversation {
		unit = "conversations"
	}
	m := progress.Start(r.progress(), s.label, unit, pending)
	var sum pipeline.Summary
	// In batch mode a pass leaves the tasks whose requests went to a batch
	// pending: the batches are submitted and waited for, their answers
	// imported into the cache, and the stage passes again.
	for round := 1; ; round++ {
		pass, perr := pipeline.Run(ctx, r.l, st, pipeline.Options{
			Workers: s.workers, Window: s.window, Stop: r.opts.Stop, Scope: s.scope,
			Graceful: func(err error) bool { return errors.Is(err, llm.ErrBudgetExceeded) },
			OnCommit: func(tasks, _, _ int, tok int64) {
				m.Add(int64(tasks), tok)
				if now, err := r.l.SpendUSD(ctx); err == nil && now > spent {
					m.AddCost(now - spent)
					spent = now
				}
			},
		})
		if round == 1 {
			sum.Planned, sum.Previous = pass.Planned, pass.Previous
		}
		sum.Done += pass.Done
		sum.Failed += pass.Failed
		sum.Units += pass.Units
		sum.Stopped, sum.StopReason, sum.Deferred = pass.Stopped, pass.StopReason, pass.Deferred
		err = perr
		if err != nil || pass.Deferred == 0 || pass.StopReason != nil || r.stopped() {
			break
		}
		if round == maxBatchRounds {
			err = fmt.Errorf("%s: tasks still wait for batch answers after %d rounds", s.label, round)
			break
		}
		m.Stop()
		goOn, berr := r.awaitBatches(ctx, s.label, pass.Deferred)
		m = progress.Start(r.progress(), s.label, unit, pass.Deferred)
		if berr != nil {
			err = berr
			break
		}
		if !goOn {
			break
		}
	}
	m.Stop()
	if sum.Deferred > 0 {
		sum.Stopped = true // tasks still wait for batch answers
	}
	res.Done, res.Failed, res.Units, res.Previous = sum.Done, sum.Failed, sum.Units, sum.Previous
	if s.perConversation {
		r.logf("%s: %d conversations done, %d with failed units, %d units (%d conversations recorded before)\n", s.label, sum.Done, sum.Failed, sum.Units, sum.Previous)
	} else {
		r.logf("%s: %d tasks done, %d failed, %d units (%d recorded before)\n", s.label, sum.Done, sum.Failed, sum.Units, sum.Previous)
	}
	if sum.Failed > 0 {
		r.logf("%s: failed units keep their error and the model's raw answer; 'ac3 retry --stage %s' runs them again\n", s.label, st.Name())
	}
	if err != nil {
		return res, err
	}
	switch {
	case sum.StopReason != nil:
		res.Stopped, res.StopReason = true, sum.StopReason
		r.logf("%s: stopped, %v; raise --budget-usd (or run.budget_usd) and run again to continue\n", s.label, sum.StopReason)
	case sum.Stopped:
		res.Stopped = true
		r.logf("%s: stopped before the end; run the same command again to continue\n", s.label)
	default:
		return res, r.noteFailures(ctx, st.Name(), lv)
	}
	return res, nil
}

// progress is where meters go; io.Discard when the caller gave none.
func (r *runner) progress() io.Writer {
	if r.opts.Progress == nil {
		return io.Discard
	}
	return r.opts.Progress
}

func (r *runner) logf(format string, args ...any) {
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, format, args...)
	}
}
