package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sourcegraph/conc/panics"
	"github.com/sourcegraph/conc/pool"

	"github.com/ac3/ac3/pipeline/llm"
)

// ErrStopped is what Task.Each returns when the run stopped taking new work
// (Options.Stop closed, or a graceful stop) before every unit started. The
// units that ran have finished and their calls are cached, but the task is
// incomplete: Run leaves it pending, and the next run redoes it from the
// cache without paying again.
var ErrStopped = errors.New("the run is stopping; the task's remaining units were not started")

// PanicError is a panic caught in a stage's Process (or any goroutine the
// engine runs for a stage), turned into the error that stops the run. Value
// is what was passed to panic and Stack the panicking goroutine's stack, so
// the bug can be found from the log alone.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// catch runs f and turns a panic in it into a *PanicError.
func catch(f func() error) (err error) {
	var pc panics.Catcher
	pc.Try(func() { err = f() })
	if r := pc.Recovered(); r != nil {
		return &PanicError{Value: r.Value, Stack: r.Stack}
	}
	return err
}

// runState is what the tasks of one Run share: the window of model units
// and the signal to stop starting new ones.
type runState struct {
	// slots holds one token per unit in flight; nil for a CPU-bound stage,
	// whose tasks are bounded by the workers alone.
	slots chan struct{}
	// stop is closed when the run stops taking new work, shortly after
	// any of signals is; stopped checks signals too, so a unit that starts
	// right after a stop never slips through the gap.
	stop    <-chan struct{}
	signals []<-chan struct{}
	// graceful is called with a unit's error as soon as it returns; it
	// stops the run at once when the error is a graceful stop (a budget
	// refusal), instead of when the unit's task has finished.
	graceful func(error)
}

// unitFailed passes a unit's error to graceful.
func (r *runState) unitFailed(err error) {
	if r != nil && r.graceful != nil {
		r.graceful(err)
	}
}

// stopped reports whether the run stopped taking new work.
func (r *runState) stopped() bool {
	if closed(r.stop) {
		return true
	}
	for _, c := range r.signals {
		if closed(c) {
			return true
		}
	}
	return false
}

// acquire takes a unit slot. It fails with ErrStopped once the run stops
// (a stop wins over a free slot) and with ctx's error when ctx ends.
func (r *runState) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r == nil {
		return nil
	}
	if r.stopped() {
		return ErrStopped
	}
	if r.slots == nil {
		return nil
	}
	select {
	case r.slots <- struct{}{}:
		if r.stopped() {
			<-r.slots
			return ErrStopped
		}
		return nil
	case <-r.stop:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *runState) release() {
	if r != nil && r.slots != nil {
		<-r.slots
	}
}

// Each runs fn(ctx, i) for the units i = 0 … n-1 of t, at most limit at a
// time (limit 1: one after another, in order, in the calling goroutine;
// limit <= 0: no bound but the run's). Model-backed stages run their units
// through it; within Run every unit of every task holds one slot of the
// model window while fn runs, so the units in flight across the run never
// exceed Options.Window.
//
// Each blocks until every unit it started has returned. Once fn fails, or
// the run stops taking new work, or ctx ends, no further unit starts, but
// the units already running are not cancelled: a model call in flight is
// paid for, and finishing it puts its answer in the cache. Each then returns
// the error of the lowest-numbered failed unit; else, when units were left
// unstarted, ErrStopped or ctx's error; else nil. A panic in fn is returned
// as a *PanicError. fn must not call Each.
func (t Task) Each(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if n <= 0 {
		return nil
	}
	if limit <= 0 || limit > n {
		limit = n
	}
	if limit == 1 {
		// In order: a unit may depend on the one before, so a deferred
		// unit ends the task's pass here.
		for i := range n {
			if err := t.run.acquire(ctx); err != nil {
				return err
			}
			err := catch(func() error { return fn(ctx, i) })
			t.run.release()
			if err != nil {
				t.run.unitFailed(err)
				return err
			}
		}
		return nil
	}
	// The units run in a pool of limit goroutines. The dispatcher takes a
	// turn (sem) before it decides whether the next unit starts, so the
	// decision is made in order, after the units before it began: once a
	// unit fails or the run stops, no further unit starts, and a started
	// unit always runs, so the lowest-numbered error is the same each time.
	errs := make([]error, n)
	var stopErr error
	var failed atomic.Bool
	sem := make(chan struct{}, limit)
	units := pool.New() // sem bounds it to limit
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			stopErr = ctx.Err()
		}
		if stopErr != nil {
			break
		}
		if failed.Load() {
			<-sem
			break
		}
		if err := t.run.acquire(ctx); err != nil {
			<-sem
			stopErr = err
			break
		}
		units.Go(func() {
			defer func() {
				t.run.release()
				<-sem
			}()
			if err := catch(func() error { return fn(ctx, i) }); err != nil {
				errs[i] = err
				// A unit deferred to a batch does not stop the others:
				// the whole task's requests go into the same batch.
				if !errors.Is(err, llm.ErrDeferred) {
					failed.Store(true)
				}
				t.run.unitFailed(err)
			}
		})
	}
	units.Wait()
	var deferred error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, llm.ErrDeferred):
			if deferred == nil {
				deferred = err
			}
		default:
			return err
		}
	}
	if deferred != nil {
		return deferred
	}
	return stopErr
}
