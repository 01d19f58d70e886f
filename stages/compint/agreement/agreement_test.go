package agreement_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/compint/agreement"
)

func TestReadRows(t *testing.T) {
	cases := []struct {
		name, line string
		want       agreement.Row
		problem    string
	}{
		{name: "reference format", line: `{"label": true, "id": "a1", "sssc_message": "Reply in French.", "compacted_summary": "user: reply in French"}`,
			want: agreement.Row{ID: "a1", Constraint: "Reply in French.", Human: true}},
		{name: "plain names, string label", line: `{"id": 7, "constraint": "No emojis.", "context": "ctx", "human": "No", "type": "Output", "sssc_id": "15", "compactor": "recent-n"}`,
			want: agreement.Row{ID: "7", Constraint: "No emojis.", Human: false, Type: "Output", SCID: 15, Group: "recent-n"}},
		{name: "messages context", line: `{"id": "m", "constraint": "x", "context": [{"role": "System", "content": "s"}, {"role": "user", "content": " "}], "label": "present"}`,
			want: agreement.Row{ID: "m", Constraint: "x", Human: true}},
		{name: "unlabelled", line: `{"id": "u", "sssc_message": "x", "compacted_summary": "y", "label": ""}`, problem: "not labelled yet"},
		{name: "bad label", line: `{"id": "u", "sssc_message": "x", "compacted_summary": "y", "label": "maybe"}`, problem: `label "maybe" is not yes or no`},
		{name: "no id", line: `{"sssc_message": "x", "compacted_summary": "y", "label": 1}`, problem: "no id"},
		{name: "no context", line: `{"id": "c", "sssc_message": "x", "compacted_summary": "  ", "label": 1}`, problem: "no context"},
		{name: "bad role", line: `{"id": "c", "sssc_message": "x", "context": [{"role": "tool", "content": "t"}], "label": 1}`, problem: `role "tool"`},
		{name: "not JSON", line: `{"id": `, problem: "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			for r, p := range agreement.Read(strings.NewReader("\n"+c.line+"\n"), "labels.jsonl") {
				n++
				if c.problem != "" {
					if p == nil || !strings.Contains(p.Reason, c.problem) || p.Line != 2 || p.File != "labels.jsonl" {
						t.Fatalf("problem %+v, want line 2 of labels.jsonl saying %q", p, c.problem)
					}
					continue
				}
				if p != nil {
					t.Fatalf("problem %s", p)
				}
				if r.ID != c.want.ID || r.Constraint != c.want.Constraint || r.Human != c.want.Human || r.Type != c.want.Type || r.SCID != c.want.SCID || r.Group != c.want.Group || len(r.Context) == 0 {
					t.Fatalf("row %+v, want %+v", r, c.want)
				}
			}
			if n != 1 {
				t.Fatalf("%d rows, want 1", n)
			}
		})
	}
}

// Kappa worked by hand: 8 YES-YES, 2 YES-NO, 1 NO-YES, 9 NO-NO of 20:
// po = 17/20 = .85, pA = 10/20, pB = 9/20, pe = .5·.45 + .5·.55 = .5,
// κ = (.85 − .5)/(1 − .5) = .7.
func TestKappa(t *testing.T) {
	c := agreement.Confusion{YesYes: 8, YesNo: 2, NoYes: 1, NoNo: 9}
	if math.Abs(c.Kappa()-0.7) > 1e-12 || c.Accuracy() != 0.85 {
		t.Errorf("κ %v accuracy %v, want 0.7 and 0.85", c.Kappa(), c.Accuracy())
	}
	if k := (agreement.Confusion{YesYes: 3}).Kappa(); k != 1 {
		t.Errorf("all YES on both sides: κ %v, want 1", k)
	}
	if !math.IsNaN((agreement.Confusion{}).Kappa()) {
		t.Error("κ of no rows is a number")
	}
}

// The shipped blind test: its people agree with the paper's judge on all
// 50 rows (25 YES, 25 NO). A judge that answers YES exactly when the
// constraint's text appears in the context is measured against them.
func TestRunOnTheReferenceBlindTest(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "fixtures", "compint", "judge-labels")
	kf, err := os.Open(filepath.Join(dir, "balanced_key.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	key, probs, err := agreement.ReadKey(kf, "balanced_key.jsonl")
	kf.Close()
	if err != nil || len(probs) != 0 || len(key) != 50 {
		t.Fatalf("key: %d rows, problems %v, err %v", len(key), probs, err)
	}
	srv := llmtest.New(t, llmtest.Options{})
	defer srv.Close()
	// Verbatim presence decides, so the expected figures can be counted
	// from the files: see wantVerbatim below.
	srv.Add(llmtest.Rule{Name: "judge", Func: func(req llmtest.ChatRequest) llmtest.Reply {
		last := req.Last()
		nonce := req.Nonce("retained")
		sc := between(last, "<constraint id=\""+nonce+"\">\n", "\n</constraint>")
		ctx := between(last, "<context id=\""+nonce+"\">", "</context>")
		ans := "NO"
		if sc != "" && strings.Contains(ctx, sc) {
			ans = "YES"
		}
		return llmtest.Reply{Content: `<retained id="` + nonce + `">` + ans + `</retained>`}
	}})
	client, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "local", BaseURL: srv.URL, Model: "test-model", Limits: llm.Limits{Concurrency: 4, RPM: 6000}}},
		Roles:     map[string]llm.RoleBinding{"judge": {Endpoint: "local"}},
		Cache:     llm.NewMemCache(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := wantVerbatim(t, filepath.Join(dir, "balanced_labeled.jsonl"))
	lf, err := os.Open(filepath.Join(dir, "balanced_labeled.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	tally, err := agreement.Run(ctx, agreement.Read(lf, "balanced_labeled.jsonl"), agreement.Options{Client: client, Role: "judge", Key: key, Window: 7})
	if err != nil {
		t.Fatal(err)
	}
	if tally.Judge != want || tally.Problems != 0 || tally.NoVerdict != 0 {
		t.Errorf("judge vs people %+v (problems %d, no verdict %d), want %+v", tally.Judge, tally.Problems, tally.NoVerdict, want)
	}
	if tally.Reference != (agreement.Confusion{YesYes: 25, NoNo: 25}) {
		t.Errorf("reference vs people %+v, want 25 YES-YES and 25 NO-NO", tally.Reference)
	}
	var types int
	for _, c := range tally.ByType {
		types += c.N()
	}
	if types != 50 || tally.ByType["unknown"] != nil {
		t.Errorf("by type: %d rows, unknown %v; every row's type comes from its sssc_id", types, tally.ByType["unknown"])
	}
	if len(tally.ByGroup) < 2 {
		t.Errorf("by compactor: %d groups", len(tally.ByGroup))
	}
	var buf bytes.Buffer
	rep := tally.Report("judge")
	rep.WriteText(&buf)
	if !strings.Contains(buf.String(), "Cohen's κ") || !strings.Contains(buf.String(), "by SC type:") {
		t.Errorf("report:\n%s", buf.String())
	}
	buf.Reset()
	if err := rep.WriteJSON(&buf); err != nil || !json.Valid(buf.Bytes()) {
		t.Errorf("JSON report: %v\n%s", err, buf.String())
	}
	// A second run is answered from the cache.
	before := srv.Requests()
	lf2, _ := os.Open(filepath.Join(dir, "balanced_labeled.jsonl"))
	defer lf2.Close()
	if _, err := agreement.Run(ctx, agreement.Read(lf2, "x"), agreement.Options{Client: client, Role: "judge"}); err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != before {
		t.Errorf("the second measurement sent %d requests", srv.Requests()-before)
	}
}

// wantVerbatim counts the confusion of the verbatim-presence judge against
// the file's labels, independently of the package.
func wantVerbatim(t *testing.T, path string) agreement.Confusion {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c agreement.Confusion
	for line := range strings.Lines(string(b)) {
		var r struct {
			Label   bool   `json:"label"`
			SC      string `json:"sssc_message"`
			Summary string `json:"compacted_summary"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		c.Add(strings.Contains(r.Summary, r.SC), r.Label)
	}
	if c.N() != 50 {
		t.Fatalf("%d rows", c.N())
	}
	return c
}

func between(s, open, close string) string {
	_, after, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	in, _, _ := strings.Cut(after, close)
	return in
}

// A verdict that never parses is a row without a verdict, not a guess; a
// fatal endpoint error ends the run.
func TestRunFaults(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	defer srv.Close()
	srv.Add(llmtest.Rule{Name: "hedge", LastContains: "hedge", Reply: llmtest.Reply{Content: "maybe"}})
	srv.Add(llmtest.Rule{Name: "yes", Func: func(req llmtest.ChatRequest) llmtest.Reply {
		n := req.Nonce("retained")
		return llmtest.Reply{Content: `<retained id="` + n + `">YES</retained>`}
	}})
	client, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "local", BaseURL: srv.URL, Model: "m", Limits: llm.Limits{Concurrency: 2, RPM: 6000}}},
		Roles:     map[string]llm.RoleBinding{"judge": {Endpoint: "local"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	labels := `{"id":"1","constraint":"a","context":"a","label":"yes"}
{"id":"2","constraint":"hedge","context":"b","label":"no"}
{"id":"3","constraint":"c","context":"c","label":"no"}
not json
`
	var probs []agreement.Problem
	tally, err := agreement.Run(context.Background(), agreement.Read(strings.NewReader(labels), "l.jsonl"), agreement.Options{
		Client: client, Role: "judge", Retries: 1, Problem: func(p agreement.Problem) { probs = append(probs, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if tally.Judge != (agreement.Confusion{YesYes: 1, YesNo: 1}) || tally.NoVerdict != 1 || tally.Problems != 1 || len(probs) != 1 || probs[0].Line != 4 {
		t.Errorf("tally %+v no verdict %d problems %v", tally.Judge, tally.NoVerdict, probs)
	}
	if len(tally.Disagreements) != 1 || tally.Disagreements[0].ID != "3" {
		t.Errorf("disagreements %+v, want row 3", tally.Disagreements)
	}
	// Unknown role: the client refuses, and the run says so.
	_, err = agreement.Run(context.Background(), agreement.Read(strings.NewReader(labels), "l.jsonl"), agreement.Options{Client: client, Role: "nobody"})
	if err == nil {
		t.Error("an unknown role measured")
	}
}

func FuzzRead(f *testing.F) {
	f.Add(`{"label": true, "id": "a1", "sssc_message": "x", "compacted_summary": "y"}`)
	f.Add(`{"id": 1, "constraint": "x", "context": [{"role":"user","content":"c"}], "human": 0, "sssc_id": 3}`)
	f.Add(`{"id": "k", "judge_retention": "yes", "sssc_id": -1}`)
	f.Fuzz(func(t *testing.T, s string) {
		for r, p := range agreement.Read(strings.NewReader(s), "f") {
			if p == nil && (r.ID == "" || len(r.Context) == 0 || strings.TrimSpace(r.Constraint) == "") {
				t.Fatalf("accepted an incomplete row %+v", r)
			}
		}
		_, _, _ = agreement.ReadKey(strings.NewReader(s), "f")
	})
}
