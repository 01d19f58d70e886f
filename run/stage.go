package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

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
	// BatchRounds counts the rounds of batches the stage waited for in
	// this run (rounds it may have shared with other stages).
	BatchRounds int
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
	// perConversation words the counts as conversations, for stages with
	// one variant, where a task is a conversation.
	perConversation bool
	// scope narrows the conversations the stage runs over (the LiC replay
	// runs curate and respond over trajectories only); zero: all.
	scope ledger.Scope
}

// runStage runs every pending task of one stage (see runStages).
func (r *runner) runStage(ctx context.Context, s stageRun) (StageResult, error) {
	res, err := r.runStages(ctx, []stageRun{s})
	if len(res) == 0 {
		return StageResult{Stage: s.stage.Name(), Label: s.label}, err
	}
	return res[0], err
}

// groupStage is one stage of a runStages call as its passes go.
type groupStage struct {
	stageRun
	res     StageResult
	lv      []ledger.Variant
	unit    string // what the meter counts: tasks, or conversations
	pending int64  // tasks pending before the first pass: the meter's total
	sum     pipeline.Summary
	counts  progress.Counts // the meter's counts at the end of the last pass
	passes  int
	begun   bool // its plan is recorded and its pending tasks counted
	// plan is what Begin recorded and counted, for the first pass; a later
	// pass (after a batch round) counts again.
	plan *pipeline.Plan
	open bool // another pass is due
}

// runStages runs every pending task of stages that do not read each
// other's output, in order, with a progress meter each (tasks, tokens, and
// dollars from the run's call records, so cached answers cost nothing),
// stopping gracefully at the budget. Each stage records its plan first,
// says "nothing to do" when everything is recorded, and logs what it did.
//
// In batch mode a pass leaves the tasks whose requests went to a batch
// pending. Every stage passes once, then what they all queued is submitted
// in one round of batches (see awaitBatches), and the stages that deferred
// tasks pass again, until none defers: the stages share their rounds, so
// the group takes as many rounds as its longest stage, not their sum.
// Online, no stage defers and the stages run one after another.
//
// It returns the results of the stages that started, in order: a stop (a
// Ctrl-C, the budget) in one stage's pass leaves the stages after it that
// had not started out.
func (r *runner) runStages(ctx context.Context, runs []stageRun) ([]StageResult, error) {
	gs := make([]*groupStage, len(runs))
	for i, s := range runs {
		gs[i] = &groupStage{stageRun: s, res: StageResult{Stage: s.stage.Name(), Label: s.label}, lv: toLedger(s.stage.Variants()), unit: "tasks"}
		if s.perConversation {
			gs[i].unit = "conversations"
		}
	}
	var spent float64 // the run's spend the meters have shown
	var err error
	stopped := false
	for round := 1; ; round++ {
		var waiting []*groupStage
		for _, g := range gs {
			if round == 1 {
				// A stage is taken up only when the ones before it have
				// passed, as a run of one stage after another would.
				if err = r.beginStage(ctx, g); err != nil {
					break
				}
				if spent, err = r.l.SpendUSD(ctx); err != nil {
					break
				}
			}
			if !g.open {
				continue
			}
			var pass pipeline.Summary
			if pass, err = r.pass(ctx, g, &spent); err != nil {
				break
			}
			if pass.StopReason != nil || r.stopped() {
				stopped = true
				break
			}
			if pass.Deferred == 0 {
				g.open = false
				continue
			}
			waiting = append(waiting, g)
		}
		if err != nil || stopped || len(waiting) == 0 {
			break
		}
		if round == maxBatchRounds {
			err = fmt.Errorf("%s: tasks still wait for batch answers after %d rounds", waiting[0].label, round)
			break
		}
		goOn, berr := r.awaitBatches(ctx, waiting)
		if berr != nil {
			err = berr
			break
		}
		if !goOn {
			break
		}
		for _, g := range gs {
			g.open = slices.Contains(waiting, g)
		}
	}
	r.noteRounds(gs)
	var out []StageResult
	for _, g := range gs {
		if !g.begun {
			break
		}
		if g.passes == 0 {
			out = append(out, g.res) // nothing to do
			continue
		}
		res, ferr := r.finishStage(ctx, g, err)
		out = append(out, res)
		if ferr != nil && err == nil {
			err = ferr
		}
	}
	return out, err
}

// beginStage records g's plan and counts its pending tasks. A stage with
// nothing to do says so, with the failed units earlier passes recorded.
func (r *runner) beginStage(ctx context.Context, g *groupStage) error {
	g.begun = true
	for _, line := range userPrompts(g.stage) {
		r.logf("%s: %s\n", g.label, line)
	}
	p, err := pipeline.Begin(ctx, r.l, g.stage, g.scope)
	if err != nil {
		return err
	}
	pending, recorded := p.Pending, p.Recorded
	g.plan = &p
	if pending == 0 {
		g.res.Previous = recorded
		r.logf("%s: nothing to do, all %d tasks (conversation × variant) are already recorded\n", g.label, recorded)
		// Nothing to do is not nothing wrong: failed units of an earlier
		// pass are still recorded.
		return r.noteFailures(ctx, g.stage.Name(), g.lv)
	}
	g.pending, g.open = pending, true
	return nil
}

// pass runs g's pending tasks once. Its meter takes up the counts of the
// stage's earlier passes: a task counts once, when it is committed done or
// failed, never when it is left waiting for a batch, so done/total is right
// over all the passes. spent is the run's spend the meters have shown;
// what a commit finds above it is shown by the committing stage.
func (r *runner) pass(ctx context.Context, g *groupStage, spent *float64) (pipeline.Summary, error) {
	m := progress.StartFrom(r.progress(), g.label, g.unit, g.pending, g.counts)
	pass, err := pipeline.Run(ctx, r.l, g.stage, pipeline.Options{
		Workers: g.workers, Stop: r.opts.Stop, Scope: g.scope, Plan: g.plan,
		Graceful: func(err error) bool { return errors.Is(err, llm.ErrBudgetExceeded) },
		OnCommit: func(tasks, _, _ int, tok int64) {
			m.Add(int64(tasks), tok)
			if now, err := r.l.SpendUSD(ctx); err == nil && now > *spent {
				m.AddCost(now - *spent)
				*spent = now
			}
		},
	})
	m.Stop()
	g.plan = nil
	g.counts = m.Counts()
	if g.passes == 0 {
		g.sum.Planned, g.sum.Previous = pass.Planned, pass.Previous
	}
	g.passes++
	g.sum.Done += pass.Done
	g.sum.Failed += pass.Failed
	g.sum.Units += pass.Units
	g.sum.Stopped, g.sum.StopReason, g.sum.Deferred = pass.Stopped, pass.StopReason, pass.Deferred
	return pass, err
}

// waitingTasks counts g's tasks neither done nor failed after its last
// pass: those waiting for batch answers, when the pass was not stopped.
func (g *groupStage) waitingTasks() int64 { return g.pending - g.sum.Done - g.sum.Failed }

// finishStage logs what g did over its passes and makes its result. runErr
// is the error that ended the passes, if any: then the stage only says
// what it did.
func (r *runner) finishStage(ctx context.Context, g *groupStage, runErr error) (StageResult, error) {
	sum, res := g.sum, g.res
	if sum.Deferred > 0 {
		sum.Stopped = true // tasks still wait for batch answers
	}
	res.Done, res.Failed, res.Units, res.Previous = sum.Done, sum.Failed, sum.Units, sum.Previous
	if g.perConversation {
		r.logf("%s: %d conversations done, %d with failed units, %d units (%d conversations recorded before)\n", g.label, sum.Done, sum.Failed, sum.Units, sum.Previous)
	} else {
		r.logf("%s: %d tasks done, %d failed, %d units (%d recorded before)\n", g.label, sum.Done, sum.Failed, sum.Units, sum.Previous)
	}
	if sum.Failed > 0 {
		r.logf("%s: failed units keep their error and the model's raw answer; 'ac3 retry --stage %s' runs them again\n", g.label, g.stage.Name())
	}
	if runErr != nil {
		return res, nil
	}
	switch {
	case sum.StopReason != nil:
		res.Stopped, res.StopReason = true, sum.StopReason
		r.logf("%s: stopped, %v; raise --budget-usd (or run.budget_usd) and run again to continue\n", g.label, sum.StopReason)
	case sum.Stopped:
		res.Stopped = true
		r.logf("%s: stopped before the end; run the same command again to continue\n", g.label)
	default:
		return res, r.noteFailures(ctx, g.stage.Name(), g.lv)
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
