package run_test

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

// 'ac3 inspect' shows, below a turn's contexts, the answers respond
// generated from them and the judge's verdicts on the turn, each call in
// the order it was asked, with its reasoning.
func TestInspectShowsAnswersAndVerdicts(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Name: "judge", SystemContains: "two candidate replies", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Content: fmt.Sprintf(`<verdict id="%s">{"quality": {"winner": "A", "justification": "Candidate A keeps the user's format.", "confidence": 0.8}, "on_topic": {"winner": "tie", "justification": "Both stay on the thread."}}</verdict>`, r.Nonce("verdict"))}
	}})
	// Each strategy's answer names its context, so the judge is asked.
	srv.Add(llmtest.Rule{Name: "respondent", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		for _, m := range r.Messages {
			if m.Role == "assistant" && strings.Contains(m.Content, "omitted") {
				return llmtest.Reply{Content: "Answered without the earlier replies."}
			}
		}
		return llmtest.Reply{Content: "Answered with the whole conversation."}
	}})
	dir := t.TempDir()
	plan := run.Plan{
		DB:       filepath.Join(dir, "run.db"),
		Model:    run.Model{Options: &llm.Options{Endpoints: []llm.Endpoint{{Name: "m", BaseURL: srv.URL, Model: "m"}}}},
		Ingest:   &run.Ingest{Files: []string{sample}, Format: "auto", MaxLineBytes: 1 << 20, Filter: run.Filter{MinUserTurns: 2}},
		Annotate: &run.Annotate{Classify: run.Heuristic},
		Curate:   &run.Curate{Strategies: []string{"fc", "ao"}},
		Respond:  &run.Respond{Strategies: []string{"fc", "ao"}},
		Judge:    &run.Judge{Pairs: []string{"fc:ao"}, Order: judge.OrderBoth},
	}
	if _, err := run.Execute(ctx(t), plan, run.Options{}); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx(t), plan.DB, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	plans, err := l.Plans(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	var turn int
	err = l.Units(ctx(t), judge.StageName, plans[judge.StageName], 0, math.MaxInt64, func(u ledger.Unit) error {
		if id == "" && u.Status == ledger.Done {
			id, turn = u.ConvID, u.Turn
		}
		return nil
	})
	if err != nil || id == "" {
		t.Fatalf("no judged turn (%v)", err)
	}
	var out bytes.Buffer
	if err := run.Inspect(ctx(t), &out, l, id, turn, nil, 160); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"══ generated answers", "fc · sample 0", "ao · sample 0", "Answered with the whole conversation.", "Answered without the earlier replies.",
		"══ judge verdicts", "fc:ao (A = fc, B = ao)", "quality: tie (the two orders disagree)",
		"fc shown first → fc won: Candidate A keeps the user's format.",
		"ao shown first → ao won: Candidate A keeps the user's format.",
		"on_topic: tie\n", "fc shown first → tie: Both stay on the thread.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect lacks %q:\n%s", want, out.String())
		}
	}
	// Narrowed to one strategy, the other's answers are left out.
	out.Reset()
	if err := run.Inspect(ctx(t), &out, l, id, turn, []string{"ao"}, 160); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "fc · sample 0") || !strings.Contains(out.String(), "ao · sample 0") {
		t.Errorf("inspect --strategies ao:\n%s", out.String())
	}
}
