package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ac3/ac3/io/wildchat"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/run/export"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
)

// replyLikePlaceholder is a conversation whose second reply is, word for
// word, Huang et al.'s ao placeholder: the user asked for it. Told apart by
// text, it would lose its weight under fc and the placeholder would keep
// one under ao; told apart by the context's structure, neither happens.
func replyLikePlaceholder() *conv.Conversation {
	return &conv.Conversation{
		ID: "sys", System: "Be brief.",
		Messages: []conv.Message{
			{Role: conv.User, Content: "user message 1"},
			{Role: conv.Assistant, Content: "assistant reply 1"},
			{Role: conv.User, Content: "reply with exactly: " + curate.HuangPlaceholder},
			{Role: conv.Assistant, Content: curate.HuangPlaceholder},
			{Role: conv.User, Content: "user message 3"},
			{Role: conv.Assistant, Content: "assistant reply 3"},
			{Role: conv.User, Content: "user message 4"},
			{Role: conv.Assistant, Content: "assistant reply 4"},
		},
	}
}

// fixtureConversations is the first conversations of the bundled WildChat
// sample with at least three user turns.
func fixtureConversations(t *testing.T, n int) []*conv.Conversation {
	t.Helper()
	f, err := os.Open("../../fixtures/wildchat/wildchat-1m-sample10.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := wildchat.NewReader(f, "wildchat-1m-sample10.jsonl")
	defer r.Close()
	var out []*conv.Conversation
	for len(out) < n {
		rec, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Conv != nil && rec.Conv.UserTurns() >= 3 {
			out = append(out, rec.Conv)
		}
	}
	if len(out) < n {
		t.Fatalf("the WildChat sample has %d conversations of 3 user turns or more, want %d", len(out), n)
	}
	return out
}

// turnTypes is a classify stage as adaptive reads it: new_ask on even
// turns, feedback on odd ones.
type turnTypes struct{}

func (turnTypes) ConversationUnits(_ context.Context, stage, convID string, turn int) ([]ledger.Unit, error) {
	var out []ledger.Unit
	for t := 1; t <= 50; t++ {
		typ := "feedback"
		if t%2 == 0 {
			typ = "new_ask"
		}
		out = append(out, ledger.Unit{Key: fmt.Sprint(convID, t), ConvID: convID, Turn: t, Variant: "llm", Status: ledger.Done,
			Output: []byte(`{"type":"` + typ + `","refs":[]}`)})
	}
	return out, nil
}

// TestSFTWeights builds the contexts of every strategy, deterministic and
// model-backed (the analyzer answered by the in-process test server), on a
// conversation made to trip text matching and on WildChat conversations,
// and checks each SFT row's weights: 1 on the target and on replies the
// dataset wrote, 0 on every assistant message a strategy wrote (ao's
// placeholder, filler, a summary, the WildChat reset's acknowledgement),
// none on other roles; with TrainTarget, 1 on the target only.
func TestSFTWeights(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	// An issue at turn 3 only: reset and gated-reset act there, then
	// continue with the logged turns.
	analyzetest.Install(srv, analyzetest.Script{
		Issues: func(turn int) string {
			if turn == 3 {
				return "the answer ignored the word limit"
			}
			return "None"
		},
		Summary: func(reply string) string { return "the assistant answered" },
	})
	an, err := analyze.New(analyzetest.Client(t, srv, nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counter, err := tokens.New("")
	if err != nil {
		t.Fatal(err)
	}
	base := curate.Options{Analyzer: an, Units: turnTypes{}}
	with := func(f func(*curate.Options)) curate.Options {
		o := base
		f(&o)
		return o
	}
	wildchatReset := with(func(o *curate.Options) { o.ResetTemplate = curate.ResetWildChat })
	// want is, per turn of replyLikePlaceholder, the weights of the
	// context's assistant messages (the target, always 1, not listed).
	for _, tc := range []struct {
		label, name string
		opts        curate.Options
		want        map[int][]int
		inserts     bool // puts assistant text of its own in some context
	}{
		{"fc", "fc", base, map[int][]int{2: {1}, 3: {1, 1}, 4: {1, 1, 1}}, false},
		{"lt", "lt", base, map[int][]int{2: {1}, 3: {1}, 4: {1}}, false},
		{"de", "de", base, map[int][]int{2: {}, 3: {}, 4: {}}, false},
		{"concat", "concat", base, map[int][]int{2: {}, 3: {}, 4: {}}, false},
		{"ao", "ao", base, map[int][]int{2: {0}, 3: {0, 0}, 4: {0, 0, 0}}, true},
		{"ao with Huang et al.'s placeholder", "ao", with(func(o *curate.Options) { o.AO = curate.HuangAO() }), map[int][]int{2: {0}, 3: {0, 0}, 4: {0, 0, 0}}, true},
		{"filler", "filler", base, map[int][]int{2: {0}, 3: {0, 0}, 4: {0, 0, 0}}, true},
		{"sum", "sum", base, map[int][]int{2: {0}, 3: {0, 0}, 4: {0, 0, 0}}, true},
		{"adaptive (ao on new_ask turns)", "adaptive", base, map[int][]int{2: {0}, 3: {1, 1}, 4: {0, 0, 0}}, true},
		{"reset", "reset", base, map[int][]int{2: {1}, 3: {}, 4: {1}}, false},
		{"reset, WildChat template", "reset", wildchatReset, map[int][]int{2: {1}, 3: {0}, 4: {0, 1}}, true},
		{"gated-reset, WildChat template", "gated-reset", wildchatReset, map[int][]int{2: {1}, 3: {0}, 4: {0, 1}}, true},
		{"rewrite", "rewrite", base, map[int][]int{2: {1}, 3: {}, 4: {1}}, false},
		{"augment", "augment", base, map[int][]int{2: {1}, 3: {1, 1}, 4: {1, 1, 1}}, false},
	} {
		t.Run(tc.label, func(t *testing.T) {
			s, err := curate.ByName(tc.name, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			convs := append([]*conv.Conversation{replyLikePlaceholder()}, fixtureConversations(t, 2)...)
			zeros := 0
			for ci, c := range convs {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				xs, err := s.Contexts(ctx, c, curate.DefaultFrom, curate.NewWorkspace(c, counter))
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range xs {
					target := -1
					for _, tr := range c.Turns() {
						if tr.Index == x.Turn {
							target = tr.Reply
						}
					}
					if target < 0 {
						continue
					}
					for _, on := range []export.TrainOn{export.TrainReplies, export.TrainTarget} {
						msgs, origins, err := export.SFTRow(c, x, target, on)
						if err != nil {
							t.Fatalf("%s turn %d: %v", c.ID, x.Turn, err)
						}
						got := checkRow(t, c, x.Turn, msgs, origins, target, on)
						for _, w := range got {
							if w == 0 {
								zeros++
							}
						}
						if ci == 0 && on == export.TrainReplies && !slices.Equal(got, tc.want[x.Turn]) {
							t.Errorf("turn %d: assistant weights %v, want %v\n%s", x.Turn, got, tc.want[x.Turn], dump(msgs, origins))
						}
					}
				}
			}
			if tc.inserts && zeros == 0 {
				t.Error("no assistant message with weight 0, but the strategy puts in assistant text of its own")
			}
		})
	}
}

// checkRow checks what holds of every SFT row and returns the weights of
// the assistant messages before the target.
func checkRow(t *testing.T, c *conv.Conversation, turn int, msgs []export.SFTMessage, origins []string, target int, on export.TrainOn) []int {
	t.Helper()
	if len(msgs) != len(origins) || len(msgs) < 2 {
		t.Fatalf("%s turn %d: %d messages, %d origins", c.ID, turn, len(msgs), len(origins))
	}
	last := msgs[len(msgs)-1]
	if last.Role != conv.Assistant || last.Content != c.Messages[target].Content || last.Weight == nil || *last.Weight != 1 ||
		origins[len(origins)-1] != fmt.Sprintf("dataset:%d", target) || msgs[len(msgs)-2].Role != conv.User {
		t.Fatalf("%s turn %d: the row does not end with the user turn, then the target with weight 1: %s", c.ID, turn, dump(msgs, origins))
	}
	ws := []int{}
	for i, m := range msgs[:len(msgs)-1] {
		if m.Role != conv.Assistant {
			if m.Weight != nil {
				t.Errorf("%s turn %d: a %s message has a weight", c.ID, turn, m.Role)
			}
			continue
		}
		if m.Weight == nil || (*m.Weight != 0 && *m.Weight != 1) {
			t.Fatalf("%s turn %d: assistant message %d has weight %v", c.ID, turn, i, m.Weight)
		}
		w := *m.Weight
		ws = append(ws, w)
		// A weighted message is a dataset reply, by where it came from.
		var ref int
		isCopy, _ := fmt.Sscanf(origins[i], "dataset:%d", &ref)
		real := isCopy == 1 && fmt.Sprintf("dataset:%d", ref) == origins[i] && c.Messages[ref].Role == conv.Assistant && c.Messages[ref].Content == m.Content
		switch {
		case w == 1 && (!real || on == export.TrainTarget):
			t.Errorf("%s turn %d: message %d (%s) has weight 1", c.ID, turn, i, origins[i])
		case w == 0 && real && on == export.TrainReplies:
			t.Errorf("%s turn %d: dataset reply %d (%s) has weight 0", c.ID, turn, i, origins[i])
		}
	}
	return ws
}

func dump(msgs []export.SFTMessage, origins []string) string {
	var b []byte
	for i, m := range msgs {
		j, _ := json.Marshal(m)
		b = fmt.Appendf(b, "  %-20s %s\n", origins[i], j)
	}
	return string(b)
}
