package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/memory"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/replay"
	"github.com/ac3/ac3/stages/lic/simulate"
	"github.com/ac3/ac3/stages/respond"
)

// LiC is the Lost-in-Conversation replay experiment (AC3 §4–5.1, Appendix
// B.1) over the LiC records the run ingested: simulate the full-context
// baseline trajectories, check them for lost information, draw the pool,
// regenerate the final turn(s) of every trajectory under each strategy,
// grade every answer, and write the accuracy section.
type LiC struct {
	// Simulation.
	Replicates int // baseline trajectories per instance (N)
	// TaskReplicates overrides N for the tasks it names (the AC3 paper
	// ran four on code, five elsewhere).
	TaskReplicates map[string]int
	Mode           string // simulate.ModeLiC, ModeModel or ModeVerbatim
	UserRole       string // the user simulator (simulate.UserRole)
	Respondent     string // the assistant, in the simulation and the replay (respondent)
	// SelectRespondent, when set, is the assistant of the baseline
	// trajectories instead, the model that selects the pool; the replay
	// still answers with Respondent (the AC3 paper's Tables 2, 5 and 6
	// select with one model and replay with others).
	SelectRespondent string
	// Pool.
	MinFailures int    // difficulty selection: baseline fails in at least k of N; 0 the unselected pool
	MaxPerTask  int    // of those, the n per task with the most failures (0: all)
	FNCheck     bool   // the false-negative pre-filter
	FNRole      string // its role (simulate.FNRole)
	Traces      string // simulate.TracesOne (also "", the paper's) or TracesAll
	// Unscored is what an answer that could not be graded counts as:
	// UnscoredDrop (also "": left out of n) or UnscoredFailure.
	Unscored string
	// RestateCalls makes the contexts gated-reset rebuilds on actions
	// restate, after the user's latest message, the instruction to give
	// every function call again (App. B.1.3: the Gated Reset row only).
	RestateCalls bool
	// Replay.
	Strategies []string // curate strategies replayed (fc and ao for the gap closure)
	LastTurns  int      // final user turns regenerated (K, default 1)
	Reruns     int      // answers per strategy and turn (M, default 1)
	Encoding   string   // tokenizer of the curate stage
	AC3        AC3      // settings of the model-backed strategies
	Grade      grade.Options
	Workers    int
	// Out is the folder of accuracy.md and accuracy.json (default: the
	// report's folder).
	Out string
	// Prompts replace the simulation's prompts with users' templates (the
	// replay's analyzer prompts and operators' texts are in AC3).
	Prompts simulate.Prompts
	// Memory is the memory arm, Table 1's "+Memory" rows: the AC3
	// operators it lists replayed again with the online memory learning
	// from each graded instance (replay.MemoryArm). It is sequential.
	Memory LiCMemory
}

// LiCMemory configures the LiC replay's memory arm.
type LiCMemory struct {
	Strategies []string // AC3 operators (replay.MemoryOperators); rows <op>+memory
	Seed       uint64   // draws the order instances are replayed and learned in
}

// check refuses settings that cannot work.
func (c *LiC) check() error {
	switch c.Mode {
	case "", simulate.ModeModel, simulate.ModeVerbatim, simulate.ModeLiC:
	default:
		return fmt.Errorf("lic.mode %q: want %s, %s or %s", c.Mode, simulate.ModeLiC, simulate.ModeModel, simulate.ModeVerbatim)
	}
	if len(c.Strategies) == 0 {
		return errors.New("lic.strategies: list at least one strategy to replay")
	}
	switch c.Traces {
	case "", simulate.TracesOne, simulate.TracesAll:
	default:
		return fmt.Errorf("lic.traces %q: want %s (the paper's: one saved baseline trace per instance) or %s", c.Traces, simulate.TracesOne, simulate.TracesAll)
	}
	for _, name := range c.Memory.Strategies {
		if !slices.Contains(replay.MemoryOperators(), name) {
			return fmt.Errorf("lic.memory.strategies: %q reads no cheatsheet; the memory arm replays %s", name, strings.Join(replay.MemoryOperators(), ", "))
		}
	}
	if c.MinFailures > max(c.Replicates, 1) {
		return fmt.Errorf("lic.min_failures is %d, but there are only %d replicates", c.MinFailures, max(c.Replicates, 1))
	}
	if c.Unscored != "" && c.Unscored != UnscoredDrop && c.Unscored != UnscoredFailure {
		return fmt.Errorf("lic.unscored: %q, want %s (left out of n) or %s (counted as failed, as B.1.4 prints some code cells)", c.Unscored, UnscoredDrop, UnscoredFailure)
	}
	for _, task := range slices.Sorted(maps.Keys(c.TaskReplicates)) {
		switch n := c.TaskReplicates[task]; {
		case !slices.Contains(grade.Tasks(), task):
			return fmt.Errorf("lic.task_replicates: unknown task %q (tasks: %s)", task, strings.Join(grade.Tasks(), ", "))
		case n < 1:
			return fmt.Errorf("lic.task_replicates.%s: %d, want at least 1", task, n)
		case c.MinFailures > n:
			return fmt.Errorf("lic.min_failures is %d, but task %s has only %d replicates", c.MinFailures, task, n)
		}
	}
	if c.LastTurns < 0 || c.Reruns < 0 || c.Replicates < 0 || c.MinFailures < 0 || c.MaxPerTask < 0 {
		return errors.New("lic: replicates, min_failures, max_per_task, last_turns and reruns must not be negative")
	}
	return c.AC3.check()
}

// restateCalls is the line an actions context rebuilt by an operator ends
// with under lic.restate_calls, in our words.
const restateCalls = "(Reminder: your reply must list every function call the whole request needs, including the calls you already gave in earlier replies.)"

// ac3 is the operators' settings for the replay: the config's, with the
// actions restatement when asked for.
func (c *LiC) ac3() AC3 {
	a := c.AC3
	if c.RestateCalls {
		a.Restate = curate.Restate{Name: "lic-actions-calls-v1", Text: func(cv *conv.Conversation) string {
			if in, err := grade.ParseInstance(cv.Meta); err == nil && in.Task == grade.TaskActions {
				return restateCalls
			}
			return ""
		}}
	}
	return a
}

// What an answer that could not be graded counts as (LiC.Unscored).
const (
	UnscoredDrop    = "drop"
	UnscoredFailure = "failure"
)

// poolKey is the pool settings a run's trajectories were derived with.
func (c *LiC) poolKey(sim *simulate.Stage, check *simulate.FNCheck) string {
	k := fmt.Sprintf("min_failures=%d;max_per_task=%d;sim=%s*%d", c.MinFailures, c.MaxPerTask, sim.Variants()[0].Version, len(sim.Variants()))
	for _, task := range slices.Sorted(maps.Keys(c.TaskReplicates)) {
		k += fmt.Sprintf(";%s*%d", task, c.TaskReplicates[task])
	}
	if check != nil {
		k += ";check=" + check.Variants()[0].Version
	}
	if c.Traces != simulate.TracesAll {
		// Runs from before this setting replayed every trace, under the
		// key without it.
		k += ";traces=" + simulate.TracesOne
	}
	return k
}

const metaPool = "lic.pool"

// lic runs the experiment. Each step resumes; a step whose work is not
// all done (failed units, a stop) ends the run there with a line saying
// what to do, since every later step reads the whole of it.
func (r *runner) lic(ctx context.Context) (bool, error) {
	c := r.plan.LiC
	if c == nil {
		return true, nil
	}
	r.heading("lic (%s)", strings.Join(c.Strategies, ","))
	counter, err := (&Curate{Encoding: c.Encoding}).counter()
	if err != nil {
		return false, err
	}
	client, err := r.modelClientAs(ctx, counter, "lic", StageResult{Stage: simulate.StageName, Label: simulate.StageName})
	if err != nil || client == nil {
		return err == nil, err
	}
	respondent := cmp.Or(c.Respondent, simulate.RespondentRole)
	selector := cmp.Or(c.SelectRespondent, respondent)
	g := grade.New(c.Grade)
	sim, err := simulate.New(client, simulate.Options{
		Replicates: c.Replicates, TaskReplicates: c.TaskReplicates, Mode: c.Mode, UserRole: c.UserRole, Respondent: selector,
		UserSettings: r.plan.Model.roleSettings(cmp.Or(c.UserRole, simulate.UserRole)), RespondentSettings: r.plan.Model.roleSettings(selector),
		Grader: g, Prompts: c.Prompts,
	})
	if err != nil {
		return false, err
	}
	// step runs one stage to the end over scope; ok is false when the run
	// must stop there.
	step := func(s pipeline.Stage, label string, scope ledger.Scope, workers int) (bool, error) {
		res, err := r.runStage(ctx, stageRun{label: label, stage: s, workers: workers, scope: scope})
		if err != nil {
			return false, err
		}
		if !r.addStage(res) {
			return false, nil
		}
		if err := pipeline.Barrier(ctx, r.l, s, scope); err != nil {
			var inc *pipeline.IncompleteError
			if errors.As(err, &inc) {
				r.logf("lic: %v; the steps after it wait for all of it\n", err)
				if inc.Pending == 0 {
					// Only failed tasks are left: running again does not
					// help until they are retried.
					r.res.Blocked = fmt.Sprintf("lic stopped after %s: the steps after it need all of its tasks done, and %d failed", label, inc.Failed)
				}
				return false, nil
			}
			return false, err
		}
		return true, nil
	}
	if ok, err := step(sim, "lic simulate", ledger.AllOrigins, c.Workers); !ok || err != nil {
		return ok, err
	}
	var check *simulate.FNCheck
	if c.FNCheck {
		role := cmp.Or(c.FNRole, simulate.FNRole)
		check = simulate.NewFNCheck(client, r.l, sim, role, r.plan.Model.roleSettings(role))
		if ok, err := step(check, "lic false-negative check", ledger.AllOrigins, c.Workers); !ok || err != nil {
			return ok, err
		}
	}
	if ok, err := r.licPool(ctx, c, sim, check); !ok || err != nil {
		return ok, err
	}
	trajectories := ledger.MustOrigins(simulate.Origin)

	// Replay: the strategies' contexts of the final turn(s), then M answers
	// from each.
	last := cmp.Or(c.LastTurns, 1)
	// From turn 1: the final turn is replayed whatever it is, also that of
	// a trajectory that passed at its first message (lic.traces: all).
	cu := &Curate{Strategies: c.Strategies, Encoding: c.Encoding, AC3: c.ac3(), Workers: c.Workers, FromTurn: 1}
	e := curateEnv{l: r.l, units: r.l, log: r.opts.Log, client: client, noCache: r.plan.Model.NoCache}
	if e.plans, err = r.l.Plans(ctx); err != nil {
		return false, err
	}
	b, err := cu.build(ctx, e)
	if err != nil {
		return false, err
	}
	cs, ok := b.stage.(*curate.Stage)
	if !ok {
		return false, errors.New("lic: the replay's arms run without memory (lic.operators.memory); the online memory, learning from each graded instance, is the memory arm: list its operators under lic.memory.strategies")
	}
	cs.WithLastTurns(last)
	if ok, err := step(cs, "lic replay: curate", trajectories, c.Workers); !ok || err != nil {
		return ok, err
	}
	cv := map[string]string{}
	var names []string
	for _, v := range cs.Variants() {
		cv[v.Name] = v.Version
		names = append(names, v.Name)
	}
	rs, err := respond.New(client, r.l, respond.Options{
		Strategies: names, CurateVersions: cv, Samples: cmp.Or(c.Reruns, 1), Turns: pipeline.Turns{Last: last},
		Respondents: []respond.Respondent{{Role: respondent, Settings: r.plan.Model.roleSettings(respondent)}},
	})
	if err != nil {
		return false, err
	}
	if ok, err := step(rs, "lic replay: respond", trajectories, c.Workers); !ok || err != nil {
		return ok, err
	}
	gs, err := replay.New(r.l, g, rs.Variants())
	if err != nil {
		return false, err
	}
	if ok, err := step(gs, "lic grade", trajectories, c.Workers); !ok || err != nil {
		return ok, err
	}
	if len(c.Memory.Strategies) > 0 {
		arm, err := c.memoryArm(client, counter, g, sim, check, r.plan.Model.roleSettings(respondent), e.l)
		if err != nil {
			return false, err
		}
		if ok, err := r.licMemory(ctx, arm, trajectories); !ok || err != nil {
			return ok, err
		}
	}

	acc, err := report.BuildAccuracy(ctx, r.l, report.AccuracyOptions{MinFailures: c.MinFailures, TaskReplicates: c.TaskReplicates, UnscoredFail: c.Unscored == UnscoredFailure, MaxPerTask: c.MaxPerTask, FNCheck: c.FNCheck, Traces: c.Traces, Grader: g.Fingerprint()})
	if err != nil {
		return false, err
	}
	out := c.Out
	if out == "" && r.plan.Report != nil {
		out = r.plan.Report.Out
	}
	if out == "" {
		r.logf("lic: no folder for accuracy.md (set lic.out or run.out)\n")
		return true, nil
	}
	return r.wroteReports(report.WriteAccuracy(out, acc))
}

// memoryArm builds the memory arm of c over the pool of sim and check,
// recording in store.
func (c *LiC) memoryArm(client *llm.Client, counter *tokens.Counter, g *grade.Grader, sim *simulate.Stage, check *simulate.FNCheck, settings string, store memory.MetaStore) (*replay.MemoryArm, error) {
	an, err := analyze.New(client, analyze.Options{Ablation: c.AC3.Ablation, Retries: c.AC3.Retries, Prompts: c.AC3.Prompts})
	if err != nil {
		return nil, err
	}
	opts := c.ac3().strategyOptions()
	opts.Analyzer = an
	return replay.NewMemoryArm(replay.MemoryOptions{
		Client: client, Counter: counter, Grader: g, Strategies: c.Memory.Strategies, Seed: c.Memory.Seed,
		Curate:     opts,
		Respondent: cmp.Or(c.Respondent, simulate.RespondentRole), RespondentSettings: settings,
		Reruns: cmp.Or(c.Reruns, 1), LastTurns: cmp.Or(c.LastTurns, 1), Pool: c.poolKey(sim, check), Store: store,
	})
}

// licMemory runs the memory arm over the pool's trajectories, one instance
// at a time (see replay.MemoryArm); ok is false when it stopped early.
func (r *runner) licMemory(ctx context.Context, arm *replay.MemoryArm, scope ledger.Scope) (bool, error) {
	r.heading("lic memory (%s)", strings.Join(arm.Rows(), ","))
	r.logf("lic: %s\n", arm.Sequential())
	var items []replay.Item
	err := r.l.In(scope).EachPage(ctx, 512, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			items = append(items, replay.Item{Seq: s.Seq, ID: s.Conv.ID})
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	arm.SetRun(r.opts.Log, r.stopped)
	done, err := arm.Run(ctx, items, func(ctx context.Context, it replay.Item) (*conv.Conversation, error) {
		s, ok, err := r.l.Conversation(ctx, it.ID)
		if err == nil && !ok {
			err = fmt.Errorf("trajectory %s is not in the run", it.ID)
		}
		return s.Conv, err
	})
	if err == nil && !done {
		r.logf("lic: the memory arm stopped part way; run again to resume it\n")
	}
	if err == nil {
		err = r.noteMemoryFailures(ctx)
	}
	return done, err
}

// noteMemoryFailures puts the memory arm's failed steps among the run's
// failures, a row per chain: a step whose call failed taught nothing and
// has no graded answer, so the run must not end as if it were complete.
func (r *runner) noteMemoryFailures(ctx context.Context) error {
	steps, err := replay.FailedSteps(ctx, r.l)
	if err != nil {
		return err
	}
	byRow := map[string]*StageFailures{}
	var rows []string
	for _, st := range steps {
		f := byRow[st.Row]
		if f == nil {
			f = &StageFailures{Stage: replay.MemoryStage, Variant: st.Row}
			byRow[st.Row] = f
			rows = append(rows, st.Row)
		}
		f.Tasks++
		f.Units++
		reason := ledger.FailureReason(st.Skipped)
		i := slices.IndexFunc(f.Groups, func(g ledger.FailureGroup) bool { return g.Reason == reason })
		if i < 0 {
			f.Groups = append(f.Groups, ledger.FailureGroup{Reason: reason, Example: ledger.FailedUnit{ConvID: st.Conv, ConvSeq: st.Seq, Turn: st.Turn, Error: st.Skipped}})
			i = len(f.Groups) - 1
		}
		f.Groups[i].Units++
	}
	r.res.Failed = slices.DeleteFunc(r.res.Failed, func(f StageFailures) bool { return f.Stage == replay.MemoryStage })
	for _, row := range rows {
		r.res.Failed = append(r.res.Failed, *byRow[row])
	}
	return nil
}

// keptKey compares key with the one the run recorded under meta for
// something built once and then kept (the LiC pool, the CompInt
// instances): ok says whether there is one, and a different one is the
// error mismatch makes of it.
func (r *runner) keptKey(ctx context.Context, meta, key string, mismatch func(had string) error) (ok bool, err error) {
	had, ok, err := r.l.Meta(ctx, meta)
	if err != nil {
		return false, err
	}
	if ok && had != key {
		return true, mismatch(had)
	}
	return ok, nil
}

// licPool derives the pool's trajectories as conversations, once: the
// pool a run drew is kept, and other pool settings need a new run file.
func (r *runner) licPool(ctx context.Context, c *LiC, sim *simulate.Stage, check *simulate.FNCheck) (bool, error) {
	key := c.poolKey(sim, check)
	ok, err := r.keptKey(ctx, metaPool, key, func(had string) error {
		return fmt.Errorf("lic: this run's pool was drawn with %s; the settings now give %s (use a new run file for another pool)", had, key)
	})
	if err != nil {
		return false, err
	}
	if !ok {
		if err := r.l.SetMeta(ctx, metaPool, key); err != nil {
			return false, err
		}
	}
	src := ledger.MustOrigins(ledger.OriginSource)
	pool := &simulate.Pool{MinFailures: c.MinFailures, MaxPerTask: c.MaxPerTask, Check: check, Traces: c.Traces}
	if err := pool.Rank(ctx, r.l.In(src).EachPage, r.l, sim); err != nil {
		return false, err
	}
	sum, err := pipeline.Derive(ctx, r.l, simulate.Origin, src,
		simulate.Trajectories(r.l, sim, pool), pipeline.DeriveOptions{Stop: r.opts.Stop})
	if err != nil {
		return false, err
	}
	r.logf("lic pool: %d trajectories stored, %d already there, from %d instances\n", sum.Added, sum.Existing, sum.Parents)
	return !sum.Stopped, nil
}
