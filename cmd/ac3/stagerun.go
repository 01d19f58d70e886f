package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/progress"
)

// runStage runs every pending task of st with a progress meter (tasks,
// tokens, and dollars from the run's call records, so cached answers cost
// nothing), stopping gracefully at the budget. It records the stage's plan
// first, says "nothing to do" when everything is recorded, and reports
// whether all work is done (false when Ctrl-C or the budget stopped it).
//
// perConversation words the counts as conversations, for stages with one
// variant, where a task is a conversation.
func runStage(ctx context.Context, e *env, l *ledger.Ledger, label string, st pipeline.Stage, workers int, perConversation bool) (bool, error) {
	if err := l.SetPlan(ctx, st.Name(), toLedger(st.Variants())); err != nil {
		return false, err
	}
	pending, recorded, err := pipeline.Pending(ctx, l, st)
	if err != nil {
		return false, err
	}
	if pending == 0 {
		fmt.Fprintf(e.stdout, "%s: nothing to do, all %d tasks (conversation × variant) are already recorded\n", label, recorded)
		return true, nil
	}
	spent, err := l.SpendUSD(ctx)
	if err != nil {
		return false, err
	}
	unit := "tasks"
	if perConversation {
		unit = "conversations"
	}
	m := progress.Start(e.stderr, label, unit, pending)
	sum, err := pipeline.Run(ctx, l, st, pipeline.Options{
		Workers: workers, Stop: e.stop,
		Graceful: func(err error) bool { return errors.Is(err, llm.ErrBudgetExceeded) },
		OnCommit: func(tasks, _, _ int, tok int64) {
			m.Add(int64(tasks), tok)
			if now, err := l.SpendUSD(ctx); err == nil && now > spent {
				m.AddCost(now - spent)
				spent = now
			}
		},
	})
	m.Stop()
	if perConversation {
		fmt.Fprintf(e.stdout, "%s: %d conversations done, %d with failed units, %d units (%d conversations recorded before)\n", label, sum.Done, sum.Failed, sum.Units, sum.Previous)
	} else {
		fmt.Fprintf(e.stdout, "%s: %d tasks done, %d failed, %d units (%d recorded before)\n", label, sum.Done, sum.Failed, sum.Units, sum.Previous)
	}
	if sum.Failed > 0 {
		fmt.Fprintf(e.stdout, "%s: failed units keep their error and the model's raw answer; 'ac3 retry --stage %s' runs them again\n", label, st.Name())
	}
	if err != nil {
		return false, err
	}
	if sum.StopReason != nil {
		fmt.Fprintf(e.stdout, "%s: stopped, %v; raise --budget-usd (or run.budget_usd) and run again to continue\n", label, sum.StopReason)
		return false, nil
	}
	if sum.Stopped {
		fmt.Fprintf(e.stdout, "%s: stopped before the end; run the same command again to continue\n", label)
		return false, nil
	}
	return true, nil
}
