package view

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/compint/measure"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/simulate"
	"github.com/ac3/ac3/stages/pollution"
	"github.com/ac3/ac3/stages/respond"
)

// The run the tests read: the shipped WildChat sample, the LiC sample and
// the file of broken records, plus a file of our own (a conversation with
// markup in it, and a word to search for), annotated by the heuristic
// labellers and curated with fc, ao and lt, as the demo config does. Then,
// as no model answers in tests, respond, judge, pollution and LiC units are
// written for the first conversations the way those stages store them.
const (
	needle  = "periwinkleaardvark"
	markup  = `<script>alert("x")</script><b>bold</b>`
	judged  = 6 // conversations given answers and verdicts
	pairFA  = "fc:ao"
	respVer = "respond/test"
)

var fixtureRun string // built once by TestMain; read-only afterwards

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ac3-view-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	path, err := buildRun(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the test run:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fixtureRun = path
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func ours(dir string) (string, error) {
	p := filepath.Join(dir, "ours.jsonl")
	lines := []map[string]any{
		{"conversation_hash": "markup-1", "language": "English", "conversation": []map[string]string{
			{"role": "user", "content": "Please explain " + markup + " to me"},
			{"role": "assistant", "content": "It is HTML: " + markup},
			{"role": "user", "content": "And the word " + needle + "?"},
			{"role": "assistant", "content": "I do not know that word."},
		}},
	}
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return "", err
		}
	}
	return p, nil
}

func buildRun(dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mine, err := ours(dir)
	if err != nil {
		return "", err
	}
	db := filepath.Join(dir, "run.db")
	plan := run.Plan{
		DB: db,
		Ingest: &run.Ingest{Files: []string{
			"../../fixtures/wildchat/wildchat-1m-sample10.jsonl",
			"../../fixtures/lic/sample_5_per_task.json",
			"../../fixtures/bad/wildchat_mixed.jsonl",
			mine,
		}, Format: "auto", MaxLineBytes: 1 << 20, Filter: run.Filter{MinUserTurns: 2, Dedupe: true}},
		Annotate: &run.Annotate{Classify: run.Heuristic, Constraints: run.Heuristic},
		Curate:   &run.Curate{Strategies: []string{"fc", "ao", "lt"}},
	}
	if _, err := run.Execute(ctx, plan, run.Options{}); err != nil {
		return "", err
	}
	l, err := ledger.Open(ctx, db, ledger.Options{})
	if err != nil {
		return "", err
	}
	defer l.Close()
	return db, addModelUnits(ctx, l)
}

// addModelUnits stores what respond, judge, pollution and LiC simulate
// would have for the first conversations.
func addModelUnits(ctx context.Context, l *ledger.Ledger) error {
	pages, err := l.ConversationPage(ctx, 0, judged)
	if err != nil {
		return err
	}
	rv := []ledger.Variant{{Name: "fc", Version: respVer}, {Name: "ao", Version: respVer}}
	jv := []ledger.Variant{{Name: pairFA, Version: "judge/test"}}
	pv := []ledger.Variant{{Name: pollution.VariantDataset, Version: "pollution/test"}, {Name: pollution.ResponsesVariant("fc"), Version: "pollution/test"}}
	sv := []ledger.Variant{{Name: "baseline", Version: "simulate/test"}}
	cv := []ledger.Variant{{Name: "ao", Version: "compint/test"}}
	for stage, vs := range map[string][]ledger.Variant{respond.StageName: rv, judge.StageName: jv, pollution.StageName: pv, simulate.StageName: sv, measure.StageName: cv} {
		if err := l.SetPlan(ctx, stage, vs); err != nil {
			return err
		}
	}
	var results []ledger.TaskResult
	for k, s := range pages {
		_, turns, err := curate.CurrentContexts(ctx, l, s.Conv.ID, 0, nil)
		if err != nil {
			return err
		}
		task := func(stage string, v ledger.Variant) ledger.TaskResult {
			return ledger.TaskResult{TaskID: ledger.TaskID{Stage: stage, Variant: v.Name, Version: v.Version, ConvSeq: s.Seq}, ConvID: s.Conv.ID, Status: ledger.Done, Attempts: 1}
		}
		for _, v := range rv {
			t := task(respond.StageName, v)
			for _, turn := range turns {
				if v.Name == "ao" && k == 1 && turn == turns[0] {
					t.Status = ledger.Failed
					t.Units = append(t.Units, ledger.UnitResult{Turn: turn, Status: ledger.Failed, Attempts: 3, Error: "the endpoint answered 503 three times"})
					continue
				}
				out, _ := json.Marshal(respond.Output{Strategy: v.Name, Respondent: "respondent", Model: "test-model", ContextTokens: 100 * turn,
					Samples: []respond.Sample{{Index: 0, Text: fmt.Sprintf("[%s] answer to turn %d", v.Name, turn), CompletionTokens: 7}}})
				t.Units = append(t.Units, ledger.UnitResult{Turn: turn, Status: ledger.Done, Attempts: 1, Output: out})
			}
			results = append(results, t)
		}
		t := task(judge.StageName, jv[0])
		for _, turn := range turns {
			// fc wins on even turns, ao on odd ones; both orders agree.
			w := "A"
			if turn%2 == 1 {
				w = "B"
			}
			o := judge.Output{Pair: pairFA, A: "fc", B: "ao", Context: "full", Order: judge.OrderBoth, Comparisons: []judge.Comparison{{
				Sample: 0,
				Calls: []judge.Call{
					{First: "A", Model: "judge-model", Verdicts: map[string]judge.DimVerdict{judge.Quality: {Shown: w, Outcome: w, Justification: fmt.Sprintf("turn %d: the winner kept the user's request in view", turn)}, judge.OnTopic: {Shown: "tie", Outcome: "tie"}}},
					{First: "B", Model: "judge-model", Verdicts: map[string]judge.DimVerdict{judge.Quality: {Shown: w, Outcome: w, Justification: fmt.Sprintf("turn %d, other order: same winner", turn)}, judge.OnTopic: {Shown: "tie", Outcome: "tie"}}},
				},
				Outcome:    map[string]string{judge.Quality: w, judge.OnTopic: "tie"},
				Consistent: map[string]bool{judge.Quality: true, judge.OnTopic: true},
			}}}
			out, _ := json.Marshal(o)
			t.Units = append(t.Units, ledger.UnitResult{Turn: turn, Status: ledger.Done, Attempts: 1, Output: out})
		}
		results = append(results, t)
		if k == 2 {
			// A CompInt result: the constraint did not survive ao.
			out, _ := json.Marshal(measure.Output{Instance: "inst-1", SCID: 7, SCType: "format", Strategy: "ao", ContextTokens: 321, Retention: &measure.Retention{Retained: false},
				Groups: []measure.GroupResult{{Group: compint.LongWithSC, Choices: []compint.Choice{{Letter: "A", Compliant: true}, {Letter: "A", Compliant: false}}, Orders: []compint.Order{compint.CompliantFirst, compint.CompliantSecond}, Score: 0.5}}})
			c := task(measure.StageName, cv[0])
			c.Units = append(c.Units, ledger.UnitResult{Turn: 1, Status: ledger.Done, Attempts: 1, Output: out})
			results = append(results, c)
		}
		if k == 0 && len(turns) > 0 {
			p := task(pollution.StageName, pv[0])
			lb, _ := pollution.Label{Present: true, Category: "intent_override", Sources: []string{"1a"}, Confidence: 0.9, Justification: "it kept the first plan", Annotator: "llm"}.Encode()
			p.Units = append(p.Units, ledger.UnitResult{Turn: 2, Status: ledger.Done, Attempts: 1, Output: lb})
			results = append(results, p)
		}
		if k == 1 && len(turns) > 0 {
			// fc's generated reply of the first analysed turn, reviewed.
			p := task(pollution.StageName, pv[1])
			g, _ := pollution.Generated{Respond: "fc", Strategy: "fc", Samples: []pollution.SampleLabel{{Index: 0, Label: &pollution.Label{Present: true, Category: "code_carryover", Sources: []string{"1a"}, Confidence: 0.8, Justification: "old code came back", Annotator: "llm"}}}}.Encode()
			p.Units = append(p.Units, ledger.UnitResult{Turn: turns[0], Status: ledger.Done, Attempts: 1, Output: g})
			results = append(results, p)
		}
	}
	// One LiC record's baseline trajectory, graded wrong.
	lic, err := l.BrowsePage(ctx, ledger.Browse{InputID: 2}, 0, 1<<40, 1)
	if err != nil || len(lic) == 0 {
		return fmt.Errorf("no LiC conversation: %v", err)
	}
	tr, _ := json.Marshal(simulate.Trajectory{Instance: "sharded-math/1", Task: "math", Replicate: 1, Mode: "sharded", Shards: []string{"first shard", "second shard"},
		Messages: []conv.Message{{Role: conv.User, Content: "first shard"}, {Role: conv.Assistant, Content: "The answer is 41."}},
		Grade:    &grade.Result{Task: "math", Status: grade.Fail, Artifact: "41", Expected: "42", Reason: "the final number differs"}})
	results = append(results, ledger.TaskResult{TaskID: ledger.TaskID{Stage: simulate.StageName, Variant: sv[0].Name, Version: sv[0].Version, ConvSeq: lic[0].Seq}, ConvID: lic[0].ID, Status: ledger.Done, Attempts: 1,
		Units: []ledger.UnitResult{{Turn: 0, Status: ledger.Done, Attempts: 1, Output: tr}}})
	return l.CommitTasks(ctx, results)
}
