package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/annotator/annotatortest"
)

// repliesScript answers the respondent and the pollution annotator. The
// respondent writes "POLLUTED" into its reply to an even round when its
// context holds the dataset's own assistant replies (fc), and a clean
// reply otherwise (filler, whose assistant turns are neutral text). The
// annotator labels a reply with POLLUTED as code carryover (confidence
// 0.8), a dataset reply whose first letter is A–M as intent override
// (0.7), and anything else clean (0.9).
func repliesScript(t *testing.T, dataset map[string]bool) *llmtest.Server {
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Name: "pollution", Match: func(r llmtest.ChatRequest) bool { return annotatortest.NonceOf(r) != "" }, Func: func(r llmtest.ChatRequest) llmtest.Reply {
		_, after, _ := strings.Cut(r.Last(), "[now] assistant")
		_, after, _ = strings.Cut(after, "\n") // past ", turn N"
		now, _, _ := strings.Cut(after, "</transcript>")
		now = strings.TrimSpace(now)
		body := `{"present": false, "category": "", "sources": [], "confidence": 0.9, "justification": "fresh"}`
		switch {
		case strings.Contains(now, "POLLUTED"):
			body = `{"present": true, "category": "code_carryover", "sources": ["1a"], "confidence": 0.8, "justification": "old code"}`
		case datasetPolluted(now):
			body = `{"present": true, "category": "intent_override", "sources": ["1a"], "confidence": 0.7, "justification": "old intent"}`
		}
		return llmtest.Reply{Content: annotatortest.Answer(annotatortest.NonceOf(r), body)}
	}})
	srv.Add(llmtest.Rule{Name: "respondent", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		fc, users := false, 0
		for _, m := range r.Messages {
			switch m.Role {
			case "assistant":
				fc = fc || dataset[m.Content]
			case "user":
				users++
			}
		}
		if fc && users%2 == 0 {
			return llmtest.Reply{Content: fmt.Sprintf("POLLUTED reply to round %d.", users)}
		}
		return llmtest.Reply{Content: fmt.Sprintf("clean reply to round %d.", users)}
	}})
	return srv
}

// datasetPolluted is the script's rule for the dataset's own replies.
func datasetPolluted(reply string) bool {
	for _, r := range strings.TrimSpace(reply) {
		return r >= 'A' && r <= 'M'
	}
	return false
}

// repliesRun ingests the WildChat sample into a run in a fresh folder and
// writes a config that curates and answers it with fc and filler against
// the script, plus the given pollution section (none when empty). It
// returns the folder, the run file, the config, the conversations and the
// script's server.
func repliesRun(t *testing.T, pollution string) (dir, db, cfg string, convs []*conv.Conversation, srv *llmtest.Server) {
	dir = t.TempDir()
	db = filepath.Join(dir, "run.db")
	in, _ := filepath.Abs(repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	mustRun(t, "ingest", "--db", db, in)
	dataset := map[string]bool{}
	func() {
		l, err := ledger.Open(context.Background(), db, ledger.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		page, err := l.ConversationPage(context.Background(), 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			convs = append(convs, s.Conv)
			for _, m := range s.Conv.Messages {
				if m.Role == conv.Assistant && strings.TrimSpace(m.Content) != "" {
					dataset[m.Content] = true
				}
			}
		}
	}()
	srv = repliesScript(t, dataset)
	cfg = filepath.Join(dir, "run.yaml")
	body := fmt.Sprintf(`run: {db: %s, out: %s, seed: 3}
endpoints:
  e: {base_url: %q}
models:
  m: {endpoint: e, name: m1, price: {input: 1.0, output: 2.0}}
roles:
  annotator: {model: m}
  respondent: {model: m}
stages:
  curate: {from_turn: 2, strategies: [fc, filler]}
  respond: {strategies: [fc, filler]}
%sreport: {formats: [json, md]}
`, db, filepath.Join(dir, "out"), srv.URL, pollution)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, db, cfg, convs, srv
}

// Huang et al.'s Table 1 from a run: every respond variant's replies and
// the dataset's reviewed for pollution, and the report's section checked
// against counts derived from the conversations and the script.
func TestRunReviewsGeneratedRepliesForPollution(t *testing.T) {
	dir, _, cfg, convs, srv := repliesRun(t, "  pollution: {on: [dataset, generated], strategies: [fc, filler]}\n")
	// The dry run, before any reply exists, counts one review per
	// generated reply (the dataset's replies standing in for them).
	var forecast struct {
		Stages []struct {
			Label string `json:"label"`
			Calls int64  `json:"calls"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "run", "--config", cfg, "--dry-run", "--json")), &forecast); err != nil {
		t.Fatal(err)
	}
	var dryCalls int64 = -1
	for _, s := range forecast.Stages {
		if s.Label == "pollution (generated replies: fc,filler)" {
			dryCalls = s.Calls
		}
	}
	if srv.Count() != 0 {
		t.Fatalf("the dry run called the model %d times", srv.Count())
	}
	out := mustRun(t, "run", "--config", cfg)
	if !strings.Contains(out, "pollution (generated replies: fc,filler)") {
		t.Errorf("run output does not name the review of generated replies:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	rp := r.ReplyPollution
	if rp == nil || len(rp.Variants) != 3 {
		t.Fatalf("reply pollution section: %+v", rp)
	}
	// Expected from the conversations: respond answers every user round
	// from 2; the dataset's replies from round 2 are reviewed where they
	// exist.
	var rounds, even, dsReplies, dsPolluted, bothRounds, bothEven, bothDsPolluted int
	convsEven := 0
	for _, c := range convs {
		hasEven := false
		for _, tr := range c.Turns() {
			if tr.Index < 2 {
				continue
			}
			rounds++
			isEven := tr.Index%2 == 0
			if isEven {
				even++
				hasEven = true
			}
			if tr.Reply >= 0 {
				dsReplies++
				p := datasetPolluted(c.Messages[tr.Reply].Content)
				if p {
					dsPolluted++
				}
				bothRounds++
				if isEven {
					bothEven++
				}
				if p {
					bothDsPolluted++
				}
			}
		}
		if hasEven {
			convsEven++
		}
	}
	if even == 0 || dsPolluted == 0 || dsPolluted == dsReplies {
		t.Fatalf("the fixture does not exercise the script: %d rounds, %d even, %d/%d dataset replies polluted", rounds, even, dsPolluted, dsReplies)
	}
	check := func(what string, got, want int) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, want %d", what, got, want)
		}
	}
	ds, fc, fl := rp.Variants[0], rp.Variants[1], rp.Variants[2]
	if ds.Source != "dataset" || fc.Source != "fc" || fl.Source != "filler" {
		t.Fatalf("variants %s, %s, %s; want dataset, fc, filler", ds.Source, fc.Source, fl.Source)
	}
	// The dry run's estimate for this stage: one per generated reply of
	// each strategy, the dataset's reply standing in (its own review is
	// the annotate step's call, counted there once).
	if dryCalls != int64(2*dsReplies) {
		t.Errorf("dry run forecast %d calls for the review stage, want %d (a stand-in for each of the dataset's %d replies, for each of 2 strategies)", dryCalls, 2*dsReplies, dsReplies)
	}
	check("dataset replies", ds.Replies, dsReplies)
	check("dataset polluted", ds.Any.Count, dsPolluted)
	check("dataset intent_override", ds.Categories[0].Replies.Count, dsPolluted)
	check("fc replies", fc.Replies, rounds)
	check("fc polluted", fc.Any.Count, even)
	check("fc code_carryover", fc.Categories[1].Replies.Count, even)
	check("fc conversations with a polluted reply", fc.AnyConversations.Count, convsEven)
	check("filler replies", fl.Replies, rounds)
	check("filler polluted", fl.Any.Count, 0)
	if math.Abs(float64(fc.Categories[1].MeanConfidence)-0.8) > 1e-9 || math.Abs(float64(ds.Categories[0].MeanConfidence)-0.7) > 1e-9 || math.Abs(float64(fl.AbsentConfidence)-0.9) > 1e-9 {
		t.Errorf("confidences: fc code %v, dataset intent %v, filler clean %v", fc.Categories[1].MeanConfidence, ds.Categories[0].MeanConfidence, fl.AbsentConfidence)
	}
	if w := wilson(float64(even), rounds); math.Abs(float64(fc.Any.Wilson.Lo)-w[0]) > 1e-6 || math.Abs(float64(fc.Any.Wilson.Hi)-w[1]) > 1e-6 {
		t.Errorf("fc Wilson %v, want %v", fc.Any.Wilson, w)
	}
	// Pairs: (dataset, fc), (dataset, filler), (fc, filler), each on any
	// category then per category.
	if len(rp.Pairs) != 18 {
		t.Fatalf("%d paired tests, want 18", len(rp.Pairs))
	}
	ff := rp.Pairs[12]
	if ff.A != "responses:fc" || ff.B != "responses:filler" || ff.Category != "" || ff.Pairs != rounds || ff.PollutedA != even || ff.PollutedB != 0 || ff.OnlyA != even || ff.OnlyB != 0 ||
		math.Abs(float64(ff.P)-signP(even, even)) > 1e-6 {
		t.Errorf("fc vs filler: %+v; want %d pairs, %d only under fc, p %v", ff, rounds, even, signP(even, even))
	}
	df := rp.Pairs[0]
	if df.A != "llm" || df.B != "responses:fc" || df.Pairs != bothRounds || df.PollutedA != bothDsPolluted || df.PollutedB != bothEven {
		t.Errorf("dataset vs fc: %+v; want %d pairs, %d and %d polluted", df, bothRounds, bothDsPolluted, bothEven)
	}
	md, err := os.ReadFile(filepath.Join(dir, "out", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Pollution of generated replies", "| category | dataset | fc | filler |", fmt.Sprintf("| code_carryover | 0/%d", dsReplies)} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	// Run again: nothing to do, no call.
	calls := srv.Count()
	mustRun(t, "run", "--config", cfg)
	if srv.Count() != calls {
		t.Errorf("second run made %d calls", srv.Count()-calls)
	}
}

// The same review from the command line: annotate --on responses after a
// run that generated the replies.
func TestAnnotateOnResponses(t *testing.T) {
	dir, db, cfg, convs, _ := repliesRun(t, "")
	mustRun(t, "run", "--config", cfg)
	if _, _, err := runApp(t, "annotate", "--db", db, "--config", cfg, "--stages", "pollution", "--strategies", "fc"); err == nil || !strings.Contains(err.Error(), "--on responses") {
		t.Errorf("--strategies without --on responses: %v", err)
	}
	out := mustRun(t, "annotate", "--db", db, "--config", cfg, "--stages", "pollution", "--on", "responses", "--strategies", "filler")
	if !strings.Contains(out, "pollution (generated replies: filler)") {
		t.Errorf("annotate output:\n%s", out)
	}
	mustRun(t, "report", "--db", db, "--out", filepath.Join(dir, "rep"), "--formats", "json")
	b, err := os.ReadFile(filepath.Join(dir, "rep", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	rounds := 0
	for _, c := range convs {
		rounds += max(len(c.Turns())-1, 0)
	}
	if rp := r.ReplyPollution; rp == nil || len(rp.Variants) != 1 || rp.Variants[0].Source != "filler" || rp.Variants[0].Replies != rounds || rp.Variants[0].Any.Count != 0 || len(rp.Pairs) != 0 {
		t.Errorf("reply pollution after annotate --on responses: %+v (want filler only, %d replies, none polluted)", rp, rounds)
	}
}
