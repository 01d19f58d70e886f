package analyze_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
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
	traj := []analyze.TurnAnalysis{{Turn: 2, Analysis: analyze.Analysis{Spec: "s", Aligned: "a", Issues: "wrong unit"}}}
	next, takeaways, use, err := a.Absorb(timeout(t), traj, "old notes")
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
