package modelstages_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/classify"
)

// TestStopWithTheWindowOpenPaysForNothingTwice stops a classify run while
// a full window of calls is in flight, by Ctrl-C (Options.Stop) and by the
// budget, then resumes it. Every answer that arrived before the stop must
// have been cached: across both runs the server never sees the same
// request twice, and at the end every task is done.
func TestStopWithTheWindowOpenPaysForNothingTwice(t *testing.T) {
	tests := []struct {
		name   string
		budget bool
	}{
		{"stop", false},
		{"budget", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			convs := conversations("classify", 300)
			l := newRun(t, convs)
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(llmtest.Rule{Func: reply(20 * time.Millisecond)})

			stop := make(chan struct{})
			opts := pipeline.Options{Stop: stop, BatchSize: 8}
			c := client(t, srv, l, 8, 0)
			if tc.budget {
				// About a third of the calls fit in the budget.
				c = budgetClient(t, srv, l, llm.NewBudget(0.08, 0))
				opts.Graceful = func(err error) bool { return errors.Is(err, llm.ErrBudgetExceeded) }
			} else {
				go func() {
					for srv.Count() < 100 && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
					close(stop)
				}()
			}
			st, err := classify.NewStage(classify.Options{LLM: &classify.LLM{Client: c}})
			if err != nil {
				t.Fatal(err)
			}
			if w, model := pipeline.OpenTasks(st, opts); !model || w != 16 {
				t.Fatalf("window %d (model %v), want 16", w, model)
			}
			sum, err := pipeline.Run(ctx, l, st, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !sum.Stopped || sum.Done == 0 || (tc.budget && !errors.Is(sum.StopReason, llm.ErrBudgetExceeded)) {
				t.Fatalf("first run: %+v", sum)
			}
			first := srv.Count()

			// Resume with a new client (a new process), nothing in the way.
			st, err = classify.NewStage(classify.Options{LLM: &classify.LLM{Client: client(t, srv, l, 8, 0)}})
			if err != nil {
				t.Fatal(err)
			}
			sum2, err := pipeline.Run(ctx, l, st, pipeline.Options{})
			if err != nil || sum2.Stopped || sum.Done+sum2.Done != int64(len(convs)) {
				t.Fatalf("resumed run: %+v, %v (first run %+v)", sum2, err, sum)
			}
			var bodies []string
			for _, call := range srv.Calls() {
				if call.Status != 200 {
					t.Fatalf("a request was not answered: status %d", call.Status)
				}
				bodies = append(bodies, string(call.Body))
			}
			slices.Sort(bodies)
			if n := len(slices.Compact(bodies)); n != len(srv.Calls()) {
				t.Errorf("%d requests, %d distinct: an answer paid for before the stop was asked again (%d requests before the stop)", len(srv.Calls()), n, first)
			}
		})
	}
}

func budgetClient(tb testing.TB, srv *llmtest.Server, l *ledger.Ledger, b *llm.Budget) *llm.Client {
	tb.Helper()
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "bench", BaseURL: srv.URL, APIKey: "k", Model: "bench-model",
			Limits: llm.Limits{Concurrency: 8}, Timeout: time.Minute, Price: llm.Price{Input: 1, Output: 1}}},
		Cache: l.LLMCache(), Recorder: l.LLMRecorder(), Budget: b,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
