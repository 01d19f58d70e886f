package classify_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// newClient returns a client bound to srv with no retries of its own, so
// request counts in tests are exact.
func newClient(tb testing.TB, srv *llmtest.Server) *llm.Client {
	tb.Helper()
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "test", BaseURL: srv.URL, APIKey: "k", Model: "test-model", Timeout: 5 * time.Second, MaxAttempts: 1}},
		Cache:     llm.NewMemCache(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

var nonceRE = regexp.MustCompile(`<answer id="([0-9a-f]+)">`)

// nonceOf reads the nonce the prompt told the model to use.
func nonceOf(req llmtest.ChatRequest) string {
	m := nonceRE.FindStringSubmatch(req.System())
	if m == nil {
		return ""
	}
	return m[1]
}

func answer(nonce, body string) string {
	return fmt.Sprintf("Here is my label.\n<answer id=%q>\n%s\n</answer>", nonce, body)
}

// sample has three user turns; turn 2 is feedback and turn 3 a new ask.
func sample() *conv.Conversation {
	return &conv.Conversation{ID: "c1", System: "You are a coding assistant.", Messages: []conv.Message{
		{Role: conv.User, Content: "Write a Python function that reverses a string."},
		{Role: conv.Assistant, Content: "def rev(s):\n    return s[::-1]"},
		{Role: conv.User, Content: "It crashes with a TypeError when I pass a number. Fix it."},
		{Role: conv.Assistant, Content: "def rev(s):\n    return str(s)[::-1]"},
		{Role: conv.User, Content: "Thanks. Now write a haiku about rain."},
	}}
}

func seedLedger(tb testing.TB, convs ...*conv.Conversation) *ledger.Ledger {
	tb.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(tb.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	in, err := l.AddInput(ctx, ledger.Input{Path: "/in", Format: "canonical"})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: convs}); err != nil {
		tb.Fatal(err)
	}
	return l
}

func timeout(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}
