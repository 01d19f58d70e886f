package judge_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// The judge's prompts are laid out for providers' prompt caches (issue 33):
// one system message for every call, then the history, which all calls of a
// turn share, then what differs per call; the nonce of the verdict's tags
// comes only after both candidates.
func TestPromptLayoutSharesTheHistory(t *testing.T) {
	for _, out := range []parse.Output{parse.Tags, parse.JSONSchema} {
		t.Run(string(out), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
				if _, ok := r.Schema(); ok {
					return llmtest.JSON(map[string]any{"quality": map[string]any{"winner": "A", "justification": "j.", "confidence": 0.5}, "on_topic": map[string]any{"winner": "tie", "justification": "k.", "confidence": 0.5}})
				}
				return verdictFor("A", "tie")(r)
			}})
			units := answers{"respond/c1": {unit("x", 2, "answer X2"), unit("y", 2, "answer Y2"), unit("x", 3, "answer X3"), unit("y", 3, "answer Y3")}}
			run(t, outputStage(t, srv, units, out, judge.Options{Order: judge.OrderBoth}), testConv())
			calls := srv.Calls()
			if len(calls) != 4 {
				t.Fatalf("%d calls, want 2 turns × 2 orders", len(calls))
			}
			byTurn := map[int][]string{}
			for _, c := range calls {
				msgs := c.Request.Messages
				if len(msgs) != 2 || msgs[0].Role != "system" || msgs[0].Content != calls[0].Request.Messages[0].Content {
					t.Fatalf("the system message differs between calls:\n%s", msgs[0].Content)
				}
				if strings.Contains(msgs[0].Content, `id="`) {
					t.Errorf("the system message carries a nonce:\n%s", msgs[0].Content)
				}
				last := msgs[1].Content
				second := strings.Index(last, "=== Candidate B ===")
				if i := strings.Index(last, `id="`); i >= 0 && i < second {
					t.Errorf("a nonce before the candidates:\n%s", last)
				}
				if out == parse.Tags && !strings.Contains(last[second:], `<verdict id="`) {
					t.Errorf("the verdict's form is not after the candidates:\n%s", last)
				}
				turn := strings.Count(last, "--- user ---")
				byTurn[turn] = append(byTurn[turn], last)
			}
			for turn, prompts := range byTurn {
				history, _, _ := strings.Cut(prompts[0], "=== Candidate A ===")
				for _, p := range prompts[1:] {
					if !strings.HasPrefix(p, history) {
						t.Errorf("turn %d: the calls do not share the history as their prefix", turn)
					}
				}
			}
			// The next turn's prompts begin with this turn's history, up to
			// its last user message.
			const u2 = "Now one about snow."
			h2 := byTurn[2][0][:strings.Index(byTurn[2][0], u2)+len(u2)]
			if !strings.HasPrefix(byTurn[3][0], h2) {
				t.Errorf("turn 3 does not extend turn 2's history")
			}
		})
	}
}
