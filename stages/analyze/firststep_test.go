package analyze_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

// TestFirstStepIsTheAnalysisFirstCall checks that FirstStep sends the
// request Analyze sends first (so the analysis then finds it answered and
// asks only what reads the cheatsheet), that the real analyzer's first step
// still carries no assistant text, and Depth.
func TestFirstStepIsTheAnalysisFirstCall(t *testing.T) {
	for _, c := range []struct {
		name     string
		ablation analyze.Ablation
		kind     string // of FirstStep's request
		depth    int
		sees     bool // FirstStep's request may carry assistant text
	}{
		{name: "step 1 of the real analyzer", ablation: analyze.NoAblation, kind: analyzetest.KindSpec, depth: 2},
		{name: "the contagious extractor", ablation: analyze.AblationContagiousExtractor, kind: analyzetest.KindContagious, depth: 2, sees: true},
		{name: "the single pass", ablation: analyze.AblationSinglePass, kind: analyzetest.KindSingle, depth: 1, sees: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			analyzetest.Install(srv, analyzetest.Script{})
			a := newAnalyzer(t, srv, analyze.Options{Ablation: c.ablation})
			if a.Depth() != c.depth {
				t.Errorf("Depth() = %d, want %d", a.Depth(), c.depth)
			}
			mc := markedConversation()
			if _, err := a.FirstStep(timeout(t), mc, 3, 0); err != nil {
				t.Fatal(err)
			}
			calls := srv.Calls()
			if len(calls) != 1 || analyzetest.Kind(calls[0].Request) != c.kind {
				t.Fatalf("FirstStep sent %d requests; want one of kind %s", len(calls), c.kind)
			}
			if !c.sees && strings.Contains(string(calls[0].Body), marker) {
				t.Errorf("the first step's request carries assistant text:\n%s", calls[0].Body)
			}
			if _, _, err := a.Analyze(timeout(t), mc, 3, "a cheatsheet", 0); err != nil {
				t.Fatal(err)
			}
			if n := srv.Count() - 1; n != c.depth-1 {
				t.Errorf("the analysis after FirstStep sent %d requests, want %d", n, c.depth-1)
			}
		})
	}
}
