package llm_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// mixLatencies are the server latencies of the call mix, one class per
// fourth of the calls: short classifications to long answers.
var mixLatencies = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

// mixRun is what one pass over the call mix did.
type mixRun struct {
	elapsed  time.Duration
	failed   int
	requests int // requests the server saw, retries included
	limited  int // of them answered 429
	errors   int // of them answered 500
	minConc  int // lowest concurrency limit the client reported
}

// runMix sends calls distinct requests of the mix from workers goroutines
// through one client with concurrency 8, against a server with the given
// chaos (nil: fault-free).
func runMix(tb testing.TB, calls, workers int, chaos *llmtest.Chaos) mixRun {
	tb.Helper()
	var mu sync.Mutex
	run := mixRun{minConc: 8}
	h := newHarness(tb, llmtest.Options{Chaos: chaos}, func(e *llm.Endpoint) {
		e.Limits = llm.Limits{Concurrency: 8}
		e.Timeout = 30 * time.Second
		e.MaxAttempts = 0 // the default a run uses (6)
	}, func(o *llm.Options) {
		o.Cache = nil
		o.BackoffBase = 500 * time.Millisecond // the defaults a run uses
		o.BackoffMax = 60 * time.Second
		o.OnEvent = func(ev llm.Event) {
			if ev.Kind == llm.EventConcurrency || ev.Kind == llm.EventBreakerOpen {
				mu.Lock()
				run.minConc = min(run.minConc, ev.Concurrency)
				mu.Unlock()
			}
		}
	})
	for i, d := range mixLatencies {
		h.srv.Add(llmtest.Rule{Name: fmt.Sprint("class ", i), LastContains: fmt.Sprintf("(class %d)", i), Reply: llmtest.Reply{Content: "ok", Latency: d}})
	}
	ctx := testCtx(tb, 10*time.Minute)
	units := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range units {
				if _, err := h.client.Call(ctx, userReq(fmt.Sprintf("unit %d (class %d)", i, i%len(mixLatencies)))); err != nil {
					mu.Lock()
					run.failed++
					mu.Unlock()
					tb.Logf("unit %d failed: %v", i, err)
				}
			}
		})
	}
	for i := range calls {
		units <- i
	}
	close(units)
	wg.Wait()
	run.elapsed = time.Since(start)
	for _, c := range h.srv.Calls() {
		run.requests++
		switch c.Status {
		case 429:
			run.limited++
		case 500:
			run.errors++
		}
	}
	return run
}

// BenchmarkRandomRateLimits runs one call mix (240 distinct requests at
// 100–800 ms of server latency) at concurrency 8 twice in one run: against
// a fault-free server, and against one that answers 30% of requests 429
// with Retry-After: 1 and 10% 500, drawn per request and seeded. Such 429s
// do not depend on load, so the client must neither fail a call (target 0)
// nor throttle itself to the floor: the faulty pass should take at most 3×
// the clean one. It runs with as many callers as slots (8) and with four
// times as many (32, like a stage's worker pool).
//
//	go test ./pipeline/llm -run '^$' -bench RandomRateLimits -benchtime 1x
func BenchmarkRandomRateLimits(b *testing.B) {
	chaos := &llmtest.Chaos{Seed: 9, Faults: []llmtest.ChaosFault{
		{P: 0.3, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 429, Message: "Rate limit reached (test server).", Headers: map[string]string{"Retry-After": "1"}}},
		{P: 0.1, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 500, Message: "internal error (test server)"}},
	}}
	for _, workers := range []int{8, 32} {
		b.Run(fmt.Sprintf("callers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				clean := runMix(b, 240, workers, nil)
				faulty := runMix(b, 240, workers, chaos)
				ratio := faulty.elapsed.Seconds() / clean.elapsed.Seconds()
				b.Logf("fault-free: %v, %d requests, %d failed", clean.elapsed.Round(time.Millisecond), clean.requests, clean.failed)
				b.Logf("30%% 429 (Retry-After 1 s) + 10%% 500: %v, %d requests (%d answered 429, %d answered 500), %d failed, lowest concurrency limit %d",
					faulty.elapsed.Round(time.Millisecond), faulty.requests, faulty.limited, faulty.errors, faulty.failed, faulty.minConc)
				b.Logf("ratio %.2f (target <= 3), failed calls %d (target 0)", ratio, clean.failed+faulty.failed)
				b.ReportMetric(clean.elapsed.Seconds(), "clean_s")
				b.ReportMetric(faulty.elapsed.Seconds(), "faulty_s")
				b.ReportMetric(ratio, "ratio")
				b.ReportMetric(float64(clean.failed+faulty.failed), "failed")
				b.ReportMetric(float64(faulty.minConc), "min_conc")
				if clean.failed+faulty.failed > 0 || ratio > 3 {
					b.Errorf("ratio %.2f (want <= 3), %d failed calls (want 0)", ratio, clean.failed+faulty.failed)
				}
			}
		})
	}
}
