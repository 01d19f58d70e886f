package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/ac3/ac3/pipeline/ledger"
)

// Options tune a run of the engine.
type Options struct {
	// Workers bounds how many tasks run at once (default 2).
	Workers int
	// BatchSize and BatchWait bound how many finished tasks wait for a
	// commit and for how long (defaults 256 and 500ms).
	BatchSize int
	BatchWait time.Duration
	// PageSize is how many conversations are planned per ledger read.
	PageSize int
	// Stop, when closed, stops planning new tasks; in-flight tasks finish.
	Stop <-chan struct{}
	// Graceful reports whether a stage error means "stop taking new work"
	// rather than "the run failed" (a spending cap reached): the task is
	// left pending, in-flight tasks finish, and Run returns the error in
	// Summary.StopReason instead of failing.
	Graceful func(error) bool
	// OnCommit is called after each commit with the tasks and units stored
	// and the sum of their token counts.
	OnCommit func(tasks, units int, failed int, tokens int64)
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.BatchWait <= 0 {
		o.BatchWait = 500 * time.Millisecond
	}
	if o.PageSize <= 0 {
		o.PageSize = 512
	}
}

// Summary says what a run of the engine did.
type Summary struct {
	Planned  int64 // tasks that were pending when the run started
	Done     int64 // tasks committed as done
	Failed   int64 // tasks committed with a failed unit
	Units    int64
	Stopped  bool // the run was stopped before every pending task ran
	Previous int64
	// StopReason is the graceful stop error (see Options.Graceful), if any.
	StopReason error
}

// Pending counts the tasks of s not yet recorded, done or failed, and those
// already recorded, without running anything.
func Pending(ctx context.Context, l *ledger.Ledger, s Stage) (pending, recorded int64, err error) {
	n, err := l.CountConversations(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, v := range s.Variants() {
		done, failed, err := l.TaskCounts(ctx, s.Name(), ledger.Variant(v))
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
// committed, or when ctx is cancelled. An error returned by the stage stops
// the run; work finished before it is still committed.
func Run(ctx context.Context, l *ledger.Ledger, s Stage, opts Options) (Summary, error) {
	opts.defaults()
	var sum Summary
	var err error
	sum.Planned, sum.Previous, err = Pending(ctx, l, s)
	if err != nil {
		return sum, err
	}
	if sum.Planned == 0 {
		return sum, nil
	}

	// work is cancelled by the caller's ctx or by a stage error; planning
	// also stops on Stop.
	work, cancelWork := context.WithCancelCause(ctx)
	defer cancelWork(nil)

	// A graceful stop closes halt; planning watches it beside opts.Stop.
	halt := make(chan struct{})
	var haltOnce sync.Once
	var haltErr error

	tasks := make(chan Task, opts.Workers*2)
	results := make(chan []ledger.TaskResult, opts.Workers*2)

	var wg conc.WaitGroup
	var planErr error
	wg.Go(func() {
		defer close(tasks)
		planErr = plan(work, l, s, opts, halt, tasks)
	})

	var workers conc.WaitGroup
	var stageErrOnce sync.Once
	var stageErr error
	for range opts.Workers {
		workers.Go(func() {
			for t := range tasks {
				if work.Err() != nil {
					continue // drain: nothing new starts once the run is cancelled
				}
				if closed(halt) || closed(opts.Stop) {
					continue // stopping: queued tasks that have not started stay pending
				}
				res, err := runTask(work, s, t)
				if err != nil && opts.Graceful != nil && opts.Graceful(err) {
					haltOnce.Do(func() { haltErr = err; close(halt) })
					continue
				}
				if err != nil {
					if work.Err() == nil {
						stageErrOnce.Do(func() { stageErr = err })
						cancelWork(err)
					}
					// Abandoned: nothing recorded, the task stays pending.
					continue
				}
				results <- res
			}
		})
	}
	wg.Go(func() {
		workers.Wait()
		close(results)
	})

	commitErr := commitLoop(ctx, l, opts, results, &sum)
	if commitErr != nil {
		cancelWork(commitErr)
		for range results { // let the workers finish
		}
	}
	wg.Wait()

	if stageErr != nil {
		return sum, fmt.Errorf("running %s: %w", s.Name(), stageErr)
	}
	if commitErr != nil {
		return sum, commitErr
	}
	if planErr != nil && !errors.Is(planErr, context.Canceled) && !errors.Is(planErr, errStopped) {
		return sum, planErr
	}
	sum.Stopped = sum.Done+sum.Failed < sum.Planned
	sum.StopReason = haltErr
	return sum, nil
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

var errStopped = errors.New("stopped")

func plan(ctx context.Context, l *ledger.Ledger, s Stage, opts Options, halt <-chan struct{}, out chan<- Task) error {
	retry, err := l.RetryGeneration(ctx, s.Name())
	if err != nil {
		return err
	}
	variants := s.Variants()
	lv := make([]ledger.Variant, len(variants))
	for i, v := range variants {
		lv[i] = ledger.Variant(v)
	}
	return l.EachPending(ctx, s.Name(), lv, opts.PageSize, func(page []ledger.Pending) error {
		for _, p := range page {
			pending := make([]Variant, len(p.Variants))
			for i, v := range p.Variants {
				pending[i] = Variant(v)
			}
			// Checked before the send too: select picks at random among
			// ready cases, and a stop must win over free buffer space.
			if closed(opts.Stop) || closed(halt) {
				return errStopped
			}
			select {
			case out <- Task{Seq: p.Seq, Conv: p.Conv, Variants: pending, Retry: retry}:
			case <-ctx.Done():
				return ctx.Err()
			case <-opts.Stop:
				return errStopped
			case <-halt:
				return errStopped
			}
		}
		return nil
	})
}

func runTask(ctx context.Context, s Stage, t Task) ([]ledger.TaskResult, error) {
	results, err := s.Process(ctx, t)
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
			opts.OnCommit(len(batch), units, failed, tokens)
		}
		batch = batch[:0]
		return nil
	}
	for {
		select {
		case r, ok := <-results:
			if !ok {
				return flush()
			}
			batch = append(batch, r...)
			if len(batch) >= opts.BatchSize {
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
