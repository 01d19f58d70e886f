package llm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

func TestCallSendsParametersAndReturnsAnswer(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) {
		e.Params = llm.Params{Temperature: new(0.2), Seed: new(int64(7)), Extra: map[string]any{"top_k": 20}}
	}, func(o *llm.Options) {
		o.Roles["judge"] = llm.RoleBinding{Endpoint: "test", Params: llm.Params{Temperature: new(0.0), Stop: []string{"END"}}}
	})
	h.srv.Add(llmtest.Rule{LastContains: "hello", Reply: llmtest.Reply{
		Content: "hi there", Usage: &llmtest.Usage{Prompt: 1000, Completion: 500, Cached: 400}, Model: "test-model-2025",
		Headers: map[string]string{"x-ratelimit-remaining-requests": "99", "x-ratelimit-limit-requests": "100"},
	}})
	ctx := testCtx(t, 10*time.Second)
	req := userReq("hello")
	req.Role = "judge"
	req.Params = llm.Params{MaxTokens: new(64), ReasoningEffort: "low"}
	resp, err := h.client.Call(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "hi there" || resp.Model != "test-model-2025" || resp.Attempts != 1 || resp.FromCache {
		t.Errorf("unexpected response %+v", resp)
	}
	if want := (llm.Usage{Prompt: 1000, Completion: 500, CachedPrompt: 400}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	// 600 uncached at $1/M + 400 cached at $0.5/M + 500 out at $2/M.
	if want := (600*1 + 400*0.5 + 500*2) / 1e6; abs(resp.CostUSD-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", resp.CostUSD, want)
	}
	if resp.Headers.Get("X-Ratelimit-Remaining-Requests") != "99" {
		t.Errorf("rate-limit headers not kept: %v", resp.Headers)
	}
	calls := h.srv.Calls()
	if len(calls) != 1 {
		t.Fatalf("server saw %d calls, want 1", len(calls))
	}
	var body map[string]any
	if err := json.Unmarshal(calls[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "test-model", "temperature": 0.0, "seed": 7.0, "max_tokens": 64.0,
		"reasoning_effort": "low", "top_k": 20.0}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("body[%s] = %v, want %v", k, body[k], v)
		}
	}
	if fmt.Sprint(body["stop"]) != "[END]" {
		t.Errorf("stop = %v", body["stop"])
	}
	if msgs := calls[0].Request.Messages; len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Content != "hello" {
		t.Errorf("messages = %+v", msgs)
	}
	if got := calls[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("authorization header = %q", got)
	}
}

func TestRetriesTransientFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      llmtest.Fault
		timeout    time.Duration
		minElapsed time.Duration
		limited    bool
		dateAhead  time.Duration // set Retry-After to an HTTP date this far ahead, when the subtest starts
	}{
		{name: "429 with Retry-After seconds", fault: llmtest.Fault{Kind: llmtest.Status, Status: 429, Headers: map[string]string{"Retry-After": "1"}}, minElapsed: time.Second, limited: true},
		// HTTP dates have whole seconds, so 2s ahead is at least 1s ahead.
		{name: "429 with Retry-After HTTP date", fault: llmtest.Fault{Kind: llmtest.Status, Status: 429}, dateAhead: 2 * time.Second, minElapsed: 500 * time.Millisecond, limited: true},
		{name: "429 with retry-after-ms", fault: llmtest.Fault{Kind: llmtest.Status, Status: 429, Headers: map[string]string{"retry-after-ms": "300"}}, minElapsed: 300 * time.Millisecond, limited: true},
		{name: "429 with x-ratelimit reset", fault: llmtest.Fault{Kind: llmtest.Status, Status: 429, Headers: map[string]string{
			"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "400ms", "x-ratelimit-remaining-requests": "12", "x-ratelimit-reset-requests": "6m0s"}}, minElapsed: 400 * time.Millisecond, limited: true},
		{name: "429 without any header", fault: llmtest.Fault{Kind: llmtest.Status, Status: 429}, limited: true},
		{name: "500", fault: llmtest.Fault{Kind: llmtest.Status, Status: 500}},
		{name: "503", fault: llmtest.Fault{Kind: llmtest.Status, Status: 503, Message: "overloaded"}},
		{name: "hang past the timeout", fault: llmtest.Fault{Kind: llmtest.Hang}, timeout: 200 * time.Millisecond, minElapsed: 200 * time.Millisecond},
		{name: "connection reset", fault: llmtest.Fault{Kind: llmtest.Reset}},
		{name: "truncated JSON body", fault: llmtest.Fault{Kind: llmtest.Truncated}},
		{name: "malformed body without choices", fault: llmtest.Fault{Kind: llmtest.Malformed}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.dateAhead > 0 {
				tc.fault.Headers = map[string]string{"Retry-After": time.Now().Add(tc.dateAhead).UTC().Format(http.TimeFormat)}
			}
			h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) {
				if tc.timeout > 0 {
					e.Timeout = tc.timeout
				}
			}, nil)
			h.srv.Fail(llmtest.FirstN(1), tc.fault)
			h.srv.Reply("", "recovered")
			start := time.Now()
			resp, err := h.client.Call(testCtx(t, 20*time.Second), userReq("q"))
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("call failed: %v", err)
			}
			if resp.Text != "recovered" || resp.Attempts != 2 {
				t.Errorf("text %q after %d attempts, want recovered after 2", resp.Text, resp.Attempts)
			}
			if n := h.srv.Count(); n != 2 {
				t.Errorf("server saw %d calls, want 2", n)
			}
			if elapsed < tc.minElapsed {
				t.Errorf("retried after %v, want at least %v", elapsed, tc.minElapsed)
			}
			if got := h.count(llm.EventRateLimited) > 0; got != tc.limited {
				t.Errorf("rate-limited event = %v, want %v", got, tc.limited)
			}
			if h.count(llm.EventRetry) != 1 {
				t.Errorf("want one retry event, got %+v", h.Events())
			}
			if r := h.rec.Records(); len(r) != 1 || r[0].Attempts != 2 || r[0].Status != llm.StatusOK {
				t.Errorf("records = %+v", r)
			}
		})
	}
}

func TestRateLimitHeadersPauseTheWholeEndpoint(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, nil)
	h.srv.Add(llmtest.Rule{When: llmtest.FirstN(1), Reply: llmtest.Reply{Content: "first", Headers: map[string]string{
		"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "500ms",
	}}})
	h.srv.Reply("", "later")
	ctx := testCtx(t, 10*time.Second)
	if _, err := h.client.Call(ctx, userReq("a")); err != nil {
		t.Fatal(err)
	}
	// A different request (no cache hit) from another "stage" must wait.
	req := userReq("b")
	req.Stage = "other"
	if _, err := h.client.Call(ctx, req); err != nil {
		t.Fatal(err)
	}
	calls := h.srv.Calls()
	if gap := calls[1].Time.Sub(calls[0].Time); gap < 500*time.Millisecond {
		t.Errorf("second request sent %v after the first, want >= 500ms", gap)
	}
	if h.count(llm.EventPause) == 0 {
		t.Error("no pause event")
	}
}

func TestAttemptsAreCapped(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.MaxAttempts = 3 }, nil)
	h.srv.Fail(llmtest.Always(), llmtest.Fault{Kind: llmtest.Status, Status: 500, Message: "boom"})
	_, err := h.client.Call(testCtx(t, 10*time.Second), userReq("q"))
	var ce *llm.CallError
	if !errors.As(err, &ce) || ce.Status != 500 || !ce.Retryable {
		t.Fatalf("err = %v, want a retryable *CallError 500", err)
	}
	if llm.IsFatal(err) {
		t.Error("attempts exhausted must not be fatal")
	}
	if n := h.srv.Count(); n != 3 {
		t.Errorf("server saw %d calls, want 3", n)
	}
	if r := h.rec.Records(); len(r) != 1 || r[0].Status != llm.StatusFailed || r[0].Attempts != 3 || r[0].HTTPStatus != 500 {
		t.Errorf("records = %+v", r)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"400 bad request", 400, "This model's maximum context length is 8192 tokens."},
		{"422 unprocessable", 422, "temperature must be at most 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, llmtest.Options{}, nil, nil)
			h.srv.Fail(llmtest.Always(), llmtest.Fault{Kind: llmtest.Status, Status: tc.status, Message: tc.body})
			_, err := h.client.Call(testCtx(t, 10*time.Second), userReq("q"))
			var ce *llm.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *CallError", err)
			}
			if ce.Status != tc.status || ce.Message != tc.body || !strings.Contains(ce.Raw, tc.body) || ce.Retryable {
				t.Errorf("CallError = %+v", ce)
			}
			if llm.IsFatal(err) {
				t.Error("a 4xx unit failure must not be fatal")
			}
			if n := h.srv.Count(); n != 1 {
				t.Errorf("server saw %d calls, want 1", n)
			}
			// The endpoint stays usable.
			h.srv.Reset()
			if _, err := h.client.Call(testCtx(t, 10*time.Second), userReq("other")); err == nil || h.srv.Count() != 1 {
				t.Errorf("endpoint blocked after a unit failure: %v", err)
			}
		})
	}
}

func TestFatalErrorsStopAtOnce(t *testing.T) {
	tests := []struct {
		name     string
		fault    llmtest.Fault
		wantLine string
	}{
		{"401 bad key", llmtest.Fault{Kind: llmtest.Status, Status: 401, Message: "Incorrect API key provided"}, "endpoint test: 401 unauthorized: check TEST_API_KEY"},
		{"403 forbidden", llmtest.Fault{Kind: llmtest.Status, Status: 403}, "endpoint test: 403 forbidden"},
		{"404 unknown model", llmtest.Fault{Kind: llmtest.Status, Status: 404, Message: "The model `nope` does not exist"}, "endpoint test: 404 not found: check the model name test-model"},
		{"429 quota exhausted", llmtest.Fault{Kind: llmtest.Status, Status: 429, Code: "insufficient_quota", Message: "You exceeded your current quota"}, "billing quota exhausted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, llmtest.Options{}, nil, nil)
			h.srv.Fail(llmtest.Always(), tc.fault)
			ctx := testCtx(t, 10*time.Second)
			_, err := h.client.Call(ctx, userReq("q"))
			if !errors.Is(err, llm.ErrFatal) {
				t.Fatalf("err = %v, want ErrFatal", err)
			}
			var fe *llm.FatalError
			if !errors.As(err, &fe) || fe.Status != tc.fault.Status {
				t.Errorf("err = %#v, want *FatalError %d", err, tc.fault.Status)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantLine) || strings.Contains(msg, "\n") {
				t.Errorf("message %q, want one line containing %q", msg, tc.wantLine)
			}
			// Every later call fails at once without reaching the server.
			_, err2 := h.client.Call(ctx, userReq("another unit"))
			if !errors.Is(err2, llm.ErrFatal) {
				t.Errorf("second call err = %v", err2)
			}
			if n := h.srv.Count(); n != 1 {
				t.Errorf("server saw %d calls, want 1", n)
			}
			if h.count(llm.EventFatal) != 1 {
				t.Errorf("want one fatal event, got %+v", h.Events())
			}
		})
	}
}

func TestCircuitBreakerOpensAndCloses(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) {
		e.BreakerThreshold = 3
		e.BreakerCooldown = 300 * time.Millisecond
		e.MaxAttempts = 10
		e.Limits.Concurrency = 8
	}, nil)
	h.srv.Fail(llmtest.FirstN(4), llmtest.Fault{Kind: llmtest.Status, Status: 502})
	h.srv.Reply("", "fine")
	start := time.Now()
	resp, err := h.client.Call(testCtx(t, 10*time.Second), userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 5 {
		t.Errorf("attempts = %d, want 5", resp.Attempts)
	}
	if h.count(llm.EventBreakerOpen) < 1 || h.count(llm.EventBreakerClose) != 1 {
		t.Errorf("breaker events: %+v", h.Events())
	}
	// The 4th attempt came after the cool-down, and failed: the breaker
	// reopened, so the 5th came after a second cool-down.
	if el := time.Since(start); el < 600*time.Millisecond {
		t.Errorf("finished after %v, want >= 600ms of cool-down", el)
	}
	calls := h.srv.Calls()
	if gap := calls[3].Time.Sub(calls[2].Time); gap < 300*time.Millisecond {
		t.Errorf("attempt after the breaker opened came %v later, want >= 300ms", gap)
	}
	// While open, concurrency dropped to one probe.
	for _, e := range h.Events() {
		if e.Kind == llm.EventBreakerOpen && e.Concurrency != 1 {
			t.Errorf("breaker open event concurrency = %d, want 1", e.Concurrency)
		}
	}
}

func TestAdaptiveConcurrency(t *testing.T) {
	h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "ok", Latency: 20 * time.Millisecond}}, func(e *llm.Endpoint) {
		e.Limits.Concurrency = 8
		e.MaxAttempts = 10
	}, nil)
	// The first 8 requests, all sent together, get 429: one congestion
	// signal, so the limit halves once (8 -> 4), not eight times.
	h.srv.Fail(llmtest.FirstN(8), llmtest.Fault{Kind: llmtest.Status, Status: 429, Latency: 50 * time.Millisecond})
	ctx := testCtx(t, 20*time.Second)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := h.client.Call(ctx, userReq(fmt.Sprint("burst ", i)))
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	first := -1
	for _, e := range h.Events() {
		if e.Kind == llm.EventConcurrency {
			first = e.Concurrency
			break
		}
	}
	if first != 4 {
		t.Errorf("first concurrency change to %d, want 4 (events %+v)", first, h.Events())
	}
	if got := h.client.Concurrency("x"); got >= 8 {
		t.Errorf("concurrency %d after 429s, want < 8", got)
	}
	// Additive increase: enough successes bring it back to the maximum
	// (after the probe at 4 has seen its answers).
	for i := range 80 {
		if _, err := h.client.Call(ctx, userReq(fmt.Sprint("seq ", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.client.Concurrency("x"); got != 8 {
		t.Errorf("concurrency %d after 80 successes, want 8", got)
	}
}

func TestConcurrencyLimitIsRespected(t *testing.T) {
	h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "ok", Latency: 30 * time.Millisecond}}, func(e *llm.Endpoint) {
		e.Limits.Concurrency = 3
	}, nil)
	ctx := testCtx(t, 20*time.Second)
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			_, err := h.client.Call(ctx, userReq(fmt.Sprint("u", i)))
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if p := h.srv.MaxInFlight(); p > 3 || p < 2 {
		t.Errorf("server saw %d requests at once, want 3", p)
	}
}

func TestTokensPerMinute(t *testing.T) {
	tests := []struct {
		name     string
		reported int // completion tokens the server reports
		minGap   time.Duration
		maxGap   time.Duration
	}{
		// 600k TPM: 10k tokens/s, burst 100k. Two calls estimated at 55k:
		// the second waits about a second for the bucket to refill.
		{name: "estimate charged before the call paces the next", reported: 55_000, minGap: 800 * time.Millisecond, maxGap: 3 * time.Second},
		// The server reports only 100 tokens: the refund lets the next
		// call go at once.
		{name: "server usage corrects the estimate", reported: 100, maxGap: 400 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "ok", Usage: &llmtest.Usage{Prompt: 10, Completion: tc.reported}}},
				func(e *llm.Endpoint) { e.Limits.TPM = 600_000 }, nil)
			ctx := testCtx(t, 10*time.Second)
			for i := range 2 {
				req := userReq(fmt.Sprint("q", i))
				req.CompletionEstimate = 55_000
				if _, err := h.client.Call(ctx, req); err != nil {
					t.Fatal(err)
				}
			}
			calls := h.srv.Calls()
			gap := calls[1].Time.Sub(calls[0].Time)
			if gap < tc.minGap || gap > tc.maxGap {
				t.Errorf("gap %v, want in [%v, %v]", gap, tc.minGap, tc.maxGap)
			}
		})
	}
}

func TestJSONModeRequests(t *testing.T) {
	schema := &llm.Schema{Name: "label", Schema: map[string]any{"type": "object", "properties": map[string]any{}, "required": []string{}, "additionalProperties": false}}
	tests := []struct {
		name   string
		mode   llm.JSONMode
		schema *llm.Schema
		want   string // response_format.type, "" for absent
	}{
		{"off sends nothing", llm.JSONOff, schema, ""},
		{"json object", llm.JSONObject, schema, "json_object"},
		{"schema with a schema", llm.JSONSchema, schema, "json_schema"},
		{"schema without a schema falls back", llm.JSONSchema, nil, "json_object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, llmtest.Options{Default: llmtest.JSON(map[string]any{})}, func(e *llm.Endpoint) { e.JSONMode = tc.mode }, nil)
			req := userReq("q")
			req.JSON, req.Schema = true, tc.schema
			if _, err := h.client.Call(testCtx(t, 5*time.Second), req); err != nil {
				t.Fatal(err)
			}
			var rf struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string `json:"name"`
					Strict bool   `json:"strict"`
				} `json:"json_schema"`
			}
			raw := h.srv.Calls()[0].Request.ResponseFormat
			if len(raw) > 0 {
				if err := json.Unmarshal(raw, &rf); err != nil {
					t.Fatal(err)
				}
			}
			if rf.Type != tc.want {
				t.Errorf("response_format.type = %q, want %q", rf.Type, tc.want)
			}
			if tc.want == "json_schema" && (rf.JSONSchema.Name != "label" || !rf.JSONSchema.Strict) {
				t.Errorf("json_schema = %+v", rf.JSONSchema)
			}
		})
	}
}

func TestReasoningIsSeparated(t *testing.T) {
	tests := []struct {
		name          string
		reply         llmtest.Reply
		wantText      string
		wantReasoning string
	}{
		{"think block", llmtest.Reply{Content: "<think>\nweigh both options\n</think>\n\nAnswer: B"}, "Answer: B", "weigh both options"},
		{"dangling close tag", llmtest.Reply{Content: "first I consider A</think>Answer: A"}, "Answer: A", "first I consider A"},
		{"reasoning_content field", llmtest.Reply{Content: "Answer: C", Reasoning: "field trace"}, "Answer: C", "field trace"},
		{"reasoning field", llmtest.Reply{Content: "Answer: D", Reasoning: "router trace", ReasoningField: "reasoning"}, "Answer: D", "router trace"},
		{"no reasoning", llmtest.Reply{Content: "plain"}, "plain", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, llmtest.Options{Default: tc.reply}, nil, nil)
			ctx := testCtx(t, 5*time.Second)
			resp, err := h.client.Call(ctx, userReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.wantText || resp.Reasoning != tc.wantReasoning {
				t.Errorf("text %q reasoning %q, want %q %q", resp.Text, resp.Reasoning, tc.wantText, tc.wantReasoning)
			}
			if resp.Content != tc.reply.Content {
				t.Errorf("raw content %q", resp.Content)
			}
			// The cache keeps them apart too.
			hit, err := h.client.Call(ctx, userReq("q"))
			if err != nil || !hit.FromCache || hit.Text != tc.wantText || hit.Reasoning != tc.wantReasoning {
				t.Errorf("cache hit %+v, %v", hit, err)
			}
		})
	}
}

func TestPing(t *testing.T) {
	h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "pong", Latency: 20 * time.Millisecond, Headers: map[string]string{
		"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "499", "x-ratelimit-reset-requests": "120ms",
		"x-ratelimit-limit-tokens": "200000", "x-ratelimit-remaining-tokens": "199990", "Set-Cookie": "a=b",
	}}}, nil, nil)
	ctx := testCtx(t, 5*time.Second)
	for range 2 { // ping never answers from the cache
		res, err := h.client.Ping(ctx, "judge")
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "pong" || res.Model != "test-model" || res.Latency < 20*time.Millisecond || res.Usage.Total() == 0 {
			t.Errorf("ping result %+v", res)
		}
		if res.Headers.Get("X-Ratelimit-Limit-Tokens") != "200000" || res.Headers.Get("Set-Cookie") != "" {
			t.Errorf("headers %v", res.Headers)
		}
	}
	if n := h.srv.Count(); n != 2 {
		t.Errorf("server saw %d pings, want 2", n)
	}
	if mt := h.srv.Calls()[0].Request.MaxTokens; mt == nil || *mt > 32 {
		t.Errorf("ping max_tokens = %v", mt)
	}
}

func TestRoles(t *testing.T) {
	a := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "from a"}})
	b := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "from b"}})
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "a", BaseURL: a.URL, Model: "m-a"}, {Name: "b", BaseURL: b.URL, Model: "m-b"}},
		Roles:     map[string]llm.RoleBinding{"judge": {Endpoint: "b"}, "annotator": {Endpoint: "a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 5*time.Second)
	for role, want := range map[string]string{"judge": "from b", "annotator": "from a"} {
		req := userReq("q")
		req.Role = role
		resp, err := c.Call(ctx, req)
		if err != nil || resp.Text != want {
			t.Errorf("role %s: %q, %v", role, resp.Text, err)
		}
	}
	req := userReq("q")
	req.Role = "respondent"
	if _, err := c.Call(ctx, req); !errors.Is(err, llm.ErrUnknownRole) {
		t.Errorf("unbound role err = %v", err)
	}
	if _, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{{Name: "a", BaseURL: a.URL, Model: "m"}},
		Roles: map[string]llm.RoleBinding{"judge": {Endpoint: "missing"}}}); err == nil {
		t.Error("a role naming an unknown endpoint was accepted")
	}
}

func TestDefaultFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, ok := llm.DefaultFromEnv(env(nil)); ok {
		t.Error("empty environment gave an endpoint")
	}
	ep, ok := llm.DefaultFromEnv(env(map[string]string{"OPENAI_API_KEY": testKey}))
	if !ok || ep.BaseURL != "https://api.openai.com/v1" || string(ep.APIKey) != testKey || ep.APIKeyEnv != "OPENAI_API_KEY" {
		t.Errorf("endpoint %#v", ep)
	}
	ep, ok = llm.DefaultFromEnv(env(map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "OPENAI_MODEL": "qwen3:8b"}))
	if !ok || ep.BaseURL != "http://localhost:11434/v1" || ep.Model != "qwen3:8b" || ep.APIKey != "" {
		t.Errorf("endpoint %#v", ep)
	}
}

func TestCancelledContextStopsWaiting(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, nil)
	h.srv.Fail(llmtest.Always(), llmtest.Fault{Kind: llmtest.Status, Status: 429, Headers: map[string]string{"Retry-After": "30"}})
	ctx := testCtx(t, 300*time.Millisecond)
	start := time.Now()
	_, err := h.client.Call(ctx, userReq("q"))
	if !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
		t.Errorf("err = %v", err)
	}
	// Not waiting would take the 30 s the server asked for; the margin
	// keeps a loaded machine from failing.
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("returned after %v", el)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

var _ = conv.User

func TestOverloadedServerLowersConcurrency(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.Limits.Concurrency = 8 }, nil)
	h.srv.Fail(llmtest.FirstN(1), llmtest.Fault{Kind: llmtest.Status, Status: 503, Message: "overloaded"})
	if _, err := h.client.Call(testCtx(t, 5*time.Second), userReq("q")); err != nil {
		t.Fatal(err)
	}
	if got := h.client.Concurrency("x"); got != 4 {
		t.Errorf("concurrency %d after a 503, want 4", got)
	}
	if h.count(llm.EventRateLimited) != 0 {
		t.Error("a 503 was reported as a 429")
	}
}
