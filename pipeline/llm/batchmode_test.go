package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// fakeDeferrer answers with a fixed decision and keeps what it was given.
type fakeDeferrer struct {
	mu       sync.Mutex
	decision llm.Decision
	err      error
	got      []llm.DeferredRequest
}

func (d *fakeDeferrer) Defer(_ context.Context, r llm.DeferredRequest) (llm.Decision, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, r)
	return d.decision, d.err
}

func TestBatchModeDefers(t *testing.T) {
	temp := 0.3
	req := llm.Request{Role: "judge", Stage: "judge", Messages: []conv.Message{{Role: conv.System, Content: "be fair"}, {Role: conv.User, Content: "which is better?"}},
		Params: llm.Params{Temperature: &temp, Extra: map[string]any{"top_k": 5}}, JSON: true}
	tests := []struct {
		name     string
		mode     llm.Mode // the endpoint's
		role     llm.Mode // the role's override
		decision llm.Decision
		derr     error
		sent     bool // the request goes out online
		wantErr  error
	}{
		{name: "batch endpoint defers", mode: llm.ModeBatch, decision: llm.Deferred, wantErr: llm.ErrDeferred},
		{name: "waiting in a batch", mode: llm.ModeBatch, decision: llm.Waiting, wantErr: llm.ErrDeferred},
		{name: "role overrides to batch", role: llm.ModeBatch, decision: llm.Deferred, wantErr: llm.ErrDeferred},
		{name: "leftover sent online", mode: llm.ModeBatch, decision: llm.SendOnline, sent: true},
		{name: "failed in the batch", mode: llm.ModeBatch, derr: &llm.CallError{Endpoint: "test", Status: 400, Message: "bad"}, wantErr: &llm.CallError{}},
		{name: "online endpoint", decision: llm.Deferred, sent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDeferrer{decision: tc.decision, err: tc.derr}
			h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.Mode = tc.mode; e.JSONMode = llm.JSONObject }, func(o *llm.Options) {
				o.Deferrer = d
				o.Roles = map[string]llm.RoleBinding{"judge": {Endpoint: "test", Mode: tc.role}}
			})
			_, err := h.client.Call(context.Background(), req)
			switch want := tc.wantErr; {
			case want == nil && err != nil:
				t.Fatalf("Call: %v", err)
			case errors.Is(want, llm.ErrDeferred) && !errors.Is(err, llm.ErrDeferred):
				t.Fatalf("Call: %v, want ErrDeferred", err)
			case want != nil && !errors.Is(want, llm.ErrDeferred):
				if _, unit := llm.UnitFailure(err); !unit {
					t.Fatalf("Call: %v, want a unit failure", err)
				}
			}
			if got := h.srv.Count(); (got == 1) != tc.sent {
				t.Fatalf("%d requests sent online", got)
			}
			if tc.mode == "" && tc.role == "" {
				if len(d.got) != 0 {
					t.Fatal("an online role was deferred")
				}
				return
			}
			if len(d.got) != 1 {
				t.Fatalf("deferred %d times", len(d.got))
			}
			g := d.got[0]
			key, _ := h.client.Key(req)
			if g.Key != key || g.Endpoint != "test" || g.Model != "test-model" || g.Role != "judge" || g.Stage != "judge" || g.EstimateUSD <= 0 {
				t.Errorf("deferred %+v", g)
			}
			var body map[string]any
			if err := json.Unmarshal(g.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body["model"] != "test-model" || body["temperature"] != 0.3 || body["top_k"] != 5.0 || body["response_format"] == nil || len(body["messages"].([]any)) != 2 {
				t.Errorf("body %s", g.Body)
			}
			if tc.sent {
				// The batch body is the online body.
				var online map[string]any
				_ = json.Unmarshal(h.srv.Calls()[0].Body, &online)
				a, _ := json.Marshal(online)
				b, _ := json.Marshal(body)
				if string(a) != string(b) {
					t.Errorf("batch body %s\nonline body %s", b, a)
				}
			}
		})
	}
}

func TestBatchModeCacheFirst(t *testing.T) {
	d := &fakeDeferrer{decision: llm.Deferred}
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.Mode = llm.ModeBatch }, func(o *llm.Options) { o.Deferrer = d })
	req := llm.Request{Role: "x", Messages: []conv.Message{{Role: conv.User, Content: "hi"}}}
	key, _ := h.client.Key(req)
	_ = h.cache.Put(context.Background(), key, llm.CachedResponse{Content: "from a batch", Text: "from a batch"})
	resp, err := h.client.Call(context.Background(), req)
	if err != nil || resp.Text != "from a batch" || !resp.FromCache || len(d.got) != 0 {
		t.Fatalf("Call: %+v %v (deferred %d)", resp, err, len(d.got))
	}
}

func TestBatchModeBudget(t *testing.T) {
	d := &fakeDeferrer{decision: llm.Deferred}
	b := llm.NewBudget(1e-9, 0)
	h := newHarness(t, llmtest.Options{}, func(e *llm.Endpoint) { e.Mode = llm.ModeBatch }, func(o *llm.Options) { o.Deferrer = d; o.Budget = b })
	_, err := h.client.Call(context.Background(), llm.Request{Messages: []conv.Message{{Role: conv.User, Content: "hi"}}})
	if !errors.Is(err, llm.ErrBudgetExceeded) || len(d.got) != 0 {
		t.Fatalf("Call: %v (deferred %d)", err, len(d.got))
	}
}

func TestPriceForBatch(t *testing.T) {
	p := llm.Price{Input: 2, CachedInput: 1, Output: 8}
	if got := p.ForBatch(); got.Input != 1 || got.CachedInput != 0.5 || got.Output != 4 {
		t.Errorf("default share: %+v", got)
	}
	p.Batch = 0.25
	if got := p.ForBatch(); got.Input != 0.5 || got.Output != 2 {
		t.Errorf("share 0.25: %+v", got)
	}
}

func TestParseCompletion(t *testing.T) {
	tests := []struct {
		body, text, reasoning string
		ok                    bool
	}{
		{`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"<think>hmm</think>yes"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, "yes", "hmm", true},
		{`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a","reasoning_content":"r"},"finish_reason":"stop"}]}`, "a", "r", true},
		{`{"id":"x","choices":[]}`, "", "", false},
		{`{"id":`, "", "", false},
	}
	for _, tc := range tests {
		cr, err := llm.ParseCompletion([]byte(tc.body))
		if (err == nil) != tc.ok || (tc.ok && (cr.Text != tc.text || cr.Reasoning != tc.reasoning || cr.Model != "m")) {
			t.Errorf("%s: %+v %v", tc.body, cr, err)
		}
	}
}

func TestBatchAPIRoundTrip(t *testing.T) {
	h := newHarness(t, llmtest.Options{Key: testKey, Batch: llmtest.BatchOptions{Polls: 1}}, nil, nil)
	h.srv.Reply("q", "answer")
	api, err := h.client.BatchAPI("test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := `{"custom_id":"k1","method":"POST","url":"/v1/chat/completions","body":{"model":"test-model","messages":[{"role":"user","content":"q"}]}}` + "\n"
	fid, err := api.Upload(ctx, "in.jsonl", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	b, err := api.Create(ctx, fid, map[string]string{"ac3_run": "r"})
	if err != nil || b.ID == "" || b.Terminal() {
		t.Fatalf("Create: %+v %v", b, err)
	}
	if f, ok, err := api.FindByInput(ctx, fid, 100); err != nil || !ok || f.ID != b.ID {
		t.Fatalf("FindByInput: %+v %v %v", f, ok, err)
	}
	if _, ok, _ := api.FindByInput(ctx, "file-nope", 100); ok {
		t.Fatal("found a batch for an unknown file")
	}
	if g, _ := api.Get(ctx, b.ID); g.Status != "in_progress" {
		t.Fatalf("first poll: %+v", g)
	}
	g, err := api.Get(ctx, b.ID)
	if err != nil || g.Status != "completed" || g.Completed != 1 || g.OutputFile == "" || g.Metadata["ac3_run"] != "r" {
		t.Fatalf("second poll: %+v %v", g, err)
	}
	rc, err := api.Content(ctx, g.OutputFile)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(out), `"custom_id":"k1"`) {
		t.Errorf("output %s", out)
	}
	if _, err := api.Cancel(ctx, b.ID); err == nil {
		t.Error("cancelling a completed batch succeeded")
	}
}

func TestEstimateCostAtBatchPrice(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, func(o *llm.Options) {
		o.Roles = map[string]llm.RoleBinding{"judge": {Endpoint: "test", Mode: llm.ModeBatch}, "respondent": {Endpoint: "test"}}
	})
	online, err := h.client.EstimateCost("respondent", 1000, 100)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := h.client.EstimateCost("judge", 1000, 100)
	if err != nil {
		t.Fatal(err)
	}
	if online <= 0 || batch != online/2 || h.client.BatchMode("respondent") || !h.client.BatchMode("judge") {
		t.Errorf("online $%g, batch $%g", online, batch)
	}
}
