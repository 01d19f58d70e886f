package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

// ac3 llm agreement end to end in the library: a judge that says YES to
// everything against 3 labelled rows (2 YES, 1 NO) and one unlabelled
// line. Worked by hand: 2/3 agree, both YES rates 1 vs 2/3, κ 0 (the
// judge's answers carry no information); the unlabelled line is listed and
// the command exits 2. With --db the second measurement sends nothing.
func TestJudgeAgreement(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	defer srv.Close()
	srv.Add(llmtest.Rule{Name: "yes", Func: func(req llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Content: `<retained id="` + req.Nonce("retained") + `">YES</retained>`}
	}})
	dir := t.TempDir()
	labels := filepath.Join(dir, "labels.jsonl")
	if err := os.WriteFile(labels, []byte(`{"id":"1","sssc_message":"Reply in French.","compacted_summary":"The user wants French.","label":"yes"}
{"id":"2","sssc_message":"No emojis.","compacted_summary":"Emojis are banned.","label":true}
{"id":"3","sssc_message":"Cite sources.","compacted_summary":"A chat about cats.","label":"no"}
{"id":"4","sssc_message":"Be brief.","compacted_summary":"…","label":""}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	m := run.Model{Options: &llm.Options{
		Endpoints: []llm.Endpoint{{Name: "ep", BaseURL: srv.URL, Model: "judge-model"}},
		Roles:     map[string]llm.RoleBinding{"judge": {Endpoint: "ep"}},
	}}
	a := run.Agreement{Labels: labels, DB: filepath.Join(dir, "run.db"), JSON: true, Rows: filepath.Join(dir, "rows.jsonl")}
	var out, errw bytes.Buffer
	err := run.JudgeAgreement(context.Background(), &out, &errw, m, a)
	if run.ExitCode(err) != run.ExitFailed {
		t.Fatalf("exit %d (%v), want %d for a line left out", run.ExitCode(err), err, run.ExitFailed)
	}
	if !strings.Contains(errw.String(), "labels.jsonl line 4: not labelled yet") {
		t.Errorf("the unlabelled line is not listed: %q", errw.String())
	}
	var rep struct {
		Agreement struct {
			N        int     `json:"n"`
			Accuracy float64 `json:"accuracy"`
			Kappa    float64 `json:"kappa"`
			AYes     float64 `json:"a_yes_rate"`
		} `json:"agreement"`
		Problems int `json:"problems"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.Agreement.N != 3 || rep.Agreement.Accuracy != 2.0/3 || rep.Agreement.Kappa != 0 || rep.Agreement.AYes != 1 || rep.Problems != 1 {
		t.Errorf("report %+v", rep)
	}
	rows, err := os.ReadFile(a.Rows)
	if err != nil || strings.Count(string(rows), "\n") != 3 || !strings.Contains(string(rows), `"id":"3","human":false,"judge":true`) {
		t.Errorf("rows file: %v\n%s", err, rows)
	}
	sent := srv.Requests()
	if sent != 3 {
		t.Errorf("%d requests, want 3", sent)
	}
	out.Reset()
	a.JSON = false
	_ = run.JudgeAgreement(context.Background(), &out, &errw, m, a)
	if srv.Requests() != sent {
		t.Errorf("the second measurement with --db sent %d requests", srv.Requests()-sent)
	}
	if !strings.Contains(out.String(), "2/3 = 66.7%") {
		t.Errorf("text report:\n%s", out.String())
	}
	// A measurement that cannot finish leaves no rows file behind.
	a.Role, a.Rows = "nobody", filepath.Join(dir, "stopped.jsonl")
	if err := run.JudgeAgreement(context.Background(), &out, &errw, m, a); err == nil {
		t.Fatal("an unbound judge role measured")
	}
	if _, err := os.Stat(a.Rows); !os.IsNotExist(err) {
		t.Errorf("a failed measurement left %s: %v", a.Rows, err)
	}
}
