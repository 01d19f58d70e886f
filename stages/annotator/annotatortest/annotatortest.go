// Package annotatortest holds what the tests of the model-backed annotation
// stages share: a client bound to an in-process llmtest server, the
// nonce-tagged answers the scripted model writes, a sample conversation and
// a seeded run ledger.
package annotatortest

import (
	"context"
	"fmt"
	"github.com/ac3/ac3/pipeline"
	"path/filepath"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// Client returns a client bound to srv, with a memory cache and no retries
// of its own, so request counts in tests are exact. Its model is
// "test-model".
func Client(tb testing.TB, srv *llmtest.Server) *llm.Client {
	tb.Helper()
	return OutputClient(tb, srv, parse.Tags)
}

// OutputClient is Client asking for answers laid out as out
// (parse.JSONSchema: strict structured output).
func OutputClient(tb testing.TB, srv *llmtest.Server, out parse.Output) *llm.Client {
	tb.Helper()
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "test", BaseURL: srv.URL, APIKey: "k", Model: "test-model", Timeout: 5 * time.Second, MaxAttempts: 1, Output: out}},
		Cache:     llm.NewMemCache(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// NonceOf reads the nonce the prompt told the model to use (in the answer
// form, at the end of the last message), or "" when there is none.
func NonceOf(req llmtest.ChatRequest) string { return req.Nonce("answer") }

// Answer is a model reply holding body in the answer section tagged with
// nonce.
func Answer(nonce, body string) string {
	return fmt.Sprintf("Here is my label.\n<answer id=%q>\n%s\n</answer>", nonce, body)
}

// Reply is a scripted reply that answers every request with body: in its
// nonce-tagged answer section, or, when the request sent a schema, as the
// whole answer (as a server enforcing the schema would; a body that breaks
// the schema gets the test server's 400).
func Reply(body string) func(llmtest.ChatRequest) llmtest.Reply {
	return func(r llmtest.ChatRequest) llmtest.Reply {
		if _, ok := r.Schema(); ok {
			return llmtest.Reply{Content: body}
		}
		return llmtest.Reply{Content: Answer(NonceOf(r), body)}
	}
}

// BodyCase is one scripted answer body for Both.
type BodyCase struct {
	Name   string
	Body   string // the JSON object the model answers with
	Failed bool   // the unit must fail (after every retry)
}

// Both runs every case once per output against a fresh server answering
// with Reply(Body): tags, then json_schema. The json_schema server checks
// the schema but sends the body as scripted (llmtest.Options.Unenforced),
// so bodies that break the schema reach the parser as a server that ignores
// response_format would send them. run makes the unit with the client; a
// case must fail after all three tries or succeed at once, and a body that
// succeeds with json_schema must conform to the schema the request sent.
func Both(t *testing.T, cases []BodyCase, run func(t *testing.T, c *llm.Client) pipeline.Unit) {
	for _, out := range []parse.Output{parse.Tags, parse.JSONSchema} {
		for _, tc := range cases {
			t.Run(string(out)+"/"+tc.Name, func(t *testing.T) {
				srv := llmtest.New(t, llmtest.Options{Unenforced: out == parse.JSONSchema})
				srv.Add(llmtest.Rule{Func: Reply(tc.Body)})
				u := run(t, OutputClient(t, srv, out))
				if u.Failed != tc.Failed {
					t.Fatalf("failed = %v (%s), want %v", u.Failed, u.Error, tc.Failed)
				}
				want := 1
				if tc.Failed {
					want = 3
					if u.Raw == "" {
						t.Errorf("failed unit without its raw answer: %+v", u)
					}
				}
				if srv.Count() != want {
					t.Errorf("%d calls, want %d", srv.Count(), want)
				}
				sc, sent := srv.Calls()[0].Request.Schema()
				if sent != (out == parse.JSONSchema) {
					t.Fatalf("schema sent: %v", sent)
				}
				if sent && !tc.Failed {
					if err := llmtest.Conforms(sc.Schema, tc.Body); err != nil {
						t.Errorf("the parser accepted a body its own schema rejects: %v", err)
					}
				}
			})
		}
	}
}

// Sample is a three-turn coding conversation with a system message: u_2
// reports a bug in a_1 (feedback) and u_3 starts a new ask; u_3 has no reply.
func Sample() *conv.Conversation {
	return &conv.Conversation{ID: "c1", System: "You are a coding assistant.", Messages: []conv.Message{
		{Role: conv.User, Content: "Write a Python function that reverses a string."},
		{Role: conv.Assistant, Content: "def rev(s):\n    return s[::-1]"},
		{Role: conv.User, Content: "It crashes with a TypeError when I pass a number. Fix it."},
		{Role: conv.Assistant, Content: "def rev(s):\n    return str(s)[::-1]"},
		{Role: conv.User, Content: "Thanks. Now write a haiku about rain."},
	}}
}

// Ledger returns a ledger in a temporary folder with convs ingested, closed
// when the test ends.
func Ledger(tb testing.TB, convs ...*conv.Conversation) *ledger.Ledger {
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

// Context returns a context that ends after 30 seconds or with the test.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}
