package export_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/run/export"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/pollution"
	"github.com/ac3/ac3/stages/respond"
)

// The judged run of these tests. Conversations a and b begin alike (b is
// a continued in a new conversation, as WildChat holds many), so at turn 2
// every strategy builds the same context for both, and the answers, which
// a model gives from its cache for equal requests, are the same too; c
// differs. Two respondents, x and y, answer from fc's context, and x from
// ao's too; the judge compares fc@x with fc@y (the same prompt) and ao@x
// with fc@x (two prompts).
const (
	pairSame  = "fc@x:fc@y"
	pairCross = "ao@x:fc@x"
)

func judgedConversations() []*conv.Conversation {
	msg := func(r conv.Role, s string) conv.Message { return conv.Message{Role: r, Content: s} }
	a := &conv.Conversation{ID: "a", System: "Answer in one line.", Source: conv.Source{File: "in.jsonl", Line: 1}, Messages: []conv.Message{
		msg(conv.User, "Name a prime."), msg(conv.Assistant, "7"),
		msg(conv.User, "A larger one?"), msg(conv.Assistant, "13"),
		msg(conv.User, "And an even one?"), msg(conv.Assistant, "2"),
	}}
	b := &conv.Conversation{ID: "b", System: a.System, Source: conv.Source{File: "in.jsonl", Line: 2}, Messages: append(append([]conv.Message(nil), a.Messages[:4]...),
		msg(conv.User, "Is 1 prime?"), msg(conv.Assistant, "No."))}
	c := &conv.Conversation{ID: "c", Source: conv.Source{File: "in.jsonl", Line: 3}, Messages: []conv.Message{
		msg(conv.User, "héllo"), msg(conv.Assistant, "hi"), msg(conv.User, "more"),
	}}
	return []*conv.Conversation{a, b, c}
}

// answers are the respondents' answers by conversation and turn; b's turn
// 2 repeats a's.
var answers = map[string]map[int]map[string]string{
	"a": {2: {"fc@x": "x: 17", "fc@y": "y: 11", "ao@x": "x from ao: 19"}, 3: {"fc@x": "x: 2", "fc@y": "y: 4", "ao@x": "x from ao: 2."}},
	"b": {2: {"fc@x": "x: 17", "fc@y": "y: 11", "ao@x": "x from ao: 19"}, 3: {"fc@x": "x: no", "fc@y": "y: yes", "ao@x": "x from ao: no."}},
}

// judgedRun is a run file holding judgedConversations curated with fc and
// ao (by the curate stage), annotated, answered and judged (stored units:
// on quality fc@x beats fc@y and ao@x beats fc@x on a's turn 3 only, fc@x
// winning at the other turns; on_topic is a tie throughout).
func judgedRun(t *testing.T) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	in, err := l.AddInput(ctx, ledger.Input{Path: "/in.jsonl", Format: "openai"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: judgedConversations(), RecordsDone: int64(len(judgedConversations())), Finished: true}); err != nil {
		t.Fatal(err)
	}
	counter, err := tokens.New("")
	if err != nil {
		t.Fatal(err)
	}
	strats, err := curate.Resolve("fc,ao", curate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := curate.NewStage(strats, counter, 2)
	var cv []ledger.Variant
	for _, v := range st.Variants() {
		cv = append(cv, ledger.Variant(v))
	}
	if err := l.SetPlan(ctx, st.Name(), cv); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Run(ctx, l, st, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	page, err := l.ConversationPage(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	seq := map[string]int64{}
	for _, s := range page {
		seq[s.Conv.ID] = s.Seq
	}
	encode := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var results []ledger.TaskResult
	store := func(stage, variant, version, convID string, units map[int][]byte) {
		tr := ledger.TaskResult{TaskID: ledger.TaskID{Stage: stage, Variant: variant, Version: version, ConvSeq: seq[convID]}, ConvID: convID, Status: ledger.Done}
		for turn := 1; turn <= 3; turn++ {
			if out, ok := units[turn]; ok {
				tr.Units = append(tr.Units, ledger.UnitResult{Turn: turn, Status: ledger.Done, Output: out})
			}
		}
		results = append(results, tr)
	}
	plan := func(stage string, names ...string) {
		var vs []ledger.Variant
		for _, n := range names {
			vs = append(vs, ledger.Variant{Name: n, Version: "v1"})
		}
		if err := l.SetPlan(ctx, stage, vs); err != nil {
			t.Fatal(err)
		}
	}

	// Annotations, on every conversation.
	plan(classify.StageName, "llm")
	plan(constraints.StageName, "llm")
	plan(pollution.StageName, "llm")
	for _, c := range judgedConversations() {
		cl, co, po := map[int][]byte{}, map[int][]byte{}, map[int][]byte{}
		rule := constraints.Constraint{Text: "Answer in one line.", Evidence: "one line", Type: "output", Turn: 1}
		for turn := 1; turn <= c.UserTurns(); turn++ {
			rec := constraints.Record{New: []constraints.Constraint{}, Registry: []constraints.Constraint{rule}, Annotator: "llm"}
			if turn == 1 {
				rec.New = []constraints.Constraint{rule}
			}
			co[turn] = encode(rec)
			if turn >= 2 {
				cl[turn] = encode(classify.Label{Type: classify.Feedback, Confidence: 0.9, Reason: "asks again", Refs: []string{"1a", "1u"}, Annotator: "llm"})
				po[turn] = encode(pollution.Label{Present: turn == 3, Category: "intent_override", Sources: []string{"1a"}, Confidence: 0.5, Justification: "it repeats", Annotator: "llm"})
			}
		}
		store(classify.StageName, "llm", "v1", c.ID, cl)
		store(constraints.StageName, "llm", "v1", c.ID, co)
		store(pollution.StageName, "llm", "v1", c.ID, po)
	}

	// Answers and verdicts on a and b, turns 2 and 3.
	plan(respond.StageName, "ao@x", "fc@x", "fc@y")
	plan(judge.StageName, pairCross, pairSame)
	for _, id := range []string{"a", "b"} {
		for _, v := range []string{"ao@x", "fc@x", "fc@y"} {
			units := map[int][]byte{}
			for turn, byVariant := range answers[id] {
				units[turn] = encode(respond.Output{Strategy: strings.Split(v, "@")[0], Respondent: "respondent", Model: "m",
					Samples: []respond.Sample{{Index: 0, Text: byVariant[v]}}})
			}
			store(respond.StageName, v, "v1", id, units)
		}
		for _, pair := range []string{pairCross, pairSame} {
			a, b, _ := strings.Cut(pair, ":")
			units := map[int][]byte{}
			for turn := range answers[id] {
				won := "A"
				if pair == pairCross && !(id == "a" && turn == 3) {
					won = "B"
				}
				units[turn] = encode(judge.Output{Pair: pair, A: a, B: b, Context: "full", Order: "random", Comparisons: []judge.Comparison{{
					Sample:  0,
					Outcome: map[string]string{judge.Quality: won, judge.OnTopic: "tie"},
					Calls: []judge.Call{{First: "A", Model: "judge-model", Verdicts: map[string]judge.DimVerdict{
						judge.Quality: {Shown: won, Outcome: won, Justification: "better"},
						judge.OnTopic: {Shown: "tie", Outcome: "tie"},
					}}},
				}}})
			}
			store(judge.StageName, pair, "v1", id, units)
		}
	}
	// The other conversations have nothing to answer or judge: their
	// tasks are done with no units, as the stages record them.
	for _, c := range judgedConversations() {
		if _, ok := answers[c.ID]; ok {
			continue
		}
		for _, v := range []string{"ao@x", "fc@x", "fc@y"} {
			store(respond.StageName, v, "v1", c.ID, nil)
		}
		for _, pair := range []string{pairCross, pairSame} {
			store(judge.StageName, pair, "v1", c.ID, nil)
		}
	}
	if err := l.CommitTasks(ctx, results); err != nil {
		t.Fatal(err)
	}
	return l
}

// readLines reads a JSONL file into one map per line.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// write exports what as f from l to a file in a fresh folder.
func write(t *testing.T, l *ledger.Ledger, what string, f export.Format, name string, opts export.Options) (string, export.Stats) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	st, err := export.Write(context.Background(), l, what, f, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return path, st
}
