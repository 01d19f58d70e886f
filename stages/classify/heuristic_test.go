package classify_test

import (
	"os"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/classify"
)

// convOf builds a two-round conversation whose second user turn is text,
// after an assistant reply prev.
func convOf(prev, text string) *conv.Conversation {
	return &conv.Conversation{ID: "c", Messages: []conv.Message{
		{Role: conv.User, Content: "Tell me about the history of tea in England."},
		{Role: conv.Assistant, Content: prev},
		{Role: conv.User, Content: text},
	}}
}

const longAnswer = "Tea reached England in the seventeenth century. It was first sold in coffee houses in London, " +
	"and it became fashionable at court after Catherine of Braganza brought the habit from Portugal. " +
	"Over the next century taxes kept it expensive, which encouraged smuggling, until the tax cut of 1784 made it an everyday drink."

func TestHeuristic(t *testing.T) {
	h := classify.NewHeuristic()
	tests := []struct {
		name, prev, text, want string
	}{
		// feedback
		{"error report", longAnswer, "It still doesn't work, I get a KeyError on line 3.", classify.Feedback},
		{"do it another way", longAnswer, "Use a for loop instead of recursion.", classify.Feedback},
		{"restated instruction", longAnswer, "No, I said three paragraphs, not five.", classify.Feedback},
		{"too long", longAnswer, "Too long and too formal. Keep it to two lines.", classify.Feedback},
		{"edit a part of the answer", longAnswer, "can you replace page 6 with something else?", classify.Feedback},
		{"an edit command on its own", longAnswer, "change the ending", classify.Feedback},
		{"rejects the answer", longAnswer, "not good, try again", classify.Feedback},
		{"dislikes a part without an apostrophe", longAnswer, "i dont like the title", classify.Feedback},
		{"what the answer did, but", longAnswer, "You used a dict, but my keys are lists. Something else please.", classify.Feedback},
		{"a complaint quoted in pasted text is not read, but the user's own is", longAnswer,
			"This is wrong again. Here is what I ran:\n```\nerror: undefined x\n```", classify.Feedback},
		// no_feedback
		{"continue", longAnswer, "continue", classify.NoFeedback},
		{"follow-up on a point", longAnswer, "Can you give an example for the second one?", classify.NoFeedback},
		{"adds information", longAnswer, "By the way, my budget is 500 euros.", classify.NoFeedback},
		{"thanks", longAnswer, "thanks!", classify.NoFeedback},
		{"thanks, then a question", longAnswer, "Thanks! Why was the tax so high?", classify.NoFeedback},
		{"the previous message", longAnswer, "please in a nutshell the previous message", classify.NoFeedback},
		{"a pronoun as the object", longAnswer, "How do I brew it properly?", classify.NoFeedback},
		{"this text, but no text", longAnswer, "please list the key points of this text", classify.NoFeedback},
		{"answers the assistant's question", "Sure! What topic should we brainstorm about?", "ice cream shapes", classify.NoFeedback},
		{"agent tool output", longAnswer, `{"results": [{"title": "Tea in England", "link": "https://example.org"}]}`, classify.NoFeedback},
		{"agent system line", longAnswer, "System: command done, proceed with your plan.", classify.NoFeedback},
		{"puts the parts together", longAnswer, "ok now put it all together and if you think it needs changes to make it more fun, do so", classify.NoFeedback},
		// new_ask
		{"new request", longAnswer, "Write a bash script that counts lines in every .go file in a folder.", classify.NewAsk},
		{"new question", longAnswer, "What is the difference between TCP and UDP?", classify.NewAsk},
		{"new request with a relative pronoun", longAnswer, "Write a function in Go that parses a duration string and returns seconds.", classify.NewAsk},
		{"a pasted log does not count as prose", longAnswer, "Summarise the key ideas of stoicism.\n```\nerror: this is not the user's words\n```", classify.NewAsk},
		{"a dummy it is not a reference", longAnswer, "How long does it take to boil an egg?", classify.NewAsk},
		{"an imperative after a first sentence", longAnswer, "I am planning a trip to Japan in April. Suggest an itinerary for ten days.", classify.NewAsk},
		{"pasted text after a lead-in, complaint words inside it", longAnswer,
			"summarise this text: The engine was too large and the first design was wrong, so the team had to fix the mounts " +
				"and replace the gearbox before the trials, which took most of the spring and cost more than the whole budget.", classify.NewAsk},
		// unknown: the rules do not clearly apply
		{"Chinese", longAnswer, "全錯", classify.Unknown},
		{"Spanish", longAnswer, "y que quiere decir carnotaurus?", classify.Unknown},
		{"French", longAnswer, "Aucune des extensions que vous m'avez fournies ne marche", classify.Unknown},
		{"a bare statement", longAnswer, "The queen preferred green varieties.", classify.Unknown},
		{"a short statement about it", longAnswer, "The queen liked it with milk.", classify.NoFeedback},
		{"a bare topic with nothing asked before", longAnswer, "rhino mountain", classify.Unknown},
		{"empty", longAnswer, "   ", classify.Unknown},
		{"a weak cue alone", longAnswer, "Lady Luck should give me things.", classify.Unknown},
		{"feedback words in a long new request", longAnswer,
			"Write a 1000 word essay on the history of coffee in Vienna, covering the siege of 1683, the first coffee houses, " +
				"and how they shaped literary life; do not use bullet points and do not mention tea at all in it.", classify.Unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := h.Label(convOf(tc.prev, tc.text), 2)
			if !ok {
				t.Fatal("no turn 2")
			}
			if l.Type != tc.want {
				t.Errorf("Label(%q) = %s (%s), want %s", tc.text, l.Type, l.Reason, tc.want)
			}
			checkLabel(t, l)
		})
	}
}

// checkLabel checks what holds for every heuristic label: a known type or
// Unknown, refs exactly when the message follows up, a confidence in range,
// and a reason.
func checkLabel(t *testing.T, l classify.Label) {
	t.Helper()
	if l.Annotator != "heuristic" || l.Reason == "" || l.Refs == nil {
		t.Errorf("label = %+v", l)
	}
	switch l.Type {
	case classify.NewAsk, classify.Unknown:
		if len(l.Refs) != 0 {
			t.Errorf("%s label with refs: %+v", l.Type, l)
		}
	case classify.Feedback, classify.NoFeedback:
		if len(l.Refs) == 0 {
			t.Errorf("%s label without refs: %+v", l.Type, l)
		}
	default:
		t.Errorf("type %q", l.Type)
	}
	if l.Confidence < 0 || l.Confidence > 1 || (l.Type == classify.Unknown) != (l.Confidence == 0) {
		t.Errorf("confidence %v for %s", l.Confidence, l.Type)
	}
}

func TestHeuristicRefs(t *testing.T) {
	h := classify.NewHeuristic()
	c := &conv.Conversation{ID: "c", Messages: []conv.Message{
		{Role: conv.User, Content: "Write a short poem about rain."},
		{Role: conv.Assistant, Content: "Rain on the roof, rain in the street."},
		{Role: conv.User, Content: "Write one about snow."},
		{Role: conv.Assistant, Content: "Snow on the hills, snow on the sheet."},
		{Role: conv.User, Content: "Your first answer was better, it is not good. Change the last line."},
		{Role: conv.Assistant, Content: "Snow on the hills, white and complete."},
		{Role: conv.User, Content: "please summarise this text"},
	}}
	for _, tc := range []struct {
		turn int
		want string
	}{{3, "2a"}, {4, "1u"}} {
		l, ok := h.Label(c, tc.turn)
		if !ok || len(l.Refs) != 1 || l.Refs[0] != tc.want {
			t.Errorf("turn %d: %+v, want refs [%s]", tc.turn, l, tc.want)
		}
	}
	if _, ok := h.Label(c, 5); ok {
		t.Error("labelled a turn the conversation does not have")
	}
}

// FuzzHeuristic: any text gets a valid label without a panic.
func FuzzHeuristic(f *testing.F) {
	for _, s := range []string{"", "continue", "全錯", "{", "summarise this text: a b c", "```\n", "    x", "x：y", "you used it, but"} {
		f.Add(s, "What topic?")
	}
	h := classify.NewHeuristic()
	f.Fuzz(func(t *testing.T, text, prev string) {
		l, ok := h.Label(convOf(prev, text), 2)
		if !ok {
			t.Fatal("no turn 2")
		}
		checkLabel(t, l)
	})
}

// BenchmarkHeuristic labels every turn of the real labelled set once per
// iteration; ns/op divided by 131 is the cost of one turn.
func BenchmarkHeuristic(b *testing.B) {
	f, err := os.Open("../../fixtures/labelled/classify-wildchat.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ex, err := classify.ReadConversationSet(f)
	if err != nil {
		b.Fatal(err)
	}
	h := classify.NewHeuristic()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, e := range ex {
			if _, ok := h.Label(e.Conversation(), e.Turn); !ok {
				b.Fatal("no turn")
			}
		}
	}
}
