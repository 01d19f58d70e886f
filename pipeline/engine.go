package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/pool"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
)

// Options tune a run of the engine.
type Options struct {
	// Workers is how many tasks of a CPU-bound stage (curation by rules,
	// heuristic annotators) run at once. One per core keeps the cores busy;
	// more only adds memory. Default: GOMAXPROCS.
	Workers int
	// Window is, for a model-backed stage (a ModelStage whose ModelWindow
	// is not 0), how many tasks are open at once and how many of their
	// units may be in flight, sent or waiting at the endpoint's limiter
	// (see Task.Each). It does not raise what the endpoint allows: the llm
	// client's concurrency, RPM and TPM limits still decide what is sent,
	// so the window only needs to be large enough that a request is
	// always waiting when the endpoint can take one. It bounds memory (one
	// conversation and its results per open task) and how much work a stop
	// lets finish. Default: the stage's ModelWindow, which derives it from
	// the endpoints' limits (DefaultWindow).
	Window int
	// BatchSize, BatchBytes and BatchWait bound how many finished tasks
	// wait for a commit, how many bytes of unit output they may hold, and
	// for how long (defaults 256, 16 MiB and 500ms). The byte bound keeps
	// memory flat when a stretch of long conversations makes every task's
	// output large (a concatenated context grows with the square of the
	// turns).
	BatchSize  int
	BatchBytes int
	BatchWait  time.Duration
	// PageSize is how many conversations are planned per ledger read.
	PageSize int
	// Stop, when closed, stops planning new tasks and starting new units;
	// units in flight finish, and tasks whose units all ran are committed.
	Stop <-chan struct{}
	// Graceful reports whether a stage error means "stop taking new work"
	// rather than "the run failed" (a spending cap reached): the task is
	// left pending, in-flight units finish, and Run returns the error in
	// Summary.StopReason instead of failing.
	Graceful func(error) bool
	// OnCommit is called after each commit with the tasks and units stored
	// and the sum of their token counts.
	OnCommit func(tasks, units int, failed int, tokens int64)
	// Scope narrows the conversations the stage runs over to these origins
	// (the run's `on:` setting for the stage); the zero Scope leaves the
	// stage's own (see StageScope).
	Scope ledger.Scope
	// Plan, when set, is what Begin just recorded and counted for the stage
	// (under the same Scope): Run takes its scope and counts from it
	// instead of recording and counting again.
	Plan *Plan
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 16 << 20
	}
	if o.BatchWait <= 0 {
		o.BatchWait = 500 * time.Millisecond
	}
	if o.PageSize <= 0 {
		o.PageSize = 512
	}
}

// OpenTasks reports how many tasks Run keeps open for s under o, and
// whether that is the model window (true) or the CPU workers (false).
func OpenTasks(s Stage, o Options) (n int, model bool) {
	o.defaults()
	if ms, ok := s.(ModelStage); ok {
		if w := ms.ModelWindow(); w > 0 {
			if o.Window > 0 {
				w = o.Window
			}
			return w, true
		}
	}
	return o.Workers, false
}

// Summary says what a run of the engine did.
type Summary struct {
	Planned  int64 // tasks that were pending when the run started
	Done     int64 // tasks committed as done
	Failed   int64 // tasks committed with a failed unit
	Units    int64
	Stopped  bool // the run was stopped before every pending task ran
	Previous int64
	// Deferred counts tasks left pending because a unit's request went to
	// a batch (llm.ErrDeferred): run the stage again once the batches'
	// answers are imported.
	Deferred int64
	// StopReason is the graceful stop error (see Options.Graceful), if any.
	StopReason error
}

// Pending counts the tasks of s not yet recorded, done or failed, and those
// already recorded, over the conversations of its scope, without running
// anything.
func Pending(ctx context.Context, l *ledger.Ledger, s Stage) (pending, recorded int64, err error) {
	return PendingIn(ctx, l, s, ledger.AllOrigins)
}

// PendingIn is Pending with the stage's scope narrowed by on, as
// Options.Scope narrows it for Run.
func PendingIn(ctx context.Context, l *ledger.Ledger, s Stage, on ledger.Scope) (pending, recorded int64, err error) {
	scope, err := StageScope(s, on)
	if err != nil {
		return 0, 0, err
	}
	v := l.In(scope)
	n, err := v.CountConversations(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, vr := range s.Variants() {
		done, failed, err := v.TaskCounts(ctx, s.Name(), ledger.Variant(vr))
		if err != nil {
			return 0, 0, err
		}
		recorded += done + failed
		pending += n - done - failed
	}
	return pending, recorded, nil
}

// Run runs every pending task of stage s over the conversations in l and
// returns when all are committed, when Stop is closed and in-flight work is
// committed, or when ctx is cancelled. An error returned by the stage, or a
// panic in it, stops the run: units in flight are abandoned and stay
// pending, and work finished before it is still committed.
//
// A CPU-bound stage runs Options.Workers tasks at once; a model-backed one
// (ModelStage) keeps Options.Window tasks open. A ChainStage's Chain is
// called for one task at a time, in ingest order.
//
// It runs over the conversations of the stage's scope (StageScope of s and
// Options.Scope), which it records for status, unless Options.Plan says
// Begin has just done so.
func Run(ctx context.Context, l *ledger.Ledger, s Stage, opts Options) (Summary, error) {
	opts.defaults()
	var sum Summary
	p := opts.Plan
	if p == nil {
		scope, err := StageScope(s, opts.Scope)
		if err != nil {
			return sum, err
		}
		if err := recordScope(ctx, l, s.Name(), scope); err != nil {
			return sum, err
		}
		p = &Plan{Scope: scope}
		if p.Pending, p.Recorded, err = PendingIn(ctx, l, s, scope); err != nil {
			return sum, err
		}
	}
	scope := p.Scope
	sum.Planned, sum.Previous = p.Pending, p.Recorded
	if sum.Planned == 0 {
		return sum, nil
	}
	width, model := OpenTasks(s, opts)

	// work is cancelled by the caller's ctx or by a stage error; planning
	// also stops on Stop.
	work, cancelWork := context.WithCancelCause(ctx)
	defer cancelWork(nil)

	// A graceful stop cancels halting, whose cause is the stop's reason;
	// the first one wins. stopping merges it with opts.Stop and a stage
	// error: once it is closed nothing new starts, neither a task nor a
	// unit.
	halting, haltWith := context.WithCancelCause(context.WithoutCancel(ctx))
	defer haltWith(nil)
	halt := halting.Done()
	stopping := make(chan struct{})
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		defer close(stopping)
		select {
		case <-opts.Stop:
		case <-halt:
		case <-work.Done():
		case <-finished:
		}
	}()
	rs := &runState{stop: stopping, signals: []<-chan struct{}{opts.Stop, halt, work.Done()}}
	if model {
		rs.slots = make(chan struct{}, width)
	}

	// stageErr is the first error that stops the run. A panic is a bug and
	// is always reported; any other error is, unless the run was already
	// cancelled (then it is only the echo of the cancellation).
	var stageErr atomic.Pointer[error]
	fail := func(err error) {
		var pe *PanicError
		if errors.As(err, &pe) || work.Err() == nil {
			stageErr.CompareAndSwap(nil, &err)
			cancelWork(err)
		}
	}
	graceful := func(err error) bool {
		var pe *PanicError
		if errors.As(err, &pe) || opts.Graceful == nil || !opts.Graceful(err) {
			return false
		}
		haltWith(err)
		return true
	}
	rs.graceful = func(err error) { graceful(err) }
	var deferred atomic.Int64
	// settle decides what a task's error means.
	settle := func(err error) {
		var pe *PanicError
		switch {
		case errors.As(err, &pe):
			fail(err)
		case errors.Is(err, ErrStopped):
			// Stopped between units: the task stays pending.
		case errors.Is(err, llm.ErrDeferred):
			// A request waits for a batch: the task stays pending and the
			// run goes on.
			deferred.Add(1)
		case graceful(err):
		default:
			// Abandoned: nothing recorded, the task stays pending.
			fail(err)
		}
	}

	// Memory is bounded by the window: width tasks queued, width running,
	// width results waiting for a commit.
	tasks := make(chan Task, width)
	results := make(chan []ledger.TaskResult, width)

	var wg conc.WaitGroup
	var planErr error
	wg.Go(func() {
		defer close(tasks)
		planErr = catch(func() error { return plan(work, l, scope, s, opts, rs, halt, tasks) })
	})

	// Tasks run in a pool of width goroutines. A ChainStage's Chain is
	// called here, one task at a time in ingest order, and its rest runs
	// in the pool; the pool's Go blocks while every goroutine is busy, so
	// the chain never runs ahead of the tasks it feeds.
	wg.Go(func() {
		defer close(results)
		tasksPool := pool.New().WithMaxGoroutines(width)
		defer tasksPool.Wait()
		cs, chained := s.(ChainStage)
		for t := range tasks {
			if rs.stopped() {
				continue // stopping: queued tasks that have not started stay pending
			}
			j := job{t: t}
			if chained {
				err := catch(func() error {
					var err error
					j.rest, err = cs.Chain(work, t)
					return err
				})
				if err != nil {
					settle(fmt.Errorf("processing %s of conversation %s: %w", s.Name(), t.Conv.ID, err))
					continue
				}
			}
			tasksPool.Go(func() {
				if rs.stopped() {
					return // stopping: the task has not started and stays pending
				}
				res, err := runTask(work, s, j)
				if err != nil {
					settle(err)
					return
				}
				results <- res
			})
		}
	})

	commitErr := commitLoop(ctx, l, opts, results, &sum)
	if commitErr != nil {
		cancelWork(commitErr)
		for range results { // let the tasks finish
		}
	}
	wg.Wait()

	haltErr := context.Cause(halting)
	if halting.Err() == nil {
		haltErr = nil
	}
	if err := stageErr.Load(); err != nil {
		return sum, fmt.Errorf("running %s: %w", s.Name(), *err)
	}
	if commitErr != nil {
		return sum, commitErr
	}
	if planErr != nil && !errors.Is(planErr, context.Canceled) && !errors.Is(planErr, ErrStopped) {
		return sum, fmt.Errorf("planning %s: %w", s.Name(), planErr)
	}
	sum.Deferred = deferred.Load()
	sum.Stopped = sum.Done+sum.Failed+sum.Deferred < sum.Planned
	sum.StopReason = haltErr
	return sum, nil
}

// job is a task ready to run: rest is the part a ChainStage's Chain
// returned, nil for a plain Process call.
type job struct {
	t    Task
	rest func(context.Context) ([]Result, error)
}

// closed reports whether c is closed (a nil channel never is).
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func plan(ctx context.Context, l *ledger.Ledger, scope ledger.Scope, s Stage, opts Options, rs *runState, halt <-chan struct{}, out chan<- Task) error {
	retry, err := l.RetryGeneration(ctx, s.Name())
	if err != nil {
		return err
	}
	variants := s.Variants()
	lv := make([]ledger.Variant, len(variants))
	for i, v := range variants {
		lv[i] = ledger.Variant(v)
	}
	_, chained := s.(ChainStage)
	return l.In(scope).EachPending(ctx, s.Name(), lv, opts.PageSize, func(page []ledger.Pending) error {
		if !chained {
			// Longest conversations first within a page: a run then ends
			// on short tasks, and the window drains in about one unit's
			// time instead of one long conversation's. A chain must keep
			// ingest order. Results are keyed, so the order shows nowhere.
			page = slices.Clone(page)
			slices.SortStableFunc(page, func(a, b ledger.Pending) int {
				return cmp.Compare(len(b.Conv.Messages), len(a.Conv.Messages))
			})
		}
		for _, p := range page {
			pending := make([]Variant, len(p.Variants))
			for i, v := range p.Variants {
				pending[i] = Variant(v)
			}
			// Checked before the send too: select picks at random among
			// ready cases, and a stop must win over free buffer space.
			if rs.stopped() {
				return ErrStopped
			}
			select {
			case out <- Task{Seq: p.Seq, Conv: p.Conv, Origin: p.Origin, Parent: p.Parent, Variants: pending, Retry: retry, run: rs}:
			case <-ctx.Done():
				return ctx.Err()
			case <-opts.Stop:
				return ErrStopped
			case <-halt:
				return ErrStopped
			}
		}
		return nil
	})
}

// runTask runs one job and checks that it answered for exactly the variants
// asked. A panic in the stage comes back as a *PanicError.
func runTask(ctx context.Context, s Stage, j job) ([]ledger.TaskResult, error) {
	t := j.t
	var results []Result
	err := catch(func() error {
		var err error
		if j.rest != nil {
			results, err = j.rest(ctx)
		} else {
			results, err = s.Process(ctx, t)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("processing %s of conversation %s: %w", s.Name(), t.Conv.ID, err)
	}
	want := map[Variant]bool{}
	for _, v := range t.Variants {
		want[v] = true
	}
	out := make([]ledger.TaskResult, 0, len(results))
	for _, r := range results {
		if !want[r.Variant] {
			return nil, fmt.Errorf("processing %s of conversation %s: the stage returned variant %s@%s, which was not asked for", s.Name(), t.Conv.ID, r.Variant.Name, r.Variant.Version)
		}
		delete(want, r.Variant)
		out = append(out, taskResult(s, t, r.Variant, r.Units))
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("processing %s of conversation %s: the stage returned %d of %d variants", s.Name(), t.Conv.ID, len(results), len(t.Variants))
	}
	return out, nil
}

func taskResult(s Stage, t Task, v Variant, units []Unit) ledger.TaskResult {
	res := ledger.TaskResult{
		TaskID:   ledger.TaskID{Stage: s.Name(), Variant: v.Name, Version: v.Version, ConvSeq: t.Seq},
		ConvID:   t.Conv.ID,
		Status:   ledger.Done,
		Attempts: 1,
		Units:    make([]ledger.UnitResult, len(units)),
	}
	for i, u := range units {
		st := ledger.Done
		if u.Failed {
			st = ledger.Failed
			res.Status = ledger.Failed
			if res.Error == "" {
				res.Error = fmt.Sprintf("turn %d: %s", u.Turn, u.Error)
			}
		}
		att := u.Attempts
		if att == 0 {
			att = 1
		}
		res.Units[i] = ledger.UnitResult{Turn: u.Turn, Status: st, Attempts: att, Error: u.Error, Raw: u.Raw, Output: u.Output, Tokens: u.Tokens}
	}
	return res
}

// commitLoop stores results in batches until results is closed. It uses a
// context that outlives a second Ctrl-C for the final flush, so finished work
// is never thrown away.
func commitLoop(ctx context.Context, l *ledger.Ledger, opts Options, results <-chan []ledger.TaskResult, sum *Summary) error {
	flushCtx := context.WithoutCancel(ctx)
	batch := make([]ledger.TaskResult, 0, opts.BatchSize)
	bytes := 0
	timer := time.NewTimer(opts.BatchWait)
	defer timer.Stop()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := l.CommitTasks(flushCtx, batch); err != nil {
			return err
		}
		var units, failed int
		var tokens int64
		for _, r := range batch {
			units += len(r.Units)
			if r.Status == ledger.Failed {
				sum.Failed++
				failed++
			} else {
				sum.Done++
			}
			for _, u := range r.Units {
				tokens += u.Tokens
			}
		}
		sum.Units += int64(units)
		if opts.OnCommit != nil {
			if err := catch(func() error { opts.OnCommit(len(batch), units, failed, tokens); return nil }); err != nil {
				return err
			}
		}
		// Cleared, not just cut: a short batch (a timer's flush) would
		// otherwise keep a longer one's outputs reachable from the tail.
		clear(batch)
		batch, bytes = batch[:0], 0
		return nil
	}
	for {
		select {
		case r, ok := <-results:
			if !ok {
				return flush()
			}
			batch = append(batch, r...)
			for _, t := range r {
				bytes += t.Size()
			}
			if len(batch) >= opts.BatchSize || bytes >= opts.BatchBytes {
				if err := flush(); err != nil {
					return err
				}
			}
		case <-timer.C:
			if err := flush(); err != nil {
				return err
			}
			timer.Reset(opts.BatchWait)
		}
	}
}
