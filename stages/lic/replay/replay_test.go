package replay_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/replay"
	"github.com/ac3/ac3/stages/respond"
)

type units map[string][]ledger.Unit // stage → units

func (u units) ConversationUnits(_ context.Context, stage, _ string, turn int) ([]ledger.Unit, error) {
	var out []ledger.Unit
	for _, x := range u[stage] {
		if turn == 0 || x.Turn == turn {
			out = append(out, x)
		}
	}
	return out, nil
}

func answers(t *testing.T, strategy string, texts ...string) []byte {
	o := respond.Output{Strategy: strategy, Respondent: "respondent"}
	for i, s := range texts {
		o.Samples = append(o.Samples, respond.Sample{Index: i, Text: s})
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGradesEveryRerunAndFailsAMissingAnswer(t *testing.T) {
	meta := `{"task_id":"sharded-GSM8K/1","task":"math","answer":"3 + 4 = 7\n#### 7"}`
	c := &conv.Conversation{ID: "sharded-GSM8K/1#r1", Meta: json.RawMessage(meta), Messages: []conv.Message{
		{Role: conv.User, Content: "a"}, {Role: conv.Assistant, Content: "b"}, {Role: conv.User, Content: "c"}, {Role: conv.Assistant, Content: "d"},
	}}
	vs := []pipeline.Variant{{Name: "fc", Version: "r1"}, {Name: "ao", Version: "r1"}}
	u := units{respond.StageName: {
		{Variant: "fc", Version: "r1", Turn: 2, Status: ledger.Done, Output: answers(t, "fc", grade.AnswerPrefix+" 7", "so 7 apples\n"+grade.AnswerPrefix+" 8")},
		{Variant: "ao", Version: "old", Turn: 2, Status: ledger.Done, Output: answers(t, "ao", grade.AnswerPrefix+" 7")},
	}}
	s, err := replay.New(u, grade.New(grade.Options{}), vs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Process(context.Background(), pipeline.Task{Conv: c, Variants: s.Variants()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d results", len(res))
	}
	fc, ao := res[0], res[1]
	if len(fc.Units) != 1 || fc.Units[0].Failed || fc.Units[0].Turn != 2 {
		t.Fatalf("fc: %+v", fc.Units)
	}
	o, err := replay.Decode(fc.Units[0].Output)
	if err != nil {
		t.Fatal(err)
	}
	if o.Task != grade.TaskMath || o.Instance != "sharded-GSM8K/1" || len(o.Reruns) != 2 ||
		o.Reruns[0].Grade.Status != grade.Pass || o.Reruns[1].Grade.Status != grade.Fail || o.Reruns[1].Grade.Artifact != "8" {
		t.Errorf("fc grades: %+v", o)
	}
	// ao's only answer was made under another version: nothing to grade
	// now, and the unit says so instead of vanishing.
	if len(ao.Units) != 1 || !ao.Units[0].Failed || !strings.Contains(ao.Units[0].Error, "no answer of ao") {
		t.Errorf("ao: %+v", ao.Units)
	}
	for _, v := range s.Variants() {
		if !strings.Contains(v.Version, "respond=r1") || !strings.Contains(v.Version, "grade v") {
			t.Errorf("version %q does not name the respond version and the grader", v.Version)
		}
	}
}

func TestNewRefusesNothingToGrade(t *testing.T) {
	if _, err := replay.New(units{}, grade.New(grade.Options{}), nil); err == nil {
		t.Error("no error without respond variants")
	}
}
