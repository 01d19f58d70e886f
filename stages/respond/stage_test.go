package respond_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/respond"
)

type stored []ledger.Unit

func (s stored) ConversationUnits(context.Context, string, string, int) ([]ledger.Unit, error) {
	return s, nil
}

func TestAnswersEachCuratedContextWithSamplesAndReasoningApart(t *testing.T) {
	c := &conv.Conversation{ID: "c1", Messages: []conv.Message{
		{Role: conv.User, Content: "one"}, {Role: conv.Assistant, Content: "a1"},
		{Role: conv.User, Content: "two"}, {Role: conv.Assistant, Content: "a2"},
		{Role: conv.User, Content: "BAD three"},
	}}
	var units stored
	for _, turn := range []int{2, 3} {
		x := curated.Context{Strategy: "fc", Turn: turn, Parts: []curated.Part{curated.MessagePart(0), curated.MessagePart(1), curated.MessagePart(2 * (turn - 1))}, Tokens: 9}
		b, _ := curated.EncodeContext(x)
		units = append(units, ledger.Unit{ConvID: "c1", Turn: turn, Variant: "fc", Version: "cv", Status: ledger.Done, Output: b})
	}
	// A unit of another version is not answered.
	units = append(units, ledger.Unit{ConvID: "c1", Turn: 4, Variant: "fc", Version: "old", Status: ledger.Done, Output: units[0].Output})
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{LastContains: "BAD", Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "context too long"}})
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Content: "<think>hmm</think>answer to " + r.Last(), Model: "served-model"}
	}})
	client, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{{Name: "ep", BaseURL: srv.URL, Model: "m", Timeout: 5 * time.Second, MaxAttempts: 2}}, Cache: llm.NewMemCache()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := respond.New(client, units, respond.Options{Strategies: []string{"fc"}, CurateVersions: map[string]string{"fc": "cv"}, Samples: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := st.Process(ctx, pipeline.Task{Conv: c, Variants: st.Variants()})
	if err != nil {
		t.Fatal(err)
	}
	us := res[0].Units
	if len(us) != 2 {
		t.Fatalf("%d units, want 2", len(us))
	}
	o, err := respond.Decode(us[0].Output)
	if err != nil {
		t.Fatal(err)
	}
	if us[0].Failed || len(o.Samples) != 2 || o.Samples[1].Index != 1 || o.Samples[0].Text != "answer to two" || o.Samples[0].Reasoning != "hmm" || o.Model != "served-model" || o.Endpoint != "ep" {
		t.Errorf("turn 2: %+v", o)
	}
	// Each sample is its own request (not answered from the first one's
	// cache entry); the rejected turn's samples are not retried.
	if srv.Count() != 4 {
		t.Errorf("%d calls, want 4 (two samples of two turns)", srv.Count())
	}
	if !us[1].Failed || !strings.Contains(us[1].Error, "400") || !strings.Contains(us[1].Raw, "context too long") {
		t.Errorf("turn 3 should fail with the server's answer kept: %+v", us[1])
	}
}

func TestVariantNames(t *testing.T) {
	st, err := respond.New(nil, stored{}, respond.Options{Strategies: []string{"fc", "ao"}, CurateVersions: map[string]string{"fc": "1", "ao": "2"},
		Respondents: []respond.Respondent{{Role: "respondent"}, {Role: "big", Label: "big"}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range st.Variants() {
		names = append(names, v.Name)
	}
	if strings.Join(names, " ") != "fc ao fc@big ao@big" {
		t.Errorf("variants %v", names)
	}
	if _, err := respond.New(nil, stored{}, respond.Options{Strategies: []string{"lt"}, CurateVersions: map[string]string{}}); err == nil {
		t.Error("a strategy that was never curated must be refused")
	}
}

// last_turns answers only the final curated turns of each conversation
// (from_turn, when set, bounds them too), and goes into the version only
// when set.
func TestTurnSelection(t *testing.T) {
	c := &conv.Conversation{ID: "c1"}
	var units stored
	for turn := 1; turn <= 4; turn++ {
		c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: fmt.Sprint("q", turn)}, conv.Message{Role: conv.Assistant, Content: fmt.Sprint("a", turn)})
		if turn == 1 {
			continue
		}
		x := curated.Context{Strategy: "fc", Turn: turn, Parts: []curated.Part{curated.MessagePart(2 * (turn - 1))}, Tokens: 3}
		b, _ := curated.EncodeContext(x)
		units = append(units, ledger.Unit{ConvID: "c1", Turn: turn, Variant: "fc", Version: "cv", Status: ledger.Done, Output: b})
	}
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Content: "answer to " + r.Last()} }})
	client, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{{Name: "ep", BaseURL: srv.URL, Model: "m", Timeout: 5 * time.Second, MaxAttempts: 2}}, Cache: llm.NewMemCache()})
	if err != nil {
		t.Fatal(err)
	}
	base := respond.Options{Strategies: []string{"fc"}, CurateVersions: map[string]string{"fc": "cv"}}
	plain, err := respond.New(client, units, base)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		turns pipeline.Turns
		want  []int
		tag   string
	}{
		{pipeline.Turns{}, []int{2, 3, 4}, ""},
		{pipeline.Turns{Last: 1}, []int{4}, ";last=1"},
		{pipeline.Turns{Last: 2}, []int{3, 4}, ";last=2"},
		{pipeline.Turns{From: 4, Last: 3}, []int{4}, ";from=4;last=3"},
		{pipeline.Turns{From: 3}, []int{3, 4}, ";from=3"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range cases {
		opts := base
		opts.Turns = tc.turns
		st, err := respond.New(client, units, opts)
		if err != nil {
			t.Fatal(err)
		}
		if v := st.Variants()[0].Version; v != plain.Variants()[0].Version+tc.tag {
			t.Errorf("%+v: version %q", tc.turns, v)
		}
		res, err := st.Process(ctx, pipeline.Task{Conv: c, Variants: st.Variants()})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, u := range res[0].Units {
			got = append(got, u.Turn)
			o, _ := respond.Decode(u.Output)
			if u.Failed || o.Samples[0].Text != fmt.Sprint("answer to q", u.Turn) {
				t.Errorf("%+v turn %d: %+v", tc.turns, u.Turn, o)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%+v: answered turns %v, want %v", tc.turns, got, tc.want)
		}
	}
	if _, err := respond.New(client, units, respond.Options{Strategies: []string{"fc"}, CurateVersions: map[string]string{"fc": "cv"}, Turns: pipeline.Turns{Last: -2}}); err == nil {
		t.Error("negative last_turns accepted")
	}
}
