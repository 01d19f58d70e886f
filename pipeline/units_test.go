package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/llm"
)

func TestEach(t *testing.T) {
	errA, errB := errors.New("unit 3 failed"), errors.New("unit 6 failed")
	tests := []struct {
		name    string
		n       int
		limit   int
		fail    map[int]error
		panicOn int // -1: none
		wantErr error
		// inOrder: units run one after another, in order.
		inOrder bool
		// all: every unit ran.
		all bool
	}{
		{name: "all units, unbounded", n: 20, panicOn: -1, all: true},
		{name: "all units, limit 3", n: 20, limit: 3, panicOn: -1, all: true},
		{name: "one at a time runs in order", n: 10, limit: 1, panicOn: -1, inOrder: true, all: true},
		{name: "the lowest-numbered error wins", n: 8, fail: map[int]error{6: errB, 3: errA}, panicOn: -1, wantErr: errA},
		{name: "in order, an error stops the rest", n: 8, limit: 1, fail: map[int]error{3: errA}, panicOn: -1, wantErr: errA, inOrder: true},
		{name: "a panic comes back as an error", n: 5, limit: 2, panicOn: 2},
		{name: "zero units", n: 0, panicOn: -1, all: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var (
				mu    sync.Mutex
				order []int
				now   atomic.Int64
				top   atomic.Int64
			)
			err := pipeline.Task{}.Each(ctx, tc.n, tc.limit, func(ctx context.Context, i int) error {
				n := now.Add(1)
				defer now.Add(-1)
				for {
					t := top.Load()
					if n <= t || top.CompareAndSwap(t, n) {
						break
					}
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if i == tc.panicOn {
					panic(fmt.Sprint("unit ", i))
				}
				return tc.fail[i]
			})
			if tc.panicOn >= 0 {
				var pe *pipeline.PanicError
				if !errors.As(err, &pe) || pe.Value != fmt.Sprint("unit ", tc.panicOn) || len(pe.Stack) == 0 {
					t.Fatalf("err = %v, want the panic", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.limit > 0 && top.Load() > int64(tc.limit) {
				t.Errorf("%d units at once, limit %d", top.Load(), tc.limit)
			}
			if tc.inOrder && !slices.IsSorted(order) {
				t.Errorf("order %v", order)
			}
			if tc.inOrder && tc.wantErr != nil && len(order) != 4 {
				t.Errorf("ran %v after the failure at 3", order)
			}
			if tc.all && len(order) != tc.n {
				t.Errorf("ran %d of %d", len(order), tc.n)
			}
		})
	}
}

// TestEachWaitsForUnitsInFlight: once a unit fails, nothing new starts,
// and Each returns only after the units already running have returned
// (their calls are paid for; finishing them caches the answers).
func TestEachWaitsForUnitsInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	release := make(chan struct{})
	var started, finished atomic.Int64
	failNow := make(chan struct{})
	go func() {
		for started.Load() < 4 {
			time.Sleep(time.Millisecond)
		}
		close(failNow)
	}()
	err := pipeline.Task{}.Each(ctx, 50, 4, func(ctx context.Context, i int) error {
		started.Add(1)
		defer finished.Add(1)
		if i == 0 {
			<-failNow
			defer close(release)
			return llm.ErrBudgetExceeded
		}
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})
	if !errors.Is(err, llm.ErrBudgetExceeded) {
		t.Fatalf("err = %v", err)
	}
	if started.Load() != 4 || finished.Load() != 4 {
		t.Errorf("started %d, finished %d; want 4 and 4", started.Load(), finished.Load())
	}
}

func TestDefaultWindow(t *testing.T) {
	ep := func(name string, conc int) llm.Endpoint {
		return llm.Endpoint{Name: name, BaseURL: "http://127.0.0.1:1/v1", Model: "m", Limits: llm.Limits{Concurrency: conc, RPM: 600}}
	}
	two, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{ep("a", 16), ep("b", 0), ep("huge", 1000)},
		Roles: map[string]llm.RoleBinding{
			"annotator": {Endpoint: "a"}, "judge": {Endpoint: "a"}, "analyzer": {Endpoint: "b"}, "bulk": {Endpoint: "huge"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	one, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{ep("solo", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		client *llm.Client
		roles  []string
		want   int
	}{
		{"twice the endpoint's concurrency", two, []string{"annotator"}, 32},
		{"an endpoint shared by two roles counts once", two, []string{"annotator", "judge"}, 32},
		{"distinct endpoints add up; unset concurrency is the client's 8", two, []string{"annotator", "analyzer"}, 48},
		{"capped", two, []string{"bulk"}, pipeline.MaxWindow},
		{"at least two", one, []string{"anything"}, pipeline.MinWindow},
		{"no role resolves", two, []string{"nobody"}, 0},
		{"no client", nil, []string{"annotator"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pipeline.DefaultWindow(tc.client, tc.roles...); got != tc.want {
				t.Errorf("DefaultWindow = %d, want %d", got, tc.want)
			}
		})
	}
}
