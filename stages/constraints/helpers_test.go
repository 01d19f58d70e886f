package constraints_test

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

// sample has four user turns; every assistant turn carries a marker so a
// test can tell which assistant text reached a prompt.
func sample() *conv.Conversation {
	return &conv.Conversation{ID: "c1", System: "SYSTEM-MARKER", Messages: []conv.Message{
		{Role: conv.User, Content: "For the rest of this session, reply in bullet points only. What is a monad?"},
		{Role: conv.Assistant, Content: "- A monad is a pattern. ASSISTANT-MARKER-1"},
		{Role: conv.User, Content: "Give an example in Haskell."},
		{Role: conv.Assistant, Content: "- Maybe is one. ASSISTANT-MARKER-2"},
		{Role: conv.Tool, Content: "TOOL-MARKER"},
		{Role: conv.User, Content: "I like how you ended with a summary there, do that from now on."},
		{Role: conv.Assistant, Content: "- Noted. Summary: ok. ASSISTANT-MARKER-3"},
		{Role: conv.User, Content: "Now explain functors."},
		{Role: conv.Assistant, Content: "- A functor maps. ASSISTANT-MARKER-4"},
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
