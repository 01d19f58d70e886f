package classify_test

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/classify"
)

func TestEvaluateCountsAbstentions(t *testing.T) {
	ex := func(id, typ string) classify.Example {
		return classify.Example{ID: id, Split: classify.Test, Type: typ, Turn: 2, Refs: []string{}, Messages: []conv.Message{
			{Role: conv.User, Content: "a"}, {Role: conv.Assistant, Content: "b"}, {Role: conv.User, Content: id}}}
	}
	set := []classify.Example{
		ex("n1", classify.NewAsk), ex("n2", classify.NewAsk), ex("n3", classify.NewAsk), ex("n4", classify.NewAsk),
		ex("f1", classify.Feedback), ex("f2", classify.Feedback),
		ex("b1", classify.NoFeedback), ex("b2", classify.NoFeedback),
	}
	// answers maps the turn's text (its id) to the label's type.
	labeller := func(answers map[string]string) func(c *conv.Conversation, t int) classify.Label {
		return func(c *conv.Conversation, t int) classify.Label {
			u, _ := c.UserTurn(t)
			return classify.Label{Type: answers[u.Content], Refs: []string{}}
		}
	}
	nan := math.NaN()
	tests := []struct {
		name    string
		answers map[string]string
		want    classify.Scores
	}{
		{"all right", map[string]string{"n1": "new_ask", "n2": "new_ask", "n3": "new_ask", "n4": "new_ask", "f1": "feedback", "f2": "feedback", "b1": "no_feedback", "b2": "no_feedback"},
			classify.Scores{N: 8, Labelled: 8, Coverage: 1, Accuracy: 1, MacroF1: 1, MajorityRate: 0.5, MajorityRateLabelled: 0.5}},
		{"abstains on half, right where it answers", map[string]string{"n1": "new_ask", "n2": "unknown", "n3": "unknown", "n4": "unknown", "f1": "feedback", "f2": "unknown", "b1": "no_feedback", "b2": "no_feedback"},
			classify.Scores{N: 8, Labelled: 4, Coverage: 0.5, Accuracy: 1, MacroF1: 1, MajorityRate: 0.5, MajorityRateLabelled: 0.5}},
		{"answers only the majority class", map[string]string{"n1": "new_ask", "n2": "new_ask", "n3": "new_ask", "n4": "new_ask", "f1": "unknown", "f2": "unknown", "b1": "unknown", "b2": "unknown"},
			// F1 of the two classes never predicted nor present is undefined and counts 0.
			classify.Scores{N: 8, Labelled: 4, Coverage: 0.5, Accuracy: 1, MacroF1: 1.0 / 3, MajorityRate: 0.5, MajorityRateLabelled: 1}},
		{"always new_ask", map[string]string{"n1": "new_ask", "n2": "new_ask", "n3": "new_ask", "n4": "new_ask", "f1": "new_ask", "f2": "new_ask", "b1": "new_ask", "b2": "new_ask"},
			classify.Scores{N: 8, Labelled: 8, Coverage: 1, Accuracy: 0.5, MacroF1: (2.0 / 3) / 3, MajorityRate: 0.5, MajorityRateLabelled: 0.5}},
		{"abstains on everything", map[string]string{},
			classify.Scores{N: 8, Labelled: 0, Coverage: 0, Accuracy: nan, MacroF1: nan, MajorityRate: 0.5, MajorityRateLabelled: nan}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answers := map[string]string{}
			for _, e := range set {
				answers[e.ID] = classify.Unknown
			}
			for k, v := range tc.answers {
				answers[k] = v
			}
			s := classify.Evaluate(set, classify.Test, labeller(answers))
			w := tc.want
			if s.N != w.N || s.Labelled != w.Labelled || len(s.Abstained) != w.N-w.Labelled {
				t.Errorf("N %d labelled %d abstained %d, want %d %d", s.N, s.Labelled, len(s.Abstained), w.N, w.Labelled)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"coverage", s.Coverage, w.Coverage}, {"accuracy", s.Accuracy, w.Accuracy}, {"macro-F1", s.MacroF1, w.MacroF1},
				{"majority rate", s.MajorityRate, w.MajorityRate}, {"majority rate on labelled", s.MajorityRateLabelled, w.MajorityRateLabelled}} {
				if !(math.IsNaN(f.got) && math.IsNaN(f.want)) && math.Abs(f.got-f.want) > 1e-9 {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
		})
	}
}

func TestReadConversationSet(t *testing.T) {
	f, err := os.Open("../../fixtures/labelled/classify-wildchat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ex, err := classify.ReadConversationSet(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 131 {
		t.Fatalf("%d labelled turns, want 131", len(ex))
	}
	convs := map[string]string{}
	for _, e := range ex {
		// Splits are by conversation: no conversation in both.
		id := strings.Split(e.ID, "/")[0]
		if s, ok := convs[id]; ok && s != e.Split {
			t.Errorf("%s is in both splits", id)
		}
		convs[id] = e.Split
		// Each example ends at its turn.
		c := e.Conversation()
		if c.UserTurns() != e.Turn || c.Messages[len(c.Messages)-1].Role != conv.User {
			t.Errorf("%s: messages end at user turn %d, want %d", e.ID, c.UserTurns(), e.Turn)
		}
	}

	line := func(split, labels string) string {
		return `{"id":"x","conversation_hash":"h","split":"` + split + `","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}],"labels":[` + labels + `]}`
	}
	for _, tc := range []struct{ name, in, want string }{
		{"unknown split", line("train", `{"turn":2,"lang":"en","type":"new_ask","refs":[]}`), "split"},
		{"unknown is not a gold type", line("dev", `{"turn":2,"lang":"en","type":"unknown","refs":[]}`), "type"},
		{"no language", line("dev", `{"turn":2,"type":"new_ask","refs":[]}`), "lang"},
		{"turn 1", line("dev", `{"turn":1,"lang":"en","type":"new_ask","refs":[]}`), "turn 1"},
		{"no such turn", line("dev", `{"turn":3,"lang":"en","type":"new_ask","refs":[]}`), "turn 3"},
		{"labelled twice", line("dev", `{"turn":2,"lang":"en","type":"new_ask","refs":[]},{"turn":2,"lang":"en","type":"feedback","refs":["1a"]}`), "twice"},
		{"ref before the start", line("dev", `{"turn":2,"lang":"en","type":"feedback","refs":["2a"]}`), "2a"},
		{"no labels", line("dev", ``), "no labels"},
		{"not JSON", `{"id":`, "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := classify.ReadConversationSet(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// FuzzReadConversationSet: any input is read or refused, never a panic,
// and what is read holds turns that exist.
func FuzzReadConversationSet(f *testing.F) {
	f.Add(`{"id":"x","split":"dev","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}],"labels":[{"turn":2,"lang":"en","type":"feedback","refs":["1a"]}]}`)
	f.Add(`{"id":"x","split":"test","messages":[],"labels":[{"turn":2}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		ex, err := classify.ReadConversationSet(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, e := range ex {
			if _, ok := e.Conversation().UserTurn(e.Turn); !ok {
				t.Fatalf("%s: no turn %d", e.ID, e.Turn)
			}
		}
	})
}

func TestSummarizeCountsUnknown(t *testing.T) {
	unit := func(conv string, turn int, typ string, refs ...string) ledger.Unit {
		if refs == nil {
			refs = []string{}
		}
		b, err := classify.Label{Type: typ, Refs: refs, Annotator: "heuristic"}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return ledger.Unit{ConvID: conv, Turn: turn, Status: "done", Output: b}
	}
	summarize := func(units ...ledger.Unit) classify.Summary {
		z := classify.NewSummarizer()
		for _, u := range units {
			z.Add(u)
		}
		return z.Summary()
	}
	s := summarize(unit("a", 2, classify.NewAsk), unit("a", 3, classify.Unknown), unit("b", 2, classify.Feedback, "1a"), unit("b", 3, classify.Unknown))
	if s.Turns != 4 || s.Failed != 0 || s.SelfContained != 1 {
		t.Errorf("summary = %+v", s)
	}
	if len(s.Types) != 4 || s.Types[3].Type != classify.Unknown || s.Types[3].Count != 2 || s.Types[3].Share != 0.5 {
		t.Errorf("types = %+v, want the three types then unknown 2 of 4", s.Types)
	}
	if s := summarize(unit("a", 2, classify.NewAsk)); len(s.Types) != 3 {
		t.Errorf("types = %+v, want no unknown row when nothing was left unknown", s.Types)
	}
}

func TestDecodeAcceptsUnknown(t *testing.T) {
	l, err := classify.Decode([]byte(`{"type":"unknown","confidence":0,"reason":"not English","refs":[],"annotator":"heuristic"}`))
	if err != nil || l.Type != classify.Unknown {
		t.Errorf("Decode = %+v, %v", l, err)
	}
	for _, typ := range classify.Types() {
		if typ == classify.Unknown {
			t.Error("Types lists unknown")
		}
	}
}
