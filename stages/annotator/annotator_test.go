package annotator_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/pipeline/prompt/prompttest"
	"github.com/ac3/ac3/stages/annotator"
	"github.com/ac3/ac3/stages/annotator/annotatortest"
)

const testPrompt = `version: 3
---
{{define "system"}}Label one turn.{{end}}
{{define "user"}}{{range .Messages}}[{{.Tag}}] {{.Role}}{{if .Turn}}, turn {{.Turn}}{{end}}: {{.Content}}
{{end}}Now turn {{.Turn}}. Answer inside <answer id="{{.Nonce}}"></answer>.{{end}}
`

func load() *prompt.Template { return prompt.MustParse("test", []byte(testPrompt)) }

type wire struct {
	N *int `json:"n" parse:"required"`
}

type out struct {
	N         int    `json:"n"`
	Annotator string `json:"annotator"`
}

func checkSmall(w wire) (int, error) {
	if *w.N > 9 {
		return 0, errors.New("n is too large")
	}
	return *w.N, nil
}

func encode(n int, name string) ([]byte, error) { return json.Marshal(out{n, name}) }

// sample is annotatortest.Sample with a tool message after a_1.
func sample() *conv.Conversation {
	c := annotatortest.Sample()
	c.Messages = slices.Insert(c.Messages, 2, conv.Message{Role: conv.Tool, Content: "tool output"})
	return c
}

// query renders the test prompt for turn 2 of sample.
func query(t *testing.T, a *annotator.LLM, retry int) annotator.Query {
	t.Helper()
	es, err := annotator.History(sample(), 2, a.MaxChars, "now")
	if err != nil {
		t.Fatal(err)
	}
	msgs, tg, err := annotator.RenderTranscript(a.Prompt(), 2, es, annotator.ConversationParts(sample()), a.Output, annotator.AnswerForm[wire]("test"))
	if err != nil {
		t.Fatal(err)
	}
	return annotator.Query{Stage: "test", Turn: 2, Messages: msgs, Tagger: tg, CompletionEstimate: 10, Retry: retry}
}

func TestPrepareAndVersion(t *testing.T) {
	a := (&annotator.LLM{Retries: 4}).Prepare(load)
	if a.Role != annotator.DefaultRole || a.Retries != 4 || a.MaxChars != annotator.DefaultMaxChars || a.Prompt() == nil {
		t.Fatalf("prepared = %+v", a)
	}
	want := a.Prompt().Version() + ";role=annotator;model=;retries=4;clip=6000"
	if got := a.Version(); got != want {
		t.Errorf("Version() = %q, want %q", got, want)
	}
	srv := llmtest.New(t, llmtest.Options{})
	b := (&annotator.LLM{Client: annotatortest.Client(t, srv), Role: "judge", MaxChars: 7}).Prepare(load)
	if got := b.Version(); !strings.HasSuffix(got, ";role=judge;model=test-model;retries=2;clip=7") {
		t.Errorf("Version() = %q", got)
	}
}

func TestHistoryIsContextBeforeTheReply(t *testing.T) {
	es, err := annotator.History(sample(), 2, 0, "now")
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, e := range es {
		tags = append(tags, e.Tag)
		if strings.Contains(e.Content, "str(s)") {
			t.Errorf("a_2 is in C_2: %+v", e)
		}
	}
	if got := strings.Join(tags, ","); got != "system,1u,1a,tool,now" {
		t.Errorf("tags = %s", got)
	}
	if _, err := annotator.History(sample(), 4, 0, "now"); err == nil || err.Error() != "conversation c1 has no turn 4" {
		t.Errorf("turn 4: %v", err)
	}
}

func TestRenderTranscript(t *testing.T) {
	es := []annotator.Entry{{Tag: "1u", Role: "user", Turn: 1, Content: "hello"}, {Tag: "now", Role: "assistant", Turn: 2, Content: "hi"}}
	msgs, tg, err := annotator.RenderTranscript(load(), 2, es, []string{"hello", "hi"}, "", annotator.AnswerForm[wire]("test"))
	if err != nil {
		t.Fatal(err)
	}
	all := prompttest.Format(msgs)
	if !strings.Contains(all, tg.Open("answer")) || !strings.Contains(all, "[now] assistant, turn 2: hi") {
		t.Errorf("prompt:\n%s", all)
	}
}

func TestClip(t *testing.T) {
	if got := annotator.Clip("short", 10); got != "short" {
		t.Errorf("Clip kept %q", got)
	}
	if got := annotator.Clip("whatever", 0); got != "whatever" {
		t.Errorf("Clip(…, 0) = %q", got)
	}
	s := strings.Repeat("é", 50) // 100 bytes, two a rune
	got := annotator.Clip(s, 21)
	if !utf8.ValidString(got) || !strings.Contains(got, "characters left out") {
		t.Fatalf("Clip = %q", got)
	}
	head, _, _ := strings.Cut(got, "\n")
	if head != strings.Repeat("é", 7) {
		t.Errorf("head = %q", head)
	}
}

func TestUnit(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		failed bool
		calls  int
	}{
		{"good answer", `{"n": 3}`, false, 1},
		{"rejected by the check", `{"n": 12}`, true, 3},
		{"not JSON", `three`, true, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(llmtest.Rule{Func: annotatortest.Reply(tc.body)})
			a := (&annotator.LLM{Client: annotatortest.Client(t, srv)}).Prepare(load)
			u, err := annotator.Unit(annotatortest.Context(t), a, query(t, a, 0), checkSmall, encode)
			if err != nil {
				t.Fatal(err)
			}
			if u.Failed != tc.failed || u.Turn != 2 || srv.Count() != tc.calls {
				t.Fatalf("unit = %+v after %d calls", u, srv.Count())
			}
			if tc.failed {
				if u.Raw == "" || u.Error == "" || u.Attempts != 3 {
					t.Errorf("failed unit without raw text or error: %+v", u)
				}
				return
			}
			if string(u.Output) != `{"n":3,"annotator":"llm:test-model"}` || u.Tokens == 0 {
				t.Errorf("unit = %+v, output %s", u, u.Output)
			}
		})
	}
}

// TestUnitRetryAsksAfresh: work re-queued by `ac3 retry` must not replay the
// cached malformed answers of the first run.
func TestUnitRetryAsksAfresh(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{When: llmtest.FirstN(3), Func: annotatortest.Reply(`bad`)})
	srv.Add(llmtest.Rule{Func: annotatortest.Reply(`{"n": 1}`)})
	a := (&annotator.LLM{Client: annotatortest.Client(t, srv)}).Prepare(load)
	ctx := annotatortest.Context(t)
	u, err := annotator.Unit(ctx, a, query(t, a, 0), checkSmall, encode)
	if err != nil || !u.Failed {
		t.Fatalf("first run: %+v, %v", u, err)
	}
	u, err = annotator.Unit(ctx, a, query(t, a, 0), checkSmall, encode)
	if err != nil || !u.Failed || srv.Count() != 3 {
		t.Fatalf("the same run again: %+v, %v after %d calls (want the cached answers)", u, err, srv.Count())
	}
	u, err = annotator.Unit(ctx, a, query(t, a, 1), checkSmall, encode)
	if err != nil || u.Failed || srv.Count() != 4 {
		t.Fatalf("retry 1: %+v, %v after %d calls", u, err, srv.Count())
	}
}

func TestUnitEndpointErrors(t *testing.T) {
	t.Run("a rejected request fails the unit", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Options{})
		srv.Add(llmtest.Rule{Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "context too long"}})
		a := (&annotator.LLM{Client: annotatortest.Client(t, srv)}).Prepare(load)
		u, err := annotator.Unit(annotatortest.Context(t), a, query(t, a, 0), checkSmall, encode)
		if err != nil || !u.Failed || u.Error == "" {
			t.Fatalf("unit = %+v, %v", u, err)
		}
	})
	t.Run("a fatal error stops the run", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Options{})
		srv.Add(llmtest.Rule{Fault: llmtest.Fault{Kind: llmtest.Status, Status: 401, Message: "bad key"}})
		a := (&annotator.LLM{Client: annotatortest.Client(t, srv)}).Prepare(load)
		_, err := annotator.Unit(annotatortest.Context(t), a, query(t, a, 0), checkSmall, encode)
		if !llm.IsFatal(err) {
			t.Fatalf("err = %v, want a fatal error", err)
		}
		if _, ok := annotator.FailedUnit(2, err); ok {
			t.Error("FailedUnit took a fatal error")
		}
	})
}

// With structured output the request carries the wire type's strict schema,
// the answer is the JSON object itself, and an answer that is not one (from
// a server that ignores response_format) is asked again and then fails the
// unit with its raw text.
func TestUnitStructured(t *testing.T) {
	tests := []struct {
		name   string
		rule   llmtest.Rule
		failed bool
		calls  int
	}{
		{"good answer", llmtest.Rule{Func: annotatortest.Reply(`{"n": 3}`)}, false, 1},
		{"rejected by the check", llmtest.Rule{Func: annotatortest.Reply(`{"n": 12}`)}, true, 3},
		{"tags from a server that ignores the schema", llmtest.Rule{Fault: llmtest.Fault{Kind: llmtest.Garbled, Message: `<answer id="x">{"n": 3}</answer>`}}, true, 3},
		{"prose around the object", llmtest.Rule{Fault: llmtest.Fault{Kind: llmtest.Garbled, Message: `Sure: {"n": 3}`}}, true, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(tc.rule)
			a := (&annotator.LLM{Client: annotatortest.OutputClient(t, srv, "json_schema")}).Prepare(load)
			if !strings.HasSuffix(a.Version(), ";output=json_schema") {
				t.Errorf("Version() = %q", a.Version())
			}
			u, err := annotator.Unit(annotatortest.Context(t), a, query(t, a, 0), checkSmall, encode)
			if err != nil {
				t.Fatal(err)
			}
			if u.Failed != tc.failed || srv.Count() != tc.calls {
				t.Fatalf("unit = %+v after %d calls", u, srv.Count())
			}
			call := srv.Calls()[0]
			sc, ok := call.Request.Schema()
			if !ok || sc.Name != "test" || call.SchemaError != "" {
				t.Fatalf("schema %+v sent: %v; server said %q", sc, ok, call.SchemaError)
			}
			if b, _ := json.Marshal(sc.Schema); string(b) != `{"additionalProperties":false,"properties":{"n":{"type":"integer"}},"required":["n"],"type":"object"}` {
				t.Errorf("schema %s", b)
			}
			if !tc.failed && string(u.Output) != `{"n":3,"annotator":"llm:test-model"}` {
				t.Errorf("output %s", u.Output)
			}
			if tc.failed && u.Raw == "" {
				t.Errorf("failed unit without its raw answer: %+v", u)
			}
		})
	}
}
