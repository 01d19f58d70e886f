package analyze_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt/prompttest"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

// The rewrite and summary prompts are laid out for providers' prompt
// caches (issue 33): every instruction in one system message, the same for
// every call; then the request's own material, the conversation oldest
// message first for the rewrite; the nonce of the answer's form only at the
// end. A later turn's rewrite then begins with an earlier turn's whole
// conversation.
func TestRewriteLayoutSharesTheConversation(t *testing.T) {
	for _, out := range []parse.Output{parse.Tags, parse.JSONSchema} {
		for _, v := range analyze.RewriteVariants() {
			t.Run(string(out)+"/"+string(v), func(t *testing.T) {
				srv := llmtest.New(t, llmtest.Options{})
				analyzetest.Install(srv, analyzetest.Script{})
				a := outputAnalyzer(t, srv, out, analyze.Options{})
				c := markedConversation()
				for _, turn := range []int{2, 3} {
					ct, _ := c.ContextBefore(turn)
					if _, _, err := a.Rewrite(timeout(t), v, rewriteAnalysis, ct, 0); err != nil {
						t.Fatal(err)
					}
				}
				calls := srv.Calls()
				if len(calls) != 2 {
					t.Fatalf("%d calls, want 2", len(calls))
				}
				m2, m3 := calls[0].Request.Messages, calls[1].Request.Messages
				if len(m2) != 2 || len(m3) != 2 || m2[0].Role != "system" || m2[0] != m3[0] {
					t.Fatal("the two turns' calls do not share one system message")
				}
				if strings.Contains(m2[0].Content, `id="`) || !strings.Contains(m2[0].Content, "neutral briefing") && !strings.Contains(m2[0].Content, "not to do the assistant's work") && !strings.Contains(m2[0].Content, "Never suggest asking the user for clarification") {
					t.Errorf("the system message carries a nonce or lacks the instructions:\n%s", m2[0].Content)
				}
				u2, u3 := m2[1].Content, m3[1].Content
				// Turn 2's prompt up to the end of its conversation (its
				// last user message) begins turn 3's.
				end := strings.LastIndex(u2, "</message>") + len("</message>")
				if end < len("</message>") || !strings.HasPrefix(u3, u2[:end]) {
					t.Errorf("turn 3's prompt does not begin with turn 2's conversation:\n%s\n---\n%s", u2, u3)
				}
				for _, u := range []string{u2, u3} {
					rest := u[strings.LastIndex(u, "</message>"):]
					if i := strings.Index(u, `id="`); i >= 0 && i < strings.LastIndex(u, "</message>") {
						t.Errorf("a nonce before the end of the conversation:\n%s", u)
					}
					if !strings.Contains(rest, "<specification>") {
						t.Errorf("the review does not follow the conversation:\n%s", u)
					}
				}
			})
		}
	}
}

// Every summary call shares the system message, which holds all the
// instructions; what differs per call follows it, and the answer's nonce
// comes after the reply.
func TestSummaryLayout(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, analyzetest.Script{})
	a := newAnalyzer(t, srv, analyze.Options{})
	c := markedConversation()
	for _, p := range [][2]int{{0, 1}, {2, 3}} {
		if _, _, err := a.Summarize(timeout(t), c.Messages[p[0]].Content, c.Messages[p[1]].Content, 0); err != nil {
			t.Fatal(err)
		}
	}
	calls := srv.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	m1, m2 := calls[0].Request.Messages, calls[1].Request.Messages
	if len(m1) != 2 || m1[0] != m2[0] || m1[0].Role != "system" {
		t.Fatal("the summary calls do not share one system message")
	}
	if sys := m1[0].Content; strings.Contains(sys, `id="`) || !strings.Contains(sys, "Do not judge it") {
		t.Errorf("the system message carries a nonce or lacks the instructions:\n%s", sys)
	}
	for _, m := range [][]llmtest.Message{m1, m2} {
		u := m[1].Content
		if i, end := strings.Index(u, `id="`), strings.Index(u, "</assistant_reply>"); i >= 0 && i < end || end < 0 {
			t.Errorf("the answer's nonce is not after the reply:\n%s", u)
		}
	}
	var msgs []conv.Message
	for _, m := range m1 {
		msgs = append(msgs, conv.Message{Role: conv.Role(m.Role), Content: m.Content})
	}
	prompttest.Golden(t, "testdata/golden/summary.txt", msgs)
}
