package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/classify"
)

// annotateEnvRun is runApp with an environment, for commands that read
// OPENAI_BASE_URL and friends.
func annotateEnvRun(t *testing.T, vars map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	app := newApp(&env{stop: make(chan struct{}), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }})
	err := app.RunContext(ctx, append([]string{"ac3"}, args...))
	return out.String(), errb.String(), err
}

func ingestedRun(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "run.db")
	mustRun(t, "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	return db
}

func TestAnnotateHeuristicResumes(t *testing.T) {
	db := ingestedRun(t)
	out := mustRun(t, "annotate", "--db", db)
	for _, want := range []string{"classify (heuristic): 10 conversations done", "constraints (heuristic): 10 conversations done"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, "annotate", "--db", db, "--stages", "classify,constraints")
	if strings.Count(out, "nothing to do") != 2 {
		t.Errorf("second run did work:\n%s", out)
	}
}

func TestAnnotateWithoutEndpointSkipsInOneLine(t *testing.T) {
	db := ingestedRun(t)
	out := mustRun(t, "annotate", "--db", db, "--stages", "classify,constraints,pollution", "--annotator", "llm")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "skipped") || !strings.Contains(lines[0], "OPENAI_BASE_URL") {
		t.Fatalf("want one line saying what to configure, got:\n%s", out)
	}
	l, err := ledger.Open(context.Background(), db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(db); len(b) == 0 || fmt.Sprint(st) == "" {
		t.Fatal("run unreadable")
	}
	n := 0
	for _, stage := range []string{"classify", "constraints", "pollution"} {
		us, _ := l.ConversationUnits(context.Background(), stage, "anything", 0)
		n += len(us)
	}
	if n != 0 {
		t.Error("units were recorded without a model")
	}
}

var nonceRE = regexp.MustCompile(`<answer id="([0-9a-f]+)">`)

// fakeAnnotator answers every annotation prompt like a well-behaved model.
func fakeAnnotator(r llmtest.ChatRequest) llmtest.Reply {
	m := nonceIn(nonceRE, r)
	if m == nil {
		return llmtest.Reply{Content: "?"}
	}
	body := `{"type":"no_feedback","confidence":0.6,"reason":"follows up","refs":["1a"]}`
	switch {
	case strings.Contains(r.System(), "session constraints"):
		body = `{"constraints": []}`
	case strings.Contains(r.System(), "context pollution"):
		body = `{"present": false, "category": "", "sources": [], "confidence": 0.7, "justification": "fresh"}`
	}
	return llmtest.Reply{Content: fmt.Sprintf("<answer id=%q>%s</answer>", m[1], body)}
}

func TestAnnotateWithModelResumesWithoutRepeatCalls(t *testing.T) {
	db := ingestedRun(t)
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: fakeAnnotator})
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	args := []string{"annotate", "--db", db, "--stages", "classify,constraints,pollution", "--annotator", "llm"}
	out, errs, err := annotateEnvRun(t, vars, args...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errs)
	}
	for _, want := range []string{"classify (llm): 10 conversations done, 0 with failed", "constraints (llm): 10 conversations done", "pollution (llm): 10 conversations done"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	calls := srv.Count()
	if calls == 0 {
		t.Fatal("no model calls")
	}
	out, _, err = annotateEnvRun(t, vars, args...)
	if err != nil || strings.Count(out, "nothing to do") != 3 || srv.Count() != calls {
		t.Fatalf("second run made %d more calls (err %v):\n%s", srv.Count()-calls, err, out)
	}
}

func writeConfig(t *testing.T, db, stages string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "run.yaml")
	body := fmt.Sprintf(`run: {db: %s}
endpoints:
  e: {base_url: "http://127.0.0.1:1/v1"}
models:
  m: {endpoint: e, price: {input: 1.0, output: 2.0}}
roles:
  annotator: {model: m}
stages:
%s
`, db, stages)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunConfigAnnotatesThenSaysNothingToDo(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	cfg := filepath.Join(dir, "run.yaml")
	in, _ := filepath.Abs(repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	body := fmt.Sprintf("run: {db: %s}\ninput: {files: [%s]}\nstages:\n  classify: {annotator: heuristic}\n  constraints: {annotator: heuristic}\n  pollution: {on: [dataset]}\n", db, in)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "run", "--config", cfg)
	if !strings.Contains(out, "== annotate (classify+refs:heuristic, constraints:heuristic, pollution:llm)") ||
		!strings.Contains(out, "pollution (llm): skipped") || !strings.Contains(out, "constraints (heuristic): 10 conversations done") {
		t.Errorf("run output:\n%s", out)
	}
	out = mustRun(t, "run", "--config", cfg)
	if strings.Count(out, "nothing to do") < 2 {
		t.Errorf("second run did work:\n%s", out)
	}
}

func TestDryRunAnnotate(t *testing.T) {
	db := ingestedRun(t)
	cfg := writeConfig(t, db, "  classify: {annotator: llm}\n  constraints: {annotator: heuristic}\n  pollution: {on: [dataset]}")
	out := mustRun(t, "annotate", "--db", db, "--config", cfg, "--stages", "classify,pollution", "--annotator", "llm", "--dry-run")
	for _, want := range []string{"classify (llm)", "pollution (llm)", "model calls", "total: ", "estimated cost $"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "estimated cost $0.0000") {
		t.Errorf("priced model estimated at zero:\n%s", out)
	}
	// The CLI's own --dry-run changes nothing.
	mustRun(t, "annotate", "--db", db, "--annotator", "heuristic", "--dry-run")
	l, err := ledger.Open(context.Background(), db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, _, _ := l.TaskCounts(context.Background(), "classify", ledger.Variant{Name: "heuristic"}); n != 0 {
		t.Error("dry run recorded work")
	}
}

func TestEvalHeuristics(t *testing.T) {
	out := mustRun(t, "eval-heuristics", "--dir", repoPath("fixtures", "labelled"), "--misses")
	for _, want := range []string{"classify, heuristic annotator", "dev split (rules tuned on it)", "test split (held out)", "new_ask", "feedback", "no_feedback", "constraint detection", "constraint ", "precision"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runApp(t, "eval-heuristics", "--dir", t.TempDir()); err == nil {
		t.Error("a folder without labelled sets was accepted")
	}
}

func TestAnnotateRejectsUnknownStages(t *testing.T) {
	db := ingestedRun(t)
	if _, _, err := runApp(t, "annotate", "--db", db, "--stages", "classify,vibes"); err == nil || !strings.Contains(err.Error(), "vibes") {
		t.Errorf("err = %v", err)
	}
	if _, _, err := runApp(t, "annotate", "--db", db, "--annotator", "gpt"); err == nil {
		t.Error("unknown annotator accepted")
	}
}

// status shows the heuristic's turn-type shares with its measured coverage
// and accuracy beside them and names the labelled set, in text and JSON.
func TestStatusShowsHeuristicQualityBesideTurnTypes(t *testing.T) {
	db := ingestedRun(t)
	mustRun(t, "annotate", "--db", db, "--stages", "classify")
	q := classify.HeuristicQuality()
	out := mustRun(t, "status", "--db", db)
	cov, acc := fmt.Sprintf("%.0f%%", 100*q.Coverage), fmt.Sprintf("%.0f%%", 100*q.Accuracy)
	if !strings.Contains(out, "turn types (classify heuristic)") || !strings.Contains(out, q.Set) || !strings.Contains(out, "labeller accuracy") {
		t.Fatalf("status lacks the heuristic's turn types and quality:\n%s", out)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && (f[0] == classify.NewAsk || f[0] == classify.Feedback || f[0] == classify.NoFeedback || f[0] == classify.Unknown) {
			rows++
			if f[3] != cov || f[4] != acc {
				t.Errorf("share row %q: want coverage %s and accuracy %s beside it", line, cov, acc)
			}
		}
	}
	if rows < 2 {
		t.Errorf("%d turn-type rows with quality:\n%s", rows, out)
	}
	var st struct {
		Conversations int64 `json:"conversations"`
		TurnTypes     []struct {
			Variant string `json:"variant"`
			Turns   int    `json:"turns"`
			Shares  []struct {
				Type  string `json:"type"`
				Count int    `json:"count"`
			} `json:"shares"`
			Quality *struct {
				Applies  bool     `json:"applies"`
				Set      string   `json:"set"`
				Accuracy *float64 `json:"accuracy"`
			} `json:"labeller_quality"`
		} `json:"turn_types"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "status", "--db", db, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Conversations == 0 || len(st.TurnTypes) != 1 || st.TurnTypes[0].Variant != "heuristic" || st.TurnTypes[0].Quality == nil ||
		!st.TurnTypes[0].Quality.Applies || st.TurnTypes[0].Quality.Set != q.Set || st.TurnTypes[0].Quality.Accuracy == nil || *st.TurnTypes[0].Quality.Accuracy != q.Accuracy {
		t.Errorf("status --json turn types: %+v", st)
	}
	sum := 0
	for _, s := range st.TurnTypes[0].Shares {
		sum += s.Count
	}
	if sum != st.TurnTypes[0].Turns || sum == 0 {
		t.Errorf("shares count %d of %d turns", sum, st.TurnTypes[0].Turns)
	}
}
