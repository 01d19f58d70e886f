package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/batch"
)

// Options are how a run reports and is stopped; none changes what it does.
type Options struct {
	// Stop, when closed (the first Ctrl-C), stops taking new work: work in
	// flight finishes and is recorded, and Execute returns with
	// Result.Stopped set.
	Stop <-chan struct{}
	// Log receives one line per decision and outcome (what was skipped and
	// why, what each stage did). Nil discards them.
	Log io.Writer
	// Progress receives the live progress meters and endpoint alarms. Nil
	// discards them.
	Progress io.Writer
	// Headings puts a "== step" line before each step, as `ac3 run` shows.
	Headings bool
}

// Result is what a run did.
type Result struct {
	Stages []StageResult
	// Stopped: the run stopped before the end (a Ctrl-C, the budget); run
	// the same plan again to continue. StopReason is the budget error when
	// the budget stopped it.
	Stopped    bool
	StopReason error
	Reports    []string // report files written
	Exports    []Exported
	// Failed lists the stage variants this run covered that have failed
	// units recorded in the run file, by this pass or an earlier one, in
	// the order the stages ran. Unlike FailedTasks it does not forget them
	// on the next pass: they stay until 'ac3 retry' queues them again.
	Failed []StageFailures
	// Blocked, when set, says which step ended the run because it needs
	// every task of an earlier stage done and some of them failed: running
	// again does not help until they are retried (Stopped is false then).
	Blocked string
	// BatchRounds counts the rounds of batches the run submitted and waited
	// for. StageResult.BatchRounds has each stage's; stages that do not
	// read each other's answers share theirs, so this is at most their sum.
	BatchRounds int
}

// ReportFile is the report the run wrote for people to open: its
// report.html, else the first file it wrote; "" when it wrote none.
func (r Result) ReportFile() string {
	for _, p := range r.Reports {
		if filepath.Ext(p) == ".html" {
			return p
		}
	}
	if len(r.Reports) > 0 {
		return r.Reports[0]
	}
	return ""
}

// WriteDone writes the closing lines of a whole run (ac3 run) that ended
// with err (Finish's): where its report is and how to see the run, in the
// report, with 'ac3 status' and in the browser with 'ac3 view' (which
// report.html links into). A run that finished with failed units wrote its
// report too, and the view shows those units.
func (r Result) WriteDone(w io.Writer, db string, err error) {
	report := r.ReportFile()
	switch {
	case err != nil && report != "" && ExitCode(err) == ExitFailed:
		fmt.Fprintf(w, "the report is %s\n", report)
	case err != nil:
		return
	case report != "":
		fmt.Fprintf(w, "== done; the report is %s, and 'ac3 status --db %s' shows the run\n", report, db)
	default:
		fmt.Fprintf(w, "== done; 'ac3 status --db %s' shows the run\n", db)
	}
	fmt.Fprintf(w, "browse every turn, answer and verdict with 'ac3 view --db %s'%s\n", db, viewNote(report))
}

// viewNote says that report.html's links need the view running.
func viewNote(report string) string {
	if filepath.Ext(report) != ".html" {
		return ""
	}
	return "; " + filepath.Base(report) + " links into it"
}

// Exported is one export file written.
type Exported struct {
	What, Out string
	Rows      int64
	// Skipped counts rows left out, by reason (export.Stats.Skipped).
	Skipped map[string]int64
}

// FailedTasks returns the tasks that failed in this pass, by stage, in the
// order the stages ran. Result.Failed is what the run file holds, whichever
// pass recorded it.
func (r Result) FailedTasks() []StageResult {
	var out []StageResult
	for _, s := range r.Stages {
		if s.Failed > 0 {
			out = append(out, s)
		}
	}
	return out
}

// runner is one Execute call.
type runner struct {
	plan Plan
	opts Options
	l    *ledger.Ledger
	res  Result
	// batch drives the run's batches, built when a stage first defers.
	batch *batch.Driver
	// rounds holds the batch rounds of each group of stages, in run order.
	rounds []roundsOf
}

// Execute runs plan: ingest, annotate, curate, respond, the pollution
// review of the generated replies, judge, report,
// exports, in that order, each step only if the plan has it. Every step
// resumes where an earlier run stopped and does nothing when its work is
// all recorded, so Execute can be called again after any interruption.
//
// It returns when every step is done, or early (Result.Stopped) when Stop
// is closed or the budget is reached; stages record their failed units and
// go on (Result.FailedTasks for this pass, Result.Failed for what the run
// file holds for the stages the plan covers). Errors are what stops a run
// for good: a bad plan (found before any stage runs, see preflight), an
// unreadable input, a damaged run file, a fatal endpoint error (errors.Is
// llm.ErrFatal), cancellation of ctx. Input files are checked before the
// run file is opened, so a missing input leaves no run behind.
func Execute(ctx context.Context, plan Plan, opts Options) (Result, error) {
	plan, shardNote := plan.forShard()
	r := &runner{plan: plan, opts: opts}
	if err := plan.check(); err != nil {
		return r.res, err
	}
	// The whole plan is checked before the first stage runs (and so before
	// the first paid call); before the run file is created when it does
	// not exist yet, so a refused plan leaves none behind.
	_, statErr := os.Stat(plan.DB)
	fresh := errors.Is(statErr, os.ErrNotExist)
	if fresh {
		if err := r.preflight(ctx, nil); err != nil {
			return r.res, err
		}
	}
	var err error
	r.l, err = ledger.Open(ctx, plan.DB, ledger.Options{ReadOnly: !plan.writes(), Log: opts.Log})
	if err != nil {
		return r.res, err
	}
	defer r.l.Close()
	if !fresh {
		if err := r.preflight(ctx, r.l); err != nil {
			return r.res, err
		}
	}
	if plan.writes() {
		if err := r.checkShard(ctx); err != nil {
			return r.res, err
		}
	}
	if shardNote != "" {
		r.logf("%s\n", shardNote)
	}
	for _, step := range []func(context.Context) (bool, error){r.ingest, r.compintBuild, r.annotate, r.curate, r.lic, r.respond, r.replies, r.judge, r.compintMeasure, r.report, r.exports} {
		done, err := step(ctx)
		if err != nil {
			return r.res, err
		}
		if !done {
			if r.res.Blocked == "" {
				r.res.Stopped = true
				r.logRounds()
				return r.res, nil
			}
			break
		}
	}
	r.logRounds()
	if err := r.skippedFailures(ctx); err != nil {
		return r.res, err
	}
	if r.res.Blocked != "" && len(r.res.Failed) == 0 {
		// The failed tasks the step waits for were not found again: say
		// the run stopped rather than let it pass for finished.
		r.res.Stopped = true
	}
	return r.res, nil
}

// check refuses a plan that cannot run before anything is touched.
func (p Plan) check() error {
	if p.DB == "" {
		return errors.New("no run file: pass --db RUN.db")
	}
	if err := p.Model.checkBudget(); err != nil {
		return err
	}
	if in := p.Ingest; in != nil {
		if len(in.Files) == 0 {
			return errors.New("no input files: pass one or more FILEs")
		}
		if _, err := in.Filter.keep(); err != nil {
			return err
		}
		if _, err := in.Filter.nearDedupe(); err != nil {
			return err
		}
		if in.Filter.Near != nil && p.Shard.Enabled() {
			return errNearShard
		}
		for _, f := range in.Files {
			if _, err := os.Stat(f); err != nil {
				return fmt.Errorf("reading input: %w", err)
			}
		}
	}
	if c := p.Curate; c != nil {
		if len(c.Strategies) == 0 {
			return errors.New("curate: list at least one strategy")
		}
		if err := c.AC3.check(); err != nil {
			return err
		}
		if _, err := ledger.Origins(c.On...); err != nil {
			return fmt.Errorf("curate on: %w", err)
		}
		if c.LastTurns > 0 && c.AC3.Memory == MemoryOnline {
			return errors.New("curate: last_turns cannot be used with the online memory, which learns from every turn in order")
		}
	}
	if c := p.CompInt; c != nil {
		if err := c.check(); err != nil {
			return err
		}
	}
	if p.LiC != nil {
		if err := p.LiC.check(); err != nil {
			return err
		}
	}
	if err := p.shardable(); err != nil {
		return err
	}
	if p.Judge != nil && len(p.Judge.Pairs) == 0 {
		return errors.New("no pairs: pass --pairs A:B,... or give a config with stages.judge.pairs")
	}
	for _, x := range p.Exports {
		if err := x.check(); err != nil {
			return err
		}
	}
	return nil
}

// stopped reports whether the run was asked to stop.
func (r *runner) stopped() bool {
	select {
	case <-r.opts.Stop:
		return true
	default:
		return false
	}
}

func (r *runner) heading(format string, args ...any) {
	if r.opts.Headings {
		r.logf("== "+format+"\n", args...)
	}
}

// addStage records a stage's result and reports whether the run goes on.
func (r *runner) addStage(s StageResult) bool {
	r.res.Stages = append(r.res.Stages, s)
	if s.StopReason != nil {
		r.res.StopReason = s.StopReason
	}
	return !s.Stopped
}

// IsStop reports whether err stopped a run that can be resumed as it is:
// a fatal endpoint error (a key, a model or a quota to fix first) or a
// cancelled context.
func IsStop(err error) bool {
	return errors.Is(err, llm.ErrFatal) || errors.Is(err, context.Canceled)
}
