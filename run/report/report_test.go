package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/respond"
)

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files instead of comparing")
	}
}

// fakeRun is a fixed run: units held in memory, served like the ledger.
type fakeRun struct {
	plans  map[string][]ledger.Variant
	units  map[string][]ledger.Unit
	status ledger.Status
}

func (f *fakeRun) Path() string { return "/somewhere/fixed.db" }
func (f *fakeRun) Plans(context.Context) (map[string][]ledger.Variant, error) {
	return f.plans, nil
}
func (f *fakeRun) Status(context.Context) (ledger.Status, error) { return f.status, nil }
func (f *fakeRun) Units(_ context.Context, stage string, vs []ledger.Variant, after, upto int64, fn func(ledger.Unit) error) error {
	for _, u := range f.units[stage] {
		for _, v := range vs {
			if u.Variant == v.Name && u.Version == v.Version && u.ConvSeq > after && u.ConvSeq <= upto {
				if err := fn(u); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// EachPage pages through the conversations that have a unit, size at a
// time, as the ledger pages through the kept ones.
func (f *fakeRun) EachPage(ctx context.Context, size int, fn func(page []ledger.Stored, after, upto int64) error) error {
	seqs := map[int64]string{}
	for _, us := range f.units {
		for _, u := range us {
			seqs[u.ConvSeq] = u.ConvID
		}
	}
	keys := make([]int64, 0, len(seqs))
	for k := range seqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var after int64
	for start := 0; start < len(keys); start += size {
		var page []ledger.Stored
		for _, k := range keys[start:min(start+size, len(keys))] {
			page = append(page, ledger.Stored{Seq: k, Conv: &conv.Conversation{ID: seqs[k]}})
		}
		upto := page[len(page)-1].Seq
		if err := fn(page, after, upto); err != nil {
			return err
		}
		after = upto
	}
	return nil
}

func (f *fakeRun) add(stage, variant string, seq int64, turn int, status string, out any, tokens int64) {
	b, ok := out.([]byte)
	if !ok {
		b, _ = json.Marshal(out)
	}
	u := ledger.Unit{Key: fmt.Sprintf("%s/%s/%d/%d", stage, variant, seq, turn), ConvID: fmt.Sprintf("c%d", seq), ConvSeq: seq, Turn: turn, Variant: variant, Version: "v1", Status: status, Output: b, Tokens: tokens}
	f.units[stage] = append(f.units[stage], u)
	for _, v := range f.plans[stage] {
		if v.Name == variant {
			return
		}
	}
	f.plans[stage] = append(f.plans[stage], ledger.Variant{Name: variant, Version: "v1"})
}

// fixedRun has 4 conversations with turns 2–3: curate fc/ao/gated-reset
// (gated-reset with its decision records), answers, a both-orders pair and
// a random-order pair, turn types, pollution and constraints, and model
// spend.
func fixedRun(t *testing.T) *fakeRun {
	f := &fakeRun{plans: map[string][]ledger.Variant{}, units: map[string][]ledger.Unit{}}
	f.status = ledger.Status{Conversations: 4, LLM: []ledger.LLMUsage{
		{Role: "judge", Model: "judge-m", Stage: "judge", Calls: 14, CacheHits: 2, PromptTokens: 9000, CompletionTokens: 700, CostUSD: 0.0125, SentPromptTokens: 7700, SentCachedTokens: 4608},
		{Role: "respondent", Model: "resp-m", Stage: "respond", Calls: 16, PromptTokens: 5000, CompletionTokens: 3200, CostUSD: 0.004, SentPromptTokens: 5000},
	}}
	types := []string{"new_ask", "feedback", "no_feedback"}
	k := 0
	for seq := int64(1); seq <= 4; seq++ {
		for turn := 2; turn <= 3; turn++ {
			k++
			fc := curated.Context{Strategy: "fc", Turn: turn, Parts: []curated.Part{curated.MessagePart(0), curated.MessagePart(1), curated.MessagePart(2)}, Tokens: 100 * turn, Messages: 3}
			ao := curated.Context{Strategy: "ao", Turn: turn, Parts: []curated.Part{curated.MessagePart(0), curated.MessagePart(2)}, Tokens: 40 * turn, Messages: 2}
			// gated-reset: turn 2 is below the floor; at turn 3 the
			// analysis finds issues (a reset) in odd conversations and
			// none in even ones; conversation 4's analysis came from the
			// cache (paid by an earlier pass: the report prices it all
			// the same).
			gr := fc
			gr.Strategy = "gated-reset"
			gr.Info = curated.Info{Operator: curated.OpGatedReset, Action: curated.ActionFloor}
			if turn == 3 {
				gr.Info = curated.Info{Operator: curated.OpGatedReset, Action: curated.ActionPass, Analyzed: true,
					Analysis:      analyze.Analysis{Spec: "spec", Aligned: "aligned", Issues: "None"},
					AnalysisUsage: analyze.Usage{Calls: 2, PromptTokens: 300, CompletionTokens: 80, CostUSD: 0.0011, ListUSD: 0.0011, Listed: 2}}
				if seq%2 == 1 {
					gr.Info.Action, gr.Info.GateOpen, gr.Info.Resets, gr.Info.Analysis.Issues = curated.ActionReset, true, 1, "wrong unit"
					gr.Parts, gr.Tokens, gr.Messages = []curated.Part{curated.TextPart("user", "reset"), curated.MessagePart(2)}, 60, 1
				}
				if seq == 4 {
					gr.Info.AnalysisUsage.Cached, gr.Info.AnalysisUsage.CostUSD = 2, 0
				}
			}
			for _, c := range []curated.Context{fc, ao, gr} {
				b, err := curated.EncodeContext(c)
				if err != nil {
					t.Fatal(err)
				}
				f.add(curate.StageName, c.Strategy, seq, turn, ledger.Done, b, int64(c.Tokens))
			}
			for _, s := range []string{"fc", "ao"} {
				f.add(respond.StageName, s, seq, turn, ledger.Done, respond.Output{Strategy: s, Respondent: "respondent", Model: "resp-m", Endpoint: "resp", ContextTokens: 100,
					Samples: []respond.Sample{{Text: s + " answer", CompletionTokens: 200, Reasoning: map[bool]string{true: "thought"}[s == "fc"]}}}, 200)
			}
			refs := []string{"1a", "2u"}[:min(k%3, 2)]
			f.add("classify", "llm", seq, turn, ledger.Done, map[string]any{"type": types[k%3], "confidence": 0.9, "refs": refs, "annotator": "llm:ann-m"}, 0)
			cat := map[bool]string{true: "intent_override", false: "code_carryover"}[k == 4]
			f.add("pollution", "llm", seq, turn, ledger.Done, map[string]any{"present": k%4 == 0, "category": cat, "annotator": "llm:ann-m"}, 0)
			// Odd conversations set one constraint at turn 2 (output in the
			// first, process in the third); it stays in force at turn 3.
			set := map[string]any{"text": "Reply in bullets.", "evidence": "bullets", "type": []string{"output", "process"}[seq/3], "turn": 2}
			isNew := seq%2 == 1 && turn == 2
			f.add("constraints", "heuristic", seq, turn, ledger.Done, map[string]any{"new": []any{set}[:map[bool]int{true: 1}[isNew]], "registry": []any{set}[:seq%2], "annotator": "heuristic"}, 0)
			// fc:ao in both orders: A first, then B first.
			oc := []string{"A", "B", "tie"}
			aFirst, bFirst := oc[k%3], oc[(k+k/3)%3]
			both := judge.Output{Pair: "fc:ao", A: "fc", B: "ao", Context: "full", Order: "both", Seed: 7, Prompt: "pairwise@v1+abc",
				Comparisons: []judge.Comparison{{Sample: 0,
					Calls: []judge.Call{
						{First: "A", Model: "judge-m", Endpoint: "judge", Verdicts: map[string]judge.DimVerdict{"quality": {Outcome: aFirst, Justification: fmt.Sprintf("c%d turn %d: %s keeps the <limit> & the format", seq, turn, aFirst)}, "on_topic": {Outcome: "tie"}}},
						{First: "B", Model: "judge-m", Endpoint: "judge", Verdicts: map[string]judge.DimVerdict{"quality": {Outcome: bFirst}, "on_topic": {Outcome: "A", Justification: "both stay on the thread"}}},
					}}}}
			for ci := range both.Comparisons {
				c := &both.Comparisons[ci]
				c.Outcome, c.Consistent = map[string]string{}, map[string]bool{}
				for _, d := range judge.Dimensions() {
					a, b := c.Calls[0].Verdicts[d].Outcome, c.Calls[1].Verdicts[d].Outcome
					c.Outcome[d], c.Consistent[d] = "tie", a == b
					if a == b {
						c.Outcome[d] = a
					}
				}
			}
			status := ledger.Done
			if k == 8 {
				status = ledger.Failed
			}
			f.add(judge.StageName, "fc:ao", seq, turn, status, both, 0)
			if status == ledger.Failed {
				us := f.units[judge.StageName]
				us[len(us)-1].Error = `parsing model answer (3 tries): unknown outcome "draw"`
			}
			first := []string{"A", "B"}[k%2]
			rnd := judge.Output{Pair: "ao:fc/user_only", A: "ao", B: "fc", Context: "user_only", Order: "random", Seed: 7, Prompt: "pairwise@v1+abc",
				Comparisons: []judge.Comparison{{Sample: 0, Identical: k == 5, Outcome: map[string]string{"quality": oc[(k+1)%3], "on_topic": "B"}}}}
			if k != 5 {
				rnd.Comparisons[0].Calls = []judge.Call{{First: first, Model: "judge-m", Endpoint: "judge", Verdicts: map[string]judge.DimVerdict{
					"quality": {Justification: fmt.Sprintf("the answer shown %s is\nmore complete", first)}}}}
			}
			f.add(judge.StageName, "ao:fc/user_only", seq, turn, ledger.Done, rnd, 0)
		}
	}
	f.status.Stages = stagesOf(f)
	return f
}

// stagesOf counts tasks and units per planned stage variant as the
// ledger's status does: a conversation's task failed when one of its units
// did; conversations without a unit are pending.
func stagesOf(f *fakeRun) []ledger.StageStatus {
	var out []ledger.StageStatus
	for _, stage := range slices.Sorted(maps.Keys(f.plans)) {
		for _, v := range f.plans[stage] {
			ss := ledger.StageStatus{Stage: stage, Variant: v.Name, Version: v.Version}
			failed := map[int64]bool{}
			seen := map[int64]bool{}
			for _, u := range f.units[stage] {
				if u.Variant != v.Name || u.Version != v.Version {
					continue
				}
				seen[u.ConvSeq] = true
				if u.Status == ledger.Done {
					ss.UnitsDone++
				} else {
					ss.UnitsFailed++
					failed[u.ConvSeq] = true
				}
			}
			ss.Failed = int64(len(failed))
			ss.Done = int64(len(seen)) - ss.Failed
			ss.Pending = f.status.Conversations - ss.Done - ss.Failed
			out = append(out, ss)
		}
	}
	return out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if flag.Lookup("update").Value.String() == "true" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", name, got)
	}
}

func TestReportGolden(t *testing.T) {
	r, err := report.Build(context.Background(), fixedRun(t), report.Options{Seed: 11, Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	var js, md, html bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", js.Bytes())
	golden(t, "report.md", md.Bytes())
	// The page is self-contained: nothing it would fetch. Its links lead
	// to its own sections or into 'ac3 view', which a reader starts.
	for _, bad := range []string{"<script", "src=", "<link", "@import", "url("} {
		if strings.Contains(html.String(), bad) {
			t.Errorf("report.html contains %q; it must open offline", bad)
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(html.String(), -1) {
		if !strings.HasPrefix(m[1], "#") && !strings.HasPrefix(m[1], report.DefaultViewBase+"/") {
			t.Errorf("report.html links to %q: neither a section nor the view", m[1])
		}
	}
	if !strings.Contains(html.String(), "ac3 view --db") {
		t.Error("report.html does not say its links need 'ac3 view'")
	}
	if n := strings.Count(html.String(), "<svg"); n < 5 {
		t.Errorf("report.html has %d charts", n)
	}
}

func TestReportEmptyRunHasNoNaN(t *testing.T) {
	f := &fakeRun{plans: map[string][]ledger.Variant{}, units: map[string][]ledger.Unit{}}
	f.add(judge.StageName, "fc:ao", 1, 2, ledger.Failed, judge.Output{}, 0)
	r, err := report.Build(context.Background(), f, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := report.Write(dir, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Fatalf("wrote %v", paths)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if strings.Contains(string(b), "NaN") || !strings.Contains(string(b), `"win_rate": null`) {
		t.Errorf("n = 0 must give null rates:\n%s", b)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
}
