package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
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
