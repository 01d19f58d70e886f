package curate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
)

// sum in Huang et al.'s form: one user message per reply holding only the
// reply, the whole answer in the reply's place with no label; each reply
// is summarised once and the cache answers a second run.
func TestSumPaperForm(t *testing.T) {
	const ask = "Summarise the following assistant response in exactly one sentence: "
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Name: "empty for a2", Match: func(r llmtest.ChatRequest) bool { return strings.HasSuffix(r.Last(), ask+"a2") }, When: llmtest.FirstN(1), Reply: llmtest.Reply{Content: "  "}})
	srv.Add(llmtest.Rule{Name: "sum", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		_, reply, _ := strings.Cut(r.Last(), ask)
		return llmtest.Reply{Content: " It said\n" + reply + ". "}
	}})
	an, err := analyze.New(analyzetest.Client(t, srv, llm.NewMemCache()), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := fourTurns()
	paper := strategy(t, "sum", curate.Options{Analyzer: an, Sum: curate.SumPaper})
	ours := strategy(t, "sum", curate.Options{Analyzer: an})
	if paper.Version() == ours.Version() || !strings.HasPrefix(paper.Version(), "paper-") {
		t.Errorf("versions %q and %q", paper.Version(), ours.Version())
	}
	want := "system:Be brief.|user:u1|assistant:It said a1.|user:u2|assistant:It said a2.|user:u3|assistant:It said a3.|user:u4|"
	for run := 1; run <= 2; run++ {
		xs := curateAll(t, paper, c, 2)
		if got := rendered(c, xs[len(xs)-1]); got != want {
			t.Errorf("run %d: %q\nwant %q", run, got, want)
		}
	}
	// Three replies, one asked twice (its first answer was empty); the
	// second run asked nothing.
	if n := srv.Count(); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
	for _, call := range srv.Calls() {
		m := call.Request.Messages
		if len(m) != 1 || m[0].Role != "user" || !strings.HasPrefix(strings.TrimSpace(m[0].Content), ask) {
			t.Fatalf("request %+v, want one user message asking for one sentence", m)
		}
	}
	if _, err := curate.ParseSumForm("long"); err == nil {
		t.Error("an unknown sum form was accepted")
	}

	// A reply whose summary stays empty fails its turn, not the run.
	bad := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: " "}})
	an2, err := analyze.New(analyzetest.Client(t, bad, llm.NewMemCache()), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = curateCtx(t, strategy(t, "sum", curate.Options{Analyzer: an2, Sum: curate.SumPaper}), c, curate.NewWorkspace(c, counter(t)))
	var te *curate.TurnError
	if !errors.As(err, &te) || te.Turn != 2 || !errors.Is(err, analyze.ErrEmptySummary) {
		t.Errorf("an empty summary: %v, want a failure of turn 2", err)
	}
}
