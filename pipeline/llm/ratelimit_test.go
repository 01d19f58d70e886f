package llm_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

func TestRateLimitsDoNotUseUpAttempts(t *testing.T) {
	ms := map[string]string{"retry-after-ms": "5"}
	tests := []struct {
		name     string
		fault    llmtest.Fault
		faults   int  // the first this many answers are the fault
		ok       bool // the call ends with an answer
		attempts int  // requests the server sees
	}{
		{"429 with retry-after-ms, more often than MaxAttempts", llmtest.Fault{Kind: llmtest.Status, Status: 429, Headers: ms}, 5, true, 6},
		{"429 without any header backs off", llmtest.Fault{Kind: llmtest.Status, Status: 429}, 4, true, 5},
		{"503 with Retry-After is a rate limit", llmtest.Fault{Kind: llmtest.Status, Status: 503, Headers: ms}, 4, true, 5},
		{"529 with Retry-After is a rate limit", llmtest.Fault{Kind: llmtest.Status, Status: 529, Headers: ms}, 3, true, 4},
		{"503 without Retry-After counts as a failure", llmtest.Fault{Kind: llmtest.Status, Status: 503}, 4, false, 2},
		{"500 with Retry-After counts as a failure", llmtest.Fault{Kind: llmtest.Status, Status: 500, Headers: ms}, 4, false, 2},
		{"resets count as failures", llmtest.Fault{Kind: llmtest.Reset}, 4, false, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.MaxAttempts = 2 }, nil)
			h.srv.Fail(llmtest.FirstN(tc.faults), tc.fault)
			resp, err := h.client.Call(testCtx(t, 20*time.Second), userReq("q"))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want success %v", err, tc.ok)
			}
			if n := h.srv.Count(); n != tc.attempts {
				t.Errorf("server saw %d requests, want %d", n, tc.attempts)
			}
			if tc.ok && resp.Attempts != tc.attempts {
				t.Errorf("response says %d attempts, want %d", resp.Attempts, tc.attempts)
			}
			if !tc.ok && !strings.Contains(err.Error(), "giving up after 2 failed attempts") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestRateLimitsAndFailuresAreCountedApart(t *testing.T) {
	// 500, 429, 429, 500, 429, then an answer: two failures, within
	// MaxAttempts 3, however many 429s come between them.
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.MaxAttempts = 3 }, nil)
	seq := []int{500, 429, 429, 500, 429}
	var mu sync.Mutex
	n := 0
	for _, st := range []int{500, 429} {
		h.srv.Add(llmtest.Rule{Name: fmt.Sprint(st), Match: func(llmtest.ChatRequest) bool {
			mu.Lock()
			defer mu.Unlock()
			if n < len(seq) && seq[n] == st {
				n++
				return true
			}
			return false
		}, Fault: llmtest.Fault{Kind: llmtest.Status, Status: st, Headers: map[string]string{"retry-after-ms": "1"}}})
	}
	resp, err := h.client.Call(testCtx(t, 10*time.Second), userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 6 || h.srv.Count() != 6 {
		t.Errorf("%d attempts, %d requests; want 6", resp.Attempts, h.srv.Count())
	}
}

func TestPatienceEndsARateLimitedCall(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) {
		e.Limits.Patience = 300 * time.Millisecond
		e.MaxAttempts = 1
	}, nil)
	h.srv.Fail(llmtest.Always(), llmtest.Fault{Kind: llmtest.Status, Status: 429, Message: "slow down", Headers: map[string]string{"retry-after-ms": "100"}})
	start := time.Now()
	_, err := h.client.Call(testCtx(t, 10*time.Second), userReq("q"))
	var ce *llm.CallError
	if !errors.As(err, &ce) || ce.Status != 429 || !ce.Retryable {
		t.Fatalf("err = %v, want a retryable 429 *CallError", err)
	}
	if !strings.Contains(err.Error(), "limits.patience 300ms") {
		t.Errorf("err = %v, want it to name the patience", err)
	}
	if raw, unit := llm.UnitFailure(err); !unit || !strings.Contains(raw, "slow down") {
		t.Errorf("UnitFailure = %q, %v", raw, unit)
	}
	// Waits of 100 ms and more: the third or fourth answer ends it.
	if n := h.srv.Count(); n < 2 || n > 4 {
		t.Errorf("server saw %d requests in a patience of 300ms with 100ms waits", n)
	}
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("gave up after %v", el)
	}
}

func TestRequestTooLargeFailsItsUnitAtOnce(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, nil)
	h.srv.Fail(llmtest.Always(), llmtest.Fault{Kind: llmtest.Status, Status: 429, Code: "rate_limit_exceeded",
		Message: "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 52000."})
	_, err := h.client.Call(testCtx(t, 10*time.Second), userReq("q"))
	var ce *llm.CallError
	if !errors.As(err, &ce) || ce.Status != 429 || ce.Retryable {
		t.Fatalf("err = %v, want a final 429 *CallError", err)
	}
	if h.srv.Count() != 1 {
		t.Errorf("server saw %d requests, want 1", h.srv.Count())
	}
}

// A 429 with a long Retry-After parks the call; the run-wide signals end
// the wait at once. The server closes the signal as the request arrives, so
// the answer comes back after the stop and its wait is the one abandoned.
func TestStopsEndRateLimitWaits(t *testing.T) {
	tests := []struct {
		name string
		want error
	}{
		{"a graceful stop", llm.ErrStopped},
		{"the budget reached by another call", llm.ErrBudgetExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			budget := llm.NewBudget(0.01, 0)
			h := newHarness(t, llmtest.Options{}, nil, func(o *llm.Options) {
				o.Stop = stop
				o.Budget = budget
			})
			var once sync.Once
			h.srv.Add(llmtest.Rule{Name: "429 then stop", Match: func(llmtest.ChatRequest) bool {
				once.Do(func() {
					if tc.want == llm.ErrStopped {
						close(stop)
					} else if _, err := budget.Reserve(1); !errors.Is(err, llm.ErrBudgetExceeded) {
						panic("the budget took a reservation past its cap")
					}
				})
				return true
			}, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 429, Headers: map[string]string{"Retry-After": "30"}}})
			start := time.Now()
			_, err := h.client.Call(testCtx(t, 20*time.Second), userReq("q"))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if _, unit := llm.UnitFailure(err); unit {
				t.Error("a stop must leave the unit pending, not fail it")
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("returned after %v", el)
			}
			if h.srv.Count() != 1 || budget.InFlight() != 0 {
				t.Errorf("%d requests, $%v still reserved", h.srv.Count(), budget.InFlight())
			}
		})
	}
}

// Random 429s that do not depend on load, with Retry-After, and 500s: no
// call fails, and the concurrency limit is cut at most to its floor.
func TestRandomRateLimitsFailNothing(t *testing.T) {
	h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "ok", Latency: 5 * time.Millisecond}}, func(e *llm.Endpoint) {
		e.Limits.Concurrency = 8
	}, func(o *llm.Options) { o.OnEvent = nil })
	h.srv.SetChaos(&llmtest.Chaos{Seed: 3, Faults: []llmtest.ChaosFault{
		{P: 0.3, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 429, Headers: map[string]string{"retry-after-ms": "20"}}},
		{P: 0.1, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 500}},
	}})
	ctx := testCtx(t, 60*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			if _, err := h.client.Call(ctx, userReq(fmt.Sprint("unit ", i))); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	limited := 0
	for _, c := range h.srv.Calls() {
		if c.Status == 429 {
			limited++
		}
	}
	if limited == 0 {
		t.Error("the chaos sent no 429")
	}
	if got := h.client.Concurrency("x"); got < 2 {
		t.Errorf("concurrency %d, below the floor of 2", got)
	}
}
