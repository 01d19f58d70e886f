package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
)

type countStage struct {
	variants []pipeline.Variant
	calls    atomic.Int64
	failOn   string // conversation id whose units fail
	fatalOn  string // conversation id that stops the run
	block    chan struct{}
}

func (s *countStage) Name() string                 { return "count" }
func (s *countStage) Variants() []pipeline.Variant { return s.variants }
func (s *countStage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	var out []pipeline.Result
	for _, v := range t.Variants {
		units, err := s.one(ctx, t, v)
		if err != nil {
			return nil, err
		}
		out = append(out, pipeline.Result{Variant: v, Units: units})
	}
	return out, nil
}

func (s *countStage) one(ctx context.Context, t pipeline.Task, v pipeline.Variant) ([]pipeline.Unit, error) {
	s.calls.Add(1)
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if t.Conv.ID == s.fatalOn {
		return nil, errors.New("bad key")
	}
	var out []pipeline.Unit
	for _, tr := range t.Conv.Turns() {
		u := pipeline.Unit{Turn: tr.Index, Output: []byte(v.Name), Tokens: 1}
		if t.Conv.ID == s.failOn {
			u.Failed, u.Error = true, "malformed"
		}
		out = append(out, u)
	}
	return out, nil
}

func seed(tb testing.TB, n int) *ledger.Ledger {
	tb.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(tb.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	in, err := l.AddInput(ctx, ledger.Input{Path: "/in", Format: "openai"})
	if err != nil {
		tb.Fatal(err)
	}
	var convs []*conv.Conversation
	for i := range n {
		convs = append(convs, &conv.Conversation{ID: fmt.Sprintf("c%03d", i), Messages: []conv.Message{
			{Role: conv.User, Content: fmt.Sprint("q", i)}, {Role: conv.Assistant, Content: "a"},
			{Role: conv.User, Content: "again"},
		}})
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: convs}); err != nil {
		tb.Fatal(err)
	}
	return l
}

func TestRunDoesEachTaskOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 50)
	s := &countStage{variants: []pipeline.Variant{{Name: "a", Version: "1"}, {Name: "b", Version: "1"}}, failOn: "c007"}
	sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Workers: 3, BatchSize: 7, PageSize: 9})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Planned != 100 || sum.Done != 98 || sum.Failed != 2 || sum.Units != 200 || s.calls.Load() != 100 {
		t.Fatalf("summary = %+v, calls = %d", sum, s.calls.Load())
	}
	// A second run has nothing to do, failed tasks included.
	sum, err = pipeline.Run(ctx, l, s, pipeline.Options{})
	if err != nil || sum.Planned != 0 || s.calls.Load() != 100 {
		t.Fatalf("rerun = %+v %v, calls = %d", sum, err, s.calls.Load())
	}
	// A new version of one variant redoes only that variant.
	s.variants[1].Version = "2"
	sum, err = pipeline.Run(ctx, l, s, pipeline.Options{})
	if err != nil || sum.Planned != 50 || s.calls.Load() != 150 {
		t.Fatalf("after version change = %+v %v, calls = %d", sum, err, s.calls.Load())
	}
}

// Finished tasks are committed once their outputs reach BatchBytes, however
// few they are and however long the batch could still wait.
func TestRunCommitsByBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 30)
	s := &countStage{variants: []pipeline.Variant{{Name: "a", Version: "1"}, {Name: "b", Version: "1"}}}
	var commits, most int
	sum, err := pipeline.Run(ctx, l, s, pipeline.Options{
		Workers: 1, BatchSize: 1000, BatchBytes: 1, BatchWait: time.Hour,
		OnCommit: func(tasks, _, _ int, _ int64) { commits++; most = max(most, tasks) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 60 {
		t.Fatalf("summary = %+v", sum)
	}
	// One conversation's tasks arrive together: a and b.
	if most > 2 || commits < 30 {
		t.Errorf("%d commits of at most %d tasks, want one commit per conversation", commits, most)
	}
}

func TestRunStopsOnStageError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 40)
	s := &countStage{variants: []pipeline.Variant{{Name: "a", Version: "1"}}, fatalOn: "c010"}
	sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Workers: 1, BatchSize: 1})
	if err == nil {
		t.Fatal("run did not stop")
	}
	if sum.Done != 10 {
		t.Fatalf("done before the error = %d, want 10", sum.Done)
	}
	// The work before the error is kept; the rest is pending.
	d, _, _ := l.TaskCounts(ctx, "count", ledger.Variant{Name: "a", Version: "1"})
	if d != 10 {
		t.Fatalf("committed = %d", d)
	}
}

func TestRunGracefulStopKeepsInFlightWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 40)
	s := &countStage{variants: []pipeline.Variant{{Name: "a", Version: "1"}}, block: make(chan struct{})}
	stop := make(chan struct{})
	done := make(chan pipeline.Summary)
	go func() {
		sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Workers: 2, Stop: stop})
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	for s.calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	close(s.block)
	sum := <-done
	if !sum.Stopped || sum.Done == 0 || sum.Done == 40 {
		t.Fatalf("summary = %+v", sum)
	}
	d, _, _ := l.TaskCounts(ctx, "count", ledger.Variant{Name: "a", Version: "1"})
	if d != sum.Done || s.calls.Load() != d {
		t.Fatalf("committed %d, summary %d, calls %d", d, sum.Done, s.calls.Load())
	}
}

func TestRunCancelAbandonsInFlight(t *testing.T) {
	l := seed(t, 10)
	s := &countStage{variants: []pipeline.Variant{{Name: "a", Version: "1"}}, block: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for s.calls.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 0 || !sum.Stopped {
		t.Fatalf("summary = %+v", sum)
	}
}

var errCap = errors.New("budget reached")

type capStage struct {
	countStage
	allow int64
}

func (s *capStage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	if s.calls.Load() >= s.allow {
		return nil, errCap
	}
	return s.countStage.Process(ctx, t)
}

func TestRunGracefulErrorLeavesRestPending(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 30)
	s := &capStage{countStage: countStage{variants: []pipeline.Variant{{Name: "a", Version: "1"}}}, allow: 12}
	sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Workers: 1, Graceful: func(err error) bool { return errors.Is(err, errCap) }})
	if err != nil {
		t.Fatalf("graceful stop returned an error: %v", err)
	}
	if !sum.Stopped || !errors.Is(sum.StopReason, errCap) || sum.Done != 12 {
		t.Fatalf("summary = %+v", sum)
	}
	pending, _, _ := pipeline.Pending(ctx, l, s)
	if pending != 18 {
		t.Fatalf("pending after the cap = %d, want 18", pending)
	}
}

// unitStage is a model-backed stage whose units go through Task.Each, one
// per user turn. hook, when set, runs inside each unit before it finishes.
type unitStage struct {
	window int
	limit  int // Each's per-task limit
	hook   func(ctx context.Context, t pipeline.Task, turn int) error
	calls  atomic.Int64 // units started
	ended  atomic.Int64 // units that returned
}

func (s *unitStage) Name() string { return "units" }
func (s *unitStage) Variants() []pipeline.Variant {
	return []pipeline.Variant{{Name: "m", Version: "1"}}
}
func (s *unitStage) ModelWindow() int { return s.window }
func (s *unitStage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	turns := t.Conv.Turns()
	units := make([]pipeline.Unit, len(turns))
	err := t.Each(ctx, len(turns), s.limit, func(ctx context.Context, i int) error {
		s.calls.Add(1)
		defer s.ended.Add(1)
		if s.hook != nil {
			if err := s.hook(ctx, t, turns[i].Index); err != nil {
				return err
			}
		}
		units[i] = pipeline.Unit{Turn: turns[i].Index, Output: []byte(fmt.Sprintf("%s/%d", t.Conv.ID, turns[i].Index)), Tokens: 1}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("answering %s: %w", t.Conv.ID, err)
	}
	return []pipeline.Result{{Variant: t.Variants[0], Units: units}}, nil
}

// gauge counts units in flight and remembers the most at once.
type gauge struct {
	mu       sync.Mutex
	now, top int
	reached  chan struct{} // closed when now first reaches at
	at       int
}

func newGauge(at int) *gauge { return &gauge{reached: make(chan struct{}), at: at} }

func (g *gauge) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now++
	g.top = max(g.top, g.now)
	if g.now == g.at {
		select {
		case <-g.reached:
		default:
			close(g.reached)
		}
	}
}

func (g *gauge) leave() {
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
}

func (g *gauge) max() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.top
}

// waitFor fails the test if c is not closed before ctx ends.
func waitFor(t *testing.T, ctx context.Context, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestRunPanicBecomesAnErrorAndKeepsFinishedWork(t *testing.T) {
	tests := []struct {
		name  string
		stage func(panicOn string) pipeline.Stage
	}{
		{"in Process of a CPU-bound stage", func(on string) pipeline.Stage {
			return &panicStage{countStage: countStage{variants: []pipeline.Variant{{Name: "a", Version: "1"}}}, on: on}
		}},
		{"in a unit of a model-backed stage", func(on string) pipeline.Stage {
			return &unitStage{window: 4, hook: func(_ context.Context, t pipeline.Task, turn int) error {
				if t.Conv.ID == on && turn == 2 {
					var m map[string]int
					m["boom"]++ // a nil map write: a real runtime panic
				}
				return nil
			}}
		}},
		{"in the Chain of a chain stage", func(on string) pipeline.Stage {
			return &chainStage{unitStage: unitStage{window: 4}, panicOn: on}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l := seed(t, 40)
			s := tc.stage("c020")
			sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Workers: 2, BatchSize: 1})
			if ctx.Err() != nil {
				t.Fatal("the run hung after a panic")
			}
			var pe *pipeline.PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *PanicError", err)
			}
			if pe.Value == nil || !strings.Contains(string(pe.Stack), "engine_test.go") || !strings.Contains(err.Error(), "goroutine") {
				t.Errorf("the error lacks the panic value or its stack: %v", err)
			}
			// What finished before the panic is committed; the panicking
			// conversation and the rest stay pending.
			v := s.Variants()[0]
			done, failed, _ := l.TaskCounts(ctx, s.Name(), ledger.Variant(v))
			if done != sum.Done || failed != 0 || done >= 40 {
				t.Errorf("committed %d done %d failed, summary %+v", done, failed, sum)
			}
			pending, _, _ := pipeline.Pending(ctx, l, s)
			if pending != 40-done {
				t.Errorf("pending = %d, want %d", pending, 40-done)
			}
		})
	}
}

type panicStage struct {
	countStage
	on string
}

func (s *panicStage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	if t.Conv.ID == s.on {
		panic(fmt.Sprintf("bug on %s", t.Conv.ID))
	}
	return s.countStage.Process(ctx, t)
}

func TestRunPanicInOnCommitDoesNotHang(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 20)
	s := &unitStage{window: 4}
	_, err := pipeline.Run(ctx, l, s, pipeline.Options{BatchSize: 1, OnCommit: func(int, int, int, int64) { panic("progress meter bug") }})
	var pe *pipeline.PanicError
	if ctx.Err() != nil || !errors.As(err, &pe) {
		t.Fatalf("err = %v (ctx %v), want a *PanicError", err, ctx.Err())
	}
	// The first batch was stored before its callback panicked.
	if d, _, _ := l.TaskCounts(ctx, "units", ledger.Variant{Name: "m", Version: "1"}); d != 1 {
		t.Errorf("committed %d, want 1", d)
	}
}

// chainStage moves a chain through its tasks in ingest order; rest is the
// unitStage's Process. With hold set, the rest of each of the first tasks
// waits until Chain has been called for a later task: a run whose chain
// waited for the rest of the task before it would never finish.
type chainStage struct {
	unitStage
	panicOn string
	hold    int

	mu      sync.Mutex
	order   []int64 // seqs in the order Chain saw them
	inChain bool
	overlap bool          // Chain ran while another Chain call was running
	moved   chan struct{} // closed and replaced at every Chain call
}

func (s *chainStage) Chain(ctx context.Context, t pipeline.Task) (func(context.Context) ([]pipeline.Result, error), error) {
	s.mu.Lock()
	if s.inChain {
		s.overlap = true
	}
	s.inChain = true
	s.order = append(s.order, t.Seq)
	hold := len(s.order) <= s.hold
	if s.moved != nil {
		close(s.moved)
	}
	s.moved = make(chan struct{})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inChain = false
		s.mu.Unlock()
	}()
	if t.Conv.ID == s.panicOn {
		panic("chain bug")
	}
	return func(ctx context.Context) ([]pipeline.Result, error) {
		for hold {
			s.mu.Lock()
			later := s.order[len(s.order)-1] > t.Seq
			moved := s.moved
			s.mu.Unlock()
			if later {
				break
			}
			select {
			case <-moved:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return s.unitStage.Process(ctx, t)
	}, nil
}

func TestRunChainsInIngestOrderAndRunsTheRestAlongside(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 30)
	s := &chainStage{unitStage: unitStage{window: 4}, hold: 3}
	sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Workers: 1, PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 30 {
		t.Fatalf("summary = %+v", sum)
	}
	if s.overlap {
		t.Error("Chain was called for two tasks at once")
	}
	if !slices.IsSorted(s.order) || len(s.order) != 30 {
		t.Errorf("chain order = %v", s.order)
	}
}

// TestRunModelWindow checks both knobs: a model-backed stage has exactly
// Options.Window units in flight (not Workers), a CPU-bound one Workers
// tasks.
func TestRunModelWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name          string
		window, limit int
		opts          pipeline.Options
		want          int
	}{
		{"stage's own window", 6, 0, pipeline.Options{Workers: 1}, 6},
		{"window overridden", 6, 0, pipeline.Options{Workers: 1, Window: 9}, 9},
		{"one unit per task at a time", 6, 1, pipeline.Options{Workers: 1}, 6},
		{"no model call: workers", 0, 0, pipeline.Options{Workers: 3, Window: 9}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := seed(t, 40)
			g := newGauge(tc.want)
			s := &unitStage{window: tc.window, limit: tc.limit, hook: func(ctx context.Context, _ pipeline.Task, _ int) error {
				g.enter()
				defer g.leave()
				select { // hold every unit until the window is full once
				case <-g.reached:
				case <-ctx.Done():
				}
				return ctx.Err()
			}}
			if tc.window == 0 {
				// Tasks, not units, are what workers bound: count tasks.
				s.limit = 1
			}
			if n, _ := pipeline.OpenTasks(s, tc.opts); tc.window > 0 && n != tc.want {
				t.Errorf("OpenTasks = %d, want %d", n, tc.want)
			}
			sum, err := pipeline.Run(ctx, l, s, tc.opts)
			if err != nil || sum.Done != 40 {
				t.Fatalf("summary %+v, %v", sum, err)
			}
			if got := g.max(); got != tc.want {
				t.Errorf("at most %d units in flight, want %d", got, tc.want)
			}
		})
	}
}

// TestRunStopWithWindow: on Stop, units in flight finish, no unit starts
// after it, tasks whose units all ran are committed and the others stay
// pending; the next run finishes the work.
func TestRunStopWithWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 50)
	const window = 5
	g := newGauge(window)
	release := make(chan struct{})
	var afterStop atomic.Int64
	stop := make(chan struct{})
	s := &unitStage{window: window, hook: func(ctx context.Context, _ pipeline.Task, _ int) error {
		if closed(stop) {
			afterStop.Add(1)
		}
		g.enter()
		defer g.leave()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	}}
	done := make(chan pipeline.Summary)
	go func() {
		sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Stop: stop})
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	waitFor(t, ctx, g.reached, "the window to fill")
	close(stop)
	close(release)
	sum := <-done
	if afterStop.Load() != 0 || s.calls.Load() != window || s.ended.Load() != window {
		t.Errorf("units started %d, ended %d, after the stop %d; want %d, %d, 0", s.calls.Load(), s.ended.Load(), afterStop.Load(), window, window)
	}
	// Every seeded conversation has two user turns: at most two tasks had
	// both units in flight.
	if !sum.Stopped || sum.Done > window/2 {
		t.Errorf("summary = %+v", sum)
	}
	d, _, _ := l.TaskCounts(ctx, "units", ledger.Variant{Name: "m", Version: "1"})
	if d != sum.Done {
		t.Errorf("committed %d, summary says %d", d, sum.Done)
	}

	// Resume: the rest, nothing committed twice.
	s.hook = nil
	sum2, err := pipeline.Run(ctx, l, s, pipeline.Options{})
	if err != nil || sum2.Done != 50-sum.Done || sum2.Stopped {
		t.Fatalf("resume = %+v, %v", sum2, err)
	}
}

func TestRunCancelWithWindowAbandonsInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 30)
	g := newGauge(8)
	s := &unitStage{window: 8, hook: func(ctx context.Context, _ pipeline.Task, _ int) error {
		g.enter()
		defer g.leave()
		<-ctx.Done()
		return ctx.Err()
	}}
	runCtx, stopRun := context.WithCancel(ctx)
	go func() {
		<-g.reached
		stopRun()
	}()
	sum, err := pipeline.Run(runCtx, l, s, pipeline.Options{})
	if err != nil || ctx.Err() != nil {
		t.Fatalf("err = %v, ctx %v", err, ctx.Err())
	}
	if sum.Done != 0 || !sum.Stopped || s.calls.Load() != 8 {
		t.Fatalf("summary = %+v, units started %d", sum, s.calls.Load())
	}
}

// TestRunGracefulWithWindow: a budget error in one unit stops the run
// without failing it; every unit that started (a call in flight) finishes,
// and the tasks that did not complete stay pending.
func TestRunGracefulWithWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 40)
	const window = 6
	g := newGauge(window)
	s := &unitStage{window: window}
	s.hook = func(ctx context.Context, t pipeline.Task, turn int) error {
		n := s.calls.Load()
		g.enter()
		defer g.leave()
		select { // the window fills before anything returns
		case <-g.reached:
		case <-ctx.Done():
			return ctx.Err()
		}
		if n >= window {
			// Like llm.Budget: every call after the first window is refused.
			return errCap
		}
		return nil
	}
	sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Graceful: func(err error) bool { return errors.Is(err, errCap) }})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(sum.StopReason, errCap) || !sum.Stopped || sum.Done > window/2 {
		t.Fatalf("summary = %+v", sum)
	}
	// The stop reaches the other tasks once the refused task returns: at
	// most another window of units starts (and is refused) before it does.
	if s.ended.Load() != s.calls.Load() || s.calls.Load() > 2*window {
		t.Errorf("%d of %d units returned (at most %d may start)", s.ended.Load(), s.calls.Load(), 2*window)
	}
	pending, _, _ := pipeline.Pending(ctx, l, s)
	if pending != 40-sum.Done {
		t.Errorf("pending = %d, done %d", pending, sum.Done)
	}
}

// TestRunOutputDoesNotDependOnTheWindow: the units stored, read back in
// order, are the same whatever the window, though tasks finish in another
// order.
func TestRunOutputDoesNotDependOnTheWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want []string
	for _, w := range []int{1, 3, 16} {
		l := seed(t, 60)
		s := &unitStage{window: w, hook: func(_ context.Context, t pipeline.Task, turn int) error {
			// Later conversations finish first.
			var n int
			fmt.Sscanf(t.Conv.ID, "c%d", &n)
			for range (60 - n) * 50 {
				runtime.Gosched()
			}
			return nil
		}}
		if _, err := pipeline.Run(ctx, l, s, pipeline.Options{BatchSize: 5}); err != nil {
			t.Fatal(err)
		}
		var got []string
		err := l.Units(ctx, "units", []ledger.Variant{{Name: "m", Version: "1"}}, 0, 1<<62, func(u ledger.Unit) error {
			got = append(got, fmt.Sprintf("%s %d %s %s", u.ConvID, u.Turn, u.Key, u.Output))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Errorf("window %d stored other units", w)
		}
	}
	if len(want) != 120 {
		t.Fatalf("%d units", len(want))
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestRunDeferredUnitsLeaveTasksPending(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 10)
	// Odd conversations wait for a batch on every turn but the first.
	s := &unitStage{window: 4, limit: 0, hook: func(_ context.Context, tk pipeline.Task, turn int) error {
		if tk.Seq%2 == 1 && turn > 0 {
			return fmt.Errorf("turn %d: %w", turn, llm.ErrDeferred)
		}
		return nil
	}}
	sum, err := pipeline.Run(ctx, l, s, pipeline.Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if sum.Deferred != 5 || sum.Done != 5 || sum.Failed != 0 || sum.Stopped {
		t.Fatalf("summary %+v", sum)
	}
	// Every unit of a deferred task ran: its requests all went to the batch.
	turns := int64(0)
	_ = l.EachPage(ctx, 100, func(page []ledger.Stored, _, _ int64) error {
		for _, c := range page {
			turns += int64(len(c.Conv.Turns()))
		}
		return nil
	})
	if s.calls.Load() != turns {
		t.Errorf("%d units started of %d", s.calls.Load(), turns)
	}
	if pending, _, _ := pipeline.Pending(ctx, l, s); pending != 5 {
		t.Errorf("%d pending, want 5", pending)
	}
}
