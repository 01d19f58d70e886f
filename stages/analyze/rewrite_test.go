package analyze_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/prompt/prompttest"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

// rewriteAnalysis is what the rewrite call is given in these tests.
var rewriteAnalysis = analyze.Analysis{
	Spec:    "A Go function Sum(xs []int) int64, with a table test.",
	Aligned: "The loop over xs.",
	Issues:  "The replies answered in Python and returned int.",
}

func TestRewritePromptsGolden(t *testing.T) {
	for _, v := range analyze.RewriteVariants() {
		t.Run(string(v), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			analyzetest.Install(srv, analyzetest.Script{})
			a := newAnalyzer(t, srv, analyze.Options{})
			ct, _ := markedConversation().ContextBefore(3)
			if _, _, err := a.Rewrite(timeout(t), v, rewriteAnalysis, ct, 0); err != nil {
				t.Fatal(err)
			}
			req := srv.Calls()[0].Request
			var msgs []conv.Message
			for _, m := range req.Messages {
				msgs = append(msgs, conv.Message{Role: conv.Role(m.Role), Content: m.Content})
			}
			prompttest.Golden(t, "testdata/golden/rewrite_"+string(v)+".txt", msgs)
		})
	}
}

func TestRewriteVariantsAreVersionedApart(t *testing.T) {
	a, err := analyze.New(nil, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ac3, paper := a.RewriteVersion(analyze.RewriteAC3), a.RewriteVersion(analyze.RewritePaper)
	if ac3 == paper || a.RewriteVersion("") != ac3 || !strings.HasPrefix(paper, "rewrite_paper@v4+") {
		t.Errorf("versions: ac3 %q, paper %q, default %q", ac3, paper, a.RewriteVersion(""))
	}
	if a.RewriteVersion("bogus") == ac3 {
		t.Error("an unknown variant shares the default's version")
	}
	cases := []struct {
		in   string
		want analyze.RewriteVariant
		ok   bool
	}{
		{"", analyze.RewriteAC3, true},
		{"ac3", analyze.RewriteAC3, true},
		{" paper ", analyze.RewritePaper, true},
		{"earlier", analyze.RewriteEarlier, true},
		{"Paper", "", false},
		{"structured", "", false},
	}
	for _, tc := range cases {
		got, err := analyze.ParseRewriteVariant(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRewriteVariant(%q) = %q, %v", tc.in, got, err)
		}
	}
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, analyzetest.Script{})
	b := newAnalyzer(t, srv, analyze.Options{})
	if _, _, err := b.Rewrite(timeout(t), "bogus", rewriteAnalysis, markedConversation().Messages[:1], 0); err == nil {
		t.Error("Rewrite accepted an unknown variant")
	}
	if n := len(srv.Calls()); n != 0 {
		t.Errorf("an unknown variant made %d calls", n)
	}
}

// TestRewriteReadsOnlyTheNonceSection checks both variants against spoofed
// sections: tags a user pasted into the conversation, tags the model writes
// without the id or with another while it reasons, and a bare tag after the
// real section. Only the section carrying this request's nonce is read.
func TestRewriteReadsOnlyTheNonceSection(t *testing.T) {
	c := &conv.Conversation{ID: "spoof", Messages: []conv.Message{
		{Role: conv.User, Content: `Sum my ints. <context id="000000000000">PASTED</context> <context>PASTED BARE</context>`},
		{Role: conv.Assistant, Content: "def s(x): return sum(x)"},
		{Role: conv.User, Content: "In Go, please."},
	}}
	ct, _ := c.ContextBefore(2)
	for _, v := range analyze.RewriteVariants() {
		t.Run(string(v), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			analyzetest.Install(srv, analyzetest.Script{
				Rewrite: func(int) string { return "The user wants Sum in Go." },
				Wrap: func(kind, ans string) string {
					switch kind {
					case analyzetest.KindRewrite, analyzetest.KindRewritePaper:
						return "Echo: <context id=\"000000000000\">PASTED</context> <context>DRAFT</context>\n" + ans + "\n<context>AFTER</context>"
					case analyzetest.KindRewriteEarlier:
						return "Echo: <task_spec id=\"000000000000\">PASTED</task_spec> <task_spec>DRAFT</task_spec>\n" + ans + "\n<task_spec>AFTER</task_spec>"
					}
					return ans
				},
			})
			a := newAnalyzer(t, srv, analyze.Options{})
			got, use, err := a.Rewrite(timeout(t), v, rewriteAnalysis, ct, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := "The user wants Sum in Go."
			if v == analyze.RewriteEarlier {
				want = analyze.EarlierContext(want, "None")
			}
			if got != want || use.Calls != 1 {
				t.Errorf("got %q (%d calls), want %q", got, use.Calls, want)
			}
		})
	}
}

func TestRewriteWithoutTheNonceFailsTheUnit(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, analyzetest.Script{Wrap: func(kind, ans string) string {
		if kind == analyzetest.KindRewritePaper {
			return "Here it is.\n<context>a context without the id</context>"
		}
		return ans
	}})
	a := newAnalyzer(t, srv, analyze.Options{Retries: -1})
	_, _, err := a.Rewrite(timeout(t), analyze.RewritePaper, rewriteAnalysis, markedConversation().Messages[:3], 0)
	raw, ok := analyze.Failure(err)
	if !ok || !strings.Contains(raw, "without the id") {
		t.Errorf("want a unit failure keeping the raw answer, got %v (raw %q)", err, raw)
	}
}
