package analyze_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/prompt/prompttest"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

func TestAbsorbReflectsThenUnifiesWithinTheCap(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, analyzetest.Script{
		Takeaways:  func(int) string { return "- check units" },
		Cheatsheet: func(int) string { return strings.Repeat("word ", analyze.MaxCheatsheetWords+300) },
	})
	a := newAnalyzer(t, srv, analyze.Options{})
	tr := analyze.Trajectory{Steps: []analyze.Step{{TurnAnalysis: analyze.TurnAnalysis{Turn: 2, Analysis: analyze.Analysis{Spec: "s", Aligned: "a", Issues: "wrong unit"}}}}}
	next, takeaways, use, err := a.Absorb(timeout(t), tr, "old notes")
	if err != nil {
		t.Fatal(err)
	}
	if takeaways != "- check units" || len(strings.Fields(next)) != analyze.MaxCheatsheetWords || use.Calls != 2 {
		t.Errorf("Absorb = %d words, takeaways %q, %d calls", len(strings.Fields(next)), takeaways, use.Calls)
	}
	var kinds []string
	for _, c := range srv.Calls() {
		kinds = append(kinds, analyzetest.Kind(c.Request))
		if !strings.Contains(c.Request.Last(), "old notes") {
			t.Errorf("%s call was not given the current cheatsheet", analyzetest.Kind(c.Request))
		}
	}
	if strings.Join(kinds, ",") != "reflect,unify" {
		t.Errorf("calls %v, want reflect then unify", kinds)
	}
}

// Trace analyzes each turn from `from`, and the steps carry the user
// message, the logged reply (cut when long) and the decision.
func TestTraceBuildsTheTrajectory(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, analyzetest.Script{Issues: func(t int) string {
		if t == 3 {
			return "The replies answered in Python."
		}
		return "None"
	}})
	a := newAnalyzer(t, srv, analyze.Options{})
	c := markedConversation()
	c.Messages[3].Content = strings.Repeat("x", analyze.MaxStepChars+10)
	tr, use, err := a.Trace(timeout(t), c, 2, "", func(ta analyze.TurnAnalysis) bool { return ta.HasIssues() })
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Steps) != 2 || use.Calls != 4 {
		t.Fatalf("%d steps with %d calls, want 2 steps of two calls each", len(tr.Steps), use.Calls)
	}
	s2, s3 := tr.Steps[0], tr.Steps[1]
	if s2.Turn != 2 || s2.User != c.Messages[2].Content || s2.Edit || s3.Turn != 3 || !s3.Edit || s3.User != c.Messages[5].Content {
		t.Errorf("steps %+v / %+v", s2, s3)
	}
	if !strings.HasPrefix(s2.Reply, "xxx") || !strings.HasSuffix(s2.Reply, "[... 10 more characters not shown]") {
		t.Errorf("a long reply is not cut: ...%q", s2.Reply[len(s2.Reply)-50:])
	}
	if s3.Reply != c.Messages[6].Content {
		t.Errorf("reply of turn 3: %q", s3.Reply)
	}
}

// reflectTrajectory is the trajectory of the reflection golden file.
func reflectTrajectory() analyze.Trajectory {
	return analyze.Trajectory{
		Outcome: "gated-reset against ao, judged on quality at 2 turns: won 1, lost 1, tied 0",
		Steps: []analyze.Step{
			{
				TurnAnalysis: analyze.TurnAnalysis{Turn: 2, Analysis: analyze.Analysis{Spec: "A Go function Sum(xs []int) int64.", Aligned: "Nothing yet.", Issues: "The reply was in Python."}},
				User:         "No, I said Go. Also it must return int64.", Reply: "Sorry. func Sum(xs []int) int { ... }",
				Edit: true, Outcome: "judge on quality: gated-reset's reply won against ao's",
			},
			{
				TurnAnalysis: analyze.TurnAnalysis{Turn: 3, Analysis: analyze.Analysis{Spec: "A Go function Sum(xs []int) int64, with a test.", Aligned: "The loop over xs.", Issues: "None"}},
				User:         "Still int, not int64. Add a test too.", Reply: "Final version with a test.",
				Edit: false, Outcome: "judge on quality: gated-reset's reply lost against ao's",
			},
		},
	}
}

// The reflection prompt shows the trajectory: messages, reviews, decisions
// and outcomes, in turn order.
func TestReflectPromptGolden(t *testing.T) {
	for _, tc := range []struct{ name, cheatsheet string }{{"reflect_offline", ""}, {"reflect_online", "- Check the return type the user asked for."}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			analyzetest.Install(srv, analyzetest.Script{})
			a := newAnalyzer(t, srv, analyze.Options{})
			if _, _, err := a.Reflect(timeout(t), reflectTrajectory(), tc.cheatsheet); err != nil {
				t.Fatal(err)
			}
			req := srv.Calls()[0].Request
			for _, want := range []string{"Decision: EDIT", "Decision: NO EDIT", "won against", "lost against", "won 1, lost 1", "No, I said Go.", "Final version with a test."} {
				if !strings.Contains(req.Last(), want) {
					t.Errorf("the reflection prompt lacks %q", want)
				}
			}
			var msgs []conv.Message
			for _, m := range req.Messages {
				msgs = append(msgs, conv.Message{Role: conv.Role(m.Role), Content: m.Content})
			}
			prompttest.Golden(t, "testdata/golden/"+tc.name+".txt", msgs)
		})
	}
}

// Consolidate makes one unify call over every reflection's takeaways, from
// no cheatsheet, and refuses more than one call can read.
func TestConsolidateIsOneCallOverAllTakeaways(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, analyzetest.Script{})
	a := newAnalyzer(t, srv, analyze.Options{})
	var tks []string
	for i := range 4 {
		tks = append(tks, "- lesson "+strconv.Itoa(i))
	}
	tks = append(tks, "  ")
	sheet, use, err := a.Consolidate(timeout(t), tks)
	if err != nil {
		t.Fatal(err)
	}
	if sheet != "cheatsheet version 1" || use.Calls != 1 || len(srv.Calls()) != 1 {
		t.Fatalf("consolidation %q with %d calls", sheet, use.Calls)
	}
	last := srv.Calls()[0].Request.Last()
	if !strings.Contains(last, "There is no cheatsheet yet") || !strings.Contains(last, "From conversation 4:\n- lesson 3") || strings.Contains(last, "From conversation 5") {
		t.Errorf("consolidation prompt:\n%s", last)
	}
	if s, use, err := a.Consolidate(timeout(t), []string{"", " "}); s != "" || use.Calls != 0 || err != nil {
		t.Errorf("nothing to consolidate: %q, %d calls, %v", s, use.Calls, err)
	}
	big := []string{strings.Repeat("word ", analyze.MaxConsolidationWords+1)}
	if _, _, err := a.Consolidate(timeout(t), big); err == nil || !strings.Contains(err.Error(), "fewer conversations") {
		t.Errorf("too much to consolidate: %v", err)
	}
}
