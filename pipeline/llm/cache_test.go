package llm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

func TestCacheHitSendsNothing(t *testing.T) {
	h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "label: feedback", Usage: &llmtest.Usage{Prompt: 100, Completion: 10}}},
		func(e *llm.Endpoint) { e.Limits.RPM = 60 }, nil) // one request per second: a hit must not wait for it
	ctx := testCtx(t, 5*time.Second)
	first, err := h.client.Call(ctx, userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 5 {
		again, err := h.client.Call(ctx, userReq("q"))
		if err != nil {
			t.Fatal(err)
		}
		if !again.FromCache || again.Text != first.Text || again.CostUSD != 0 || again.Attempts != 0 || again.Key != first.Key {
			t.Errorf("cache hit %+v", again)
		}
	}
	// Through the limiter the five hits would take at least 5 s (one
	// request per second); the margin keeps a loaded machine from failing.
	if el := time.Since(start); el > 4*time.Second {
		t.Errorf("cache hits took %v: they touched the rate limiter", el)
	}
	if n := h.srv.Count(); n != 1 {
		t.Errorf("server saw %d calls, want 1", n)
	}
	tot := h.rec.Total()
	if tot.Calls != 6 || tot.CacheHits != 5 || tot.Usage.Prompt != 100 || abs(tot.CostUSD-first.CostUSD) > 1e-15 {
		t.Errorf("totals %+v", tot)
	}
}

func TestCacheKeyCoversTheRequest(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.Params.Seed = new(int64(42)) }, func(o *llm.Options) {
		o.Roles["judge"] = llm.RoleBinding{Endpoint: "test", Params: llm.Params{Temperature: new(1.0)}}
	})
	base := userReq("q")
	variants := map[string]func(*llm.Request){
		"base":           func(*llm.Request) {},
		"sample 1":       func(r *llm.Request) { r.SampleIndex = 1 },
		"sample 2":       func(r *llm.Request) { r.SampleIndex = 2 },
		"reroll 1":       func(r *llm.Request) { r.Reroll = 1 },
		"temperature":    func(r *llm.Request) { r.Params.Temperature = new(0.7) },
		"role params":    func(r *llm.Request) { r.Role = "judge" },
		"message text":   func(r *llm.Request) { r.Messages[1].Content = "q2" },
		"max tokens":     func(r *llm.Request) { r.Params.MaxTokens = new(10) },
		"extra field":    func(r *llm.Request) { r.Params.Extra = map[string]any{"top_k": 5} },
		"stop sequences": func(r *llm.Request) { r.Params.Stop = []string{"\n"} },
	}
	same := map[string]func(*llm.Request){
		"stage is accounting only":  func(r *llm.Request) { r.Stage = "other" },
		"json off on this endpoint": func(r *llm.Request) { r.JSON = true },
		"unknown role uses default": func(r *llm.Request) { r.Role = "respondent" },
	}
	keyOf := func(mod func(*llm.Request)) string {
		r := base
		r.Messages = append(r.Messages[:0:0], base.Messages...)
		mod(&r)
		k, err := h.client.Key(r)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	seen := map[string]string{}
	for name, mod := range variants {
		k := keyOf(mod)
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share key %s", name, other, k)
		}
		seen[k] = name
	}
	baseKey := keyOf(func(*llm.Request) {})
	for name, mod := range same {
		if keyOf(mod) != baseKey {
			t.Errorf("%s changed the key", name)
		}
	}
}

func TestSampleIndicesAreDistinctRequests(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.Params.Seed = new(int64(1)) }, nil)
	ctx := testCtx(t, 5*time.Second)
	for i := range 3 {
		req := userReq("q")
		req.SampleIndex = i
		for range 2 {
			if _, err := h.client.Call(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	calls := h.srv.Calls()
	if len(calls) != 3 {
		t.Fatalf("server saw %d calls, want 3 (one per sample)", len(calls))
	}
	seeds := map[int64]bool{}
	for _, c := range calls {
		seeds[*c.Request.Seed] = true
	}
	if len(seeds) != 3 {
		t.Errorf("seeds sent %v, want 3 distinct", seeds)
	}
	if *calls[0].Request.Seed != 1 {
		t.Errorf("sample 0 seed = %d, want the configured 1", *calls[0].Request.Seed)
	}
}

func TestNoCache(t *testing.T) {
	tests := []struct {
		name string
		opt  bool
		req  bool
	}{{"client option", true, false}, {"per request", false, true}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, llmtest.Options{}, nil, func(o *llm.Options) { o.NoCache = tc.opt })
			ctx := testCtx(t, 5*time.Second)
			for range 2 {
				req := userReq("q")
				req.NoCache = tc.req
				resp, err := h.client.Call(ctx, req)
				if err != nil || resp.FromCache {
					t.Fatalf("%+v %v", resp, err)
				}
			}
			if n := h.srv.Count(); n != 2 {
				t.Errorf("server saw %d calls, want 2", n)
			}
			if h.cache.Len() != 0 {
				t.Error("the cache was written")
			}
		})
	}
}

func TestIdenticalCallsInFlightPayOnce(t *testing.T) {
	h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "shared", Latency: 100 * time.Millisecond}}, nil, nil)
	ctx := testCtx(t, 5*time.Second)
	var wg sync.WaitGroup
	results := make([]llm.Response, 10)
	for i := range results {
		wg.Go(func() {
			r, err := h.client.Call(ctx, userReq("same question"))
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		})
	}
	wg.Wait()
	if n := h.srv.Count(); n != 1 {
		t.Errorf("server saw %d calls, want 1", n)
	}
	paid := 0
	for _, r := range results {
		if r.Text != "shared" {
			t.Errorf("text %q", r.Text)
		}
		if !r.FromCache {
			paid++
		}
	}
	if paid != 1 {
		t.Errorf("%d calls paid, want 1", paid)
	}
}

func TestUsageAndCostAreSummed(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, func(o *llm.Options) {
		o.Roles["judge"] = llm.RoleBinding{Endpoint: "test"}
	})
	h.srv.Add(llmtest.Rule{LastContains: "small", Reply: llmtest.Reply{Content: "a", Usage: &llmtest.Usage{Prompt: 1000, Completion: 100, Cached: 200, Reasoning: 40}}})
	h.srv.Add(llmtest.Rule{LastContains: "big", Reply: llmtest.Reply{Content: "b", Usage: &llmtest.Usage{Prompt: 5000, Completion: 1000}}})
	ctx := testCtx(t, 5*time.Second)
	plan := []struct{ role, stage, text string }{
		{"annotator", "classify", "small 1"}, {"annotator", "classify", "small 2"},
		{"annotator", "refs", "big 1"}, {"judge", "judge", "big 2"}, {"judge", "judge", "big 2"}, // last one is a hit
	}
	for _, p := range plan {
		req := userReq(p.text)
		req.Role, req.Stage = p.role, p.stage
		if _, err := h.client.Call(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	price := llm.Price{Input: 1, CachedInput: 0.5, Output: 2}
	small := price.Cost(llm.Usage{Prompt: 1000, Completion: 100, CachedPrompt: 200})
	big := price.Cost(llm.Usage{Prompt: 5000, Completion: 1000})
	groups := h.rec.Groups()
	want := map[llm.GroupKey]llm.Totals{
		{Role: "annotator", Model: "test-model", Stage: "classify"}: {Calls: 2, Attempts: 2, Usage: llm.Usage{Prompt: 2000, Completion: 200, CachedPrompt: 400, Reasoning: 80}, CostUSD: 2 * small},
		{Role: "annotator", Model: "test-model", Stage: "refs"}:     {Calls: 1, Attempts: 1, Usage: llm.Usage{Prompt: 5000, Completion: 1000}, CostUSD: big},
		{Role: "judge", Model: "test-model", Stage: "judge"}:        {Calls: 2, CacheHits: 1, Attempts: 1, Usage: llm.Usage{Prompt: 5000, Completion: 1000}, CostUSD: big},
	}
	if len(groups) != len(want) {
		t.Fatalf("groups %+v", groups)
	}
	for k, w := range want {
		g := groups[k]
		if abs(g.CostUSD-w.CostUSD) > 1e-12 {
			t.Errorf("%+v cost %v, want %v", k, g.CostUSD, w.CostUSD)
		}
		g.CostUSD = w.CostUSD
		if g != w {
			t.Errorf("%+v = %+v, want %+v", k, g, w)
		}
	}
	if tot := h.rec.Total(); abs(tot.CostUSD-(2*small+2*big)) > 1e-12 || tot.Calls != 5 {
		t.Errorf("total %+v", tot)
	}
}

func TestBudgetRefusesWorkPastTheCap(t *testing.T) {
	t.Run("reservations under contention", func(t *testing.T) {
		b := llm.NewBudget(1.00, 0.25) // resumed run: $0.25 already spent
		var mu sync.Mutex
		var releases []func(float64)
		var refused int
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				rel, err := b.Reserve(0.05)
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, llm.ErrBudgetExceeded) {
					refused++
					return
				}
				releases = append(releases, rel)
			})
		}
		wg.Wait()
		if len(releases) != 15 || refused != 85 {
			t.Fatalf("%d reserved, %d refused; want 15 and 85", len(releases), refused)
		}
		for _, rel := range releases {
			rel(0.01) // each call cost less than estimated
			rel(0.01) // a second release is ignored
		}
		if s := b.Spent(); abs(s-0.40) > 1e-9 || b.InFlight() > 1e-9 {
			t.Errorf("spent %v in flight %v", s, b.InFlight())
		}
		if _, err := b.Reserve(0.55); err != nil {
			t.Errorf("room left was refused: %v", err)
		}
		if _, err := b.Reserve(0.1); !errors.Is(err, llm.ErrBudgetExceeded) {
			t.Errorf("over the cap: %v", err)
		}
	})
	t.Run("client stops sending", func(t *testing.T) {
		// Each call: ~20 prompt + 1000 completion tokens estimated at $1/M in,
		// $1000/M out: about $1 each. The cap of $3.50 admits three.
		budget := llm.NewBudget(3.5, 0)
		h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "x", Usage: &llmtest.Usage{Prompt: 20, Completion: 1000}, Latency: 50 * time.Millisecond}},
			func(e *llm.Endpoint) { e.Price = llm.Price{Input: 1, Output: 1000}; e.Limits.Concurrency = 16 },
			func(o *llm.Options) { o.Budget = budget })
		ctx := testCtx(t, 10*time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for i := range 10 {
			wg.Go(func() {
				req := userReq(fmt.Sprint("unit ", i))
				req.CompletionEstimate = 1000
				_, err := h.client.Call(ctx, req)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, llm.ErrBudgetExceeded):
					refused++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if ok != 3 || refused != 7 || h.srv.Count() != 3 {
			t.Errorf("%d ok, %d refused, %d sent; want 3, 7, 3", ok, refused, h.srv.Count())
		}
		if budget.Spent() > 3.5 {
			t.Errorf("spent %v past the cap", budget.Spent())
		}
		// A cache hit costs nothing and is still served.
		if r, err := h.client.Call(ctx, func() llm.Request { r := userReq("unit 0"); r.CompletionEstimate = 1000; return r }()); err == nil && !r.FromCache {
			t.Errorf("expected a cache hit or refusal, got %+v", r)
		}
	})
}

type failingCache struct{ *llm.MemCache }

func (*failingCache) Get(context.Context, string) (llm.CachedResponse, bool, error) {
	return llm.CachedResponse{}, false, errors.New("disk I/O error")
}

func TestCacheFailureStopsTheCall(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, func(o *llm.Options) { o.Cache = &failingCache{llm.NewMemCache()} })
	_, err := h.client.Call(testCtx(t, 5*time.Second), userReq("q"))
	if err == nil || h.srv.Count() != 0 {
		t.Errorf("err %v, %d calls sent", err, h.srv.Count())
	}
}
