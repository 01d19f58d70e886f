package llm_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// A stage whose answers fail to parse at a high rate is reported once,
// early, with the start of a raw answer; a stage whose failures are rare
// or come only after its first answers is not.
func TestParseFailuresWarnEarly(t *testing.T) {
	long := "I refuse to use your tags. " + strings.Repeat("blah ", 200)
	tests := []struct {
		name     string
		bad      func(i int) bool // answer i (0-based) does not parse
		wantWarn bool
		atAnswer int
	}{
		{"every answer bad", func(int) bool { return true }, true, 5},
		{"5 of the first 20", func(i int) bool { return i%4 == 0 }, true, 17},
		{"4 of the first 20", func(i int) bool { return i%5 == 0 && i < 20 }, false, 0},
		{"bad only after the first 20", func(i int) bool { return i >= 20 }, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, llmtest.Options{}, nil, nil)
			h.srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
				var i int
				fmt.Sscanf(r.Last(), "unit %d", &i)
				if tc.bad(i) {
					return llmtest.Reply{Content: long}
				}
				return llmtest.Reply{Content: "GOOD"}
			}})
			parser := func(r llm.Response) (string, error) {
				if r.Text != "GOOD" {
					return "", errors.New("missing tagged section(s): answer")
				}
				return r.Text, nil
			}
			for i := range 30 {
				req := llm.Request{Role: "annotator", Stage: "classify", Messages: []conv.Message{{Role: conv.User, Content: fmt.Sprintf("unit %d", i)}}}
				_, _, _ = llm.CallParsed(testCtx(t, 5*time.Second), h.client, req, 0, parser)
			}
			// Another stage's answers are counted apart.
			other := llm.Request{Role: "judge", Stage: "judge", Messages: []conv.Message{{Role: conv.User, Content: "unit 1"}}}
			_, _, _ = llm.CallParsed(testCtx(t, 5*time.Second), h.client, other, 0, parser)
			var warns []llm.Event
			for _, ev := range h.Events() {
				if ev.Kind == llm.EventParseFailures {
					warns = append(warns, ev)
				}
			}
			if !tc.wantWarn {
				if len(warns) != 0 {
					t.Fatalf("warned: %+v", warns)
				}
				return
			}
			if len(warns) != 1 {
				t.Fatalf("%d warnings, want 1: %+v", len(warns), warns)
			}
			w := warns[0]
			if w.Stage != "classify" || w.Role != "annotator" || w.Failures != 5 || w.Answers != tc.atAnswer || w.Endpoint != "test" {
				t.Errorf("warning %+v", w)
			}
			if !strings.HasPrefix(w.Example, "I refuse to use your tags.") || len(w.Example) > 340 || !strings.Contains(w.Example, "more bytes") {
				t.Errorf("example %q", w.Example)
			}
			if !strings.Contains(w.Err, "missing tagged section") {
				t.Errorf("err %q", w.Err)
			}
		})
	}
}
