package llm_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// testKey is the API key used in tests; TestSecretsNeverLeak searches for it.
const testKey = "sk-test-7f3c9e1d-DO-NOT-LEAK"

type harness struct {
	srv    *llmtest.Server
	client *llm.Client
	rec    *llm.MemRecorder
	cache  *llm.MemCache

	mu     sync.Mutex
	events []llm.Event
}

func (h *harness) Events() []llm.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]llm.Event(nil), h.events...)
}

func (h *harness) count(kind llm.EventKind) int {
	n := 0
	for _, e := range h.Events() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// newHarness starts a test server and a client bound to it. ep and o may
// adjust the endpoint and options before the client is built.
func newHarness(tb testing.TB, so llmtest.Options, ep func(*llm.Endpoint), o func(*llm.Options)) *harness {
	tb.Helper()
	h := &harness{srv: llmtest.New(tb, so), rec: llm.NewMemRecorder(), cache: llm.NewMemCache()}
	e := llm.Endpoint{
		Name:        "test",
		BaseURL:     h.srv.URL,
		APIKey:      testKey,
		APIKeyEnv:   "TEST_API_KEY",
		Model:       "test-model",
		Timeout:     2 * time.Second,
		MaxAttempts: 4,
		Limits:      llm.Limits{Concurrency: 4},
		Price:       llm.Price{Input: 1, CachedInput: 0.5, Output: 2},
	}
	if ep != nil {
		ep(&e)
	}
	opts := llm.Options{
		Endpoints:   []llm.Endpoint{e},
		Roles:       map[string]llm.RoleBinding{llm.DefaultRole: {Endpoint: "test"}},
		Cache:       h.cache,
		Recorder:    h.rec,
		BackoffBase: 10 * time.Millisecond,
		BackoffMax:  100 * time.Millisecond,
		OnEvent: func(ev llm.Event) {
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.mu.Unlock()
		},
	}
	if o != nil {
		o(&opts)
	}
	c, err := llm.New(opts)
	if err != nil {
		tb.Fatalf("creating client: %v", err)
	}
	h.client = c
	return h
}

func testCtx(tb testing.TB, d time.Duration) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

func userReq(text string) llm.Request {
	return llm.Request{Role: "annotator", Stage: "classify", Messages: []conv.Message{
		{Role: conv.System, Content: "You label turns."},
		{Role: conv.User, Content: text},
	}}
}
