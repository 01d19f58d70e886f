package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/curate"
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
	Replicates int    // baseline trajectories per instance (N)
	Mode       string // simulate.ModeLiC, ModeModel or ModeVerbatim
	UserRole   string // the user simulator (simulate.UserRole)
	Respondent string // the assistant, in the simulation and the replay (respondent)
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
	if c.MinFailures > max(c.Replicates, 1) {
		return fmt.Errorf("lic.min_failures is %d, but there are only %d replicates", c.MinFailures, max(c.Replicates, 1))
	}
	if c.LastTurns < 0 || c.Reruns < 0 || c.Replicates < 0 || c.MinFailures < 0 || c.MaxPerTask < 0 {
		return errors.New("lic: replicates, min_failures, max_per_task, last_turns and reruns must not be negative")
	}
	return c.AC3.check()
}

// poolKey is the pool settings a run's trajectories were derived with.
func (c *LiC) poolKey(sim *simulate.Stage, check *simulate.FNCheck) string {
	k := fmt.Sprintf("min_failures=%d;max_per_task=%d;sim=%s*%d", c.MinFailures, c.MaxPerTask, sim.Variants()[0].Version, len(sim.Variants()))
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
		Replicates: c.Replicates, Mode: c.Mode, UserRole: c.UserRole, Respondent: selector,
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
	cu := &Curate{Strategies: c.Strategies, Encoding: c.Encoding, AC3: c.AC3, Workers: c.Workers}
	e := curateEnv{l: r.l, units: r.l, log: r.opts.Log, client: client}
	if e.plans, err = r.l.Plans(ctx); err != nil {
		return false, err
	}
	b, err := cu.build(ctx, e)
	if err != nil {
		return false, err
	}
	cs, ok := b.stage.(*curate.Stage)
	if !ok {
		return false, errors.New("lic: the replay needs plain strategies (no online memory)")
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

	acc, err := report.BuildAccuracy(ctx, r.l, report.AccuracyOptions{MinFailures: c.MinFailures, MaxPerTask: c.MaxPerTask, FNCheck: c.FNCheck, Traces: c.Traces, Grader: g.Fingerprint()})
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
