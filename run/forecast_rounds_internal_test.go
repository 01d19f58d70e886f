package run

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/respond"
)

// rounderStage says its rounds over the conversations (as curate does).
type rounderStage struct {
	stubStage
	per int64 // rounds per conversation, in a chain
}

func (s rounderStage) BatchRounds(n int64) (int64, string) {
	if s.per == 0 {
		return 2, ""
	}
	return s.per * n, "one conversation at a time"
}

// turnStage says its rounds per conversation from its user turns (as
// constraints does).
type turnStage struct{ stubStage }

func (turnStage) BatchRoundsFor(n int) int { return (n + 1) / 2 }

// TestForecastBatchRounds checks the dry run's batch rounds: each stage's
// from what it says of itself, else from its structure (one round when
// its calls are all known up front, a round per call of its longest
// conversation when it asks them one after another), and the total with
// the annotation stages sharing their rounds.
func TestForecastBatchRounds(t *testing.T) {
	// conversations: user turns, and each stage's calls in batch mode
	type conversation struct {
		turns int
		calls map[string]int
	}
	talk := func(turns int, calls map[string]int) conversation { return conversation{turns, calls} }
	tests := []struct {
		name   string
		stages []StageForecast
		plan   Plan
		convs  []conversation
		want   map[string]int64
		total  int64
		note   string // in the notes
	}{
		{
			name: "independent calls take one round, sequential ones a round per call",
			stages: []StageForecast{
				{Stage: classify.StageName, Label: "classify (llm)", stage: stubStage{classify.StageName}, shared: true},
				{Stage: constraints.StageName, Label: "constraints (llm)", stage: stubStage{constraints.StageName}, shared: true},
				{Stage: curate.StageName, Label: "curate", stage: stubStage{curate.StageName}},
				{Stage: respond.StageName, Label: "respond", stage: stubStage{respond.StageName}},
				{Stage: judge.StageName, Label: "judge", stage: stubStage{judge.StageName}},
			},
			convs: []conversation{
				talk(4, map[string]int{"classify": 3, "constraints": 4, "curate": 6, "respond": 3, "judge": 6}),
				talk(7, map[string]int{"classify": 6, "constraints": 7, "curate": 2, "respond": 6, "judge": 12}),
			},
			want:  map[string]int64{"classify": 1, "constraints": 7, "curate": 6, "respond": 1, "judge": 1},
			total: 7 + 6 + 1 + 1,
			note:  "curate asks a conversation's calls one after another",
		},
		{
			name: "stages that say their rounds",
			stages: []StageForecast{
				{Stage: classify.StageName, Label: "classify (llm)", stage: stubStage{classify.StageName}, shared: true},
				{Stage: constraints.StageName, Label: "constraints (llm)", stage: turnStage{stubStage{constraints.StageName}}, shared: true},
				{Stage: curate.StageName, Label: "curate", stage: rounderStage{stubStage: stubStage{curate.StageName}}},
			},
			convs: []conversation{
				talk(9, map[string]int{"classify": 8, "constraints": 9, "curate": 30}),
				talk(2, map[string]int{"classify": 1, "constraints": 2, "curate": 3}),
				talk(5, map[string]int{"classify": 4}), // nothing left for the others
			},
			want:  map[string]int64{"classify": 1, "constraints": 5, "curate": 2},
			total: 5 + 2,
		},
		{
			name: "rounds that grow with the conversations",
			stages: []StageForecast{
				{Stage: curate.StageName, Label: "curate", stage: rounderStage{stubStage: stubStage{curate.StageName}, per: 3}},
			},
			convs: []conversation{talk(3, map[string]int{"curate": 2}), talk(4, map[string]int{"curate": 2}), talk(4, nil)},
			want:  map[string]int64{"curate": 6},
			total: 6,
			note:  "curate: one conversation at a time",
		},
		{
			name: "no call in batch mode, no round",
			stages: []StageForecast{
				{Stage: classify.StageName, Label: "classify (llm)", stage: stubStage{classify.StageName}, shared: true},
				{Stage: curate.StageName, Label: "curate", stage: rounderStage{stubStage: stubStage{curate.StageName}}},
			},
			convs: []conversation{talk(3, nil)},
			want:  map[string]int64{"classify": 0, "curate": 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &forecaster{plan: tc.plan, fc: Forecast{Stages: tc.stages}}
			for _, cv := range tc.convs {
				c := &conv.Conversation{}
				for range cv.turns {
					c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: "u"}, conv.Message{Role: conv.Assistant, Content: "a"})
				}
				for i := range e.fc.Stages {
					e.rounds(&e.fc.Stages[i], c, cv.calls[e.fc.Stages[i].Stage])
				}
			}
			e.finishRounds()
			for _, sf := range e.fc.Stages {
				if sf.BatchRounds != tc.want[sf.Stage] {
					t.Errorf("%s: %d rounds, want %d", sf.Stage, sf.BatchRounds, tc.want[sf.Stage])
				}
			}
			if e.fc.BatchRounds != tc.total {
				t.Errorf("%d rounds in all, want %d", e.fc.BatchRounds, tc.total)
			}
			notes := strings.Join(e.fc.Notes, "\n")
			if tc.note != "" && !strings.Contains(notes, tc.note) {
				t.Errorf("the notes do not say %q:\n%s", tc.note, notes)
			}
			if tc.total > 0 && !strings.Contains(notes, "an estimate") {
				t.Errorf("the notes do not say the rounds are an estimate:\n%s", notes)
			}
			if text := e.fc.batchRoundsText(); (text != "") != (tc.total > 0) {
				t.Errorf("text line %q for %d rounds", text, tc.total)
			}
		})
	}
}
