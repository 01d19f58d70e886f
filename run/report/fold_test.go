package report_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// randomRun builds a run of convs conversations from a fixed PCG: turn
// types, three curate strategies, a both-orders pair and a random-order
// pair with every outcome (invalid ones too), and conversation ids whose
// sorted order is not their ingest order.
func randomRun(t testing.TB, seed uint64, convs int) *fakeRun {
	r := rand.New(rand.NewPCG(seed, 7))
	f := &fakeRun{plans: map[string][]ledger.Variant{}, units: map[string][]ledger.Unit{}}
	f.status = ledger.Status{Conversations: int64(convs)}
	oc := []string{"A", "B", "tie", "A", "B", "tie", "maybe"}
	for seq := int64(1); seq <= int64(convs); seq++ {
		turns := 2 + r.IntN(6)
		for turn := 2; turn <= turns; turn++ {
			if r.IntN(5) > 0 {
				f.add("classify", "llm", seq, turn, ledger.Done, map[string]any{"type": []string{"new_ask", "feedback", "no_feedback"}[r.IntN(3)], "refs": []string{}, "annotator": "llm:m"}, 0)
			}
			fcTok := 50 + r.IntN(2000)
			for _, c := range []curated.Context{
				{Strategy: "fc", Turn: turn, Tokens: fcTok},
				{Strategy: "ao", Turn: turn, Tokens: r.IntN(fcTok + 1)},
				{Strategy: "gated-reset", Turn: turn, Tokens: r.IntN(fcTok + 1), Info: curated.Info{Operator: curated.OpGatedReset, Action: "pass", Analyzed: r.IntN(2) == 0, GateOpen: r.IntN(3) == 0, Resets: r.IntN(3)}},
			} {
				b, err := curated.EncodeContext(c)
				if err != nil {
					t.Fatal(err)
				}
				f.add(curate.StageName, c.Strategy, seq, turn, ledger.Done, b, int64(c.Tokens))
			}
			both := judge.Output{Pair: "fc:ao", A: "fc", B: "ao", Context: "full", Order: "both", Prompt: "p@v1"}
			for s := range 1 + r.IntN(2) {
				c := judge.Comparison{Sample: s, Outcome: map[string]string{}, Identical: r.IntN(10) == 0}
				if !c.Identical {
					c.Calls = []judge.Call{{First: "A", Verdicts: map[string]judge.DimVerdict{}}, {First: "B", Verdicts: map[string]judge.DimVerdict{}}}
				}
				for _, d := range judge.Dimensions() {
					a, b := oc[r.IntN(len(oc))], oc[r.IntN(len(oc))]
					c.Outcome[d] = "tie"
					if a == b {
						c.Outcome[d] = a
					}
					if !c.Identical {
						c.Calls[0].Verdicts[d], c.Calls[1].Verdicts[d] = judge.DimVerdict{Outcome: a}, judge.DimVerdict{Outcome: b}
					}
				}
				both.Comparisons = append(both.Comparisons, c)
			}
			status := ledger.Done
			if r.IntN(15) == 0 {
				status = ledger.Failed
			}
			f.add(judge.StageName, "fc:ao", seq, turn, status, both, 0)
			rnd := judge.Output{Pair: "ao:fc", A: "ao", B: "fc", Context: "full", Order: "random", Seed: 3, Prompt: "p@v1",
				Comparisons: []judge.Comparison{{Outcome: map[string]string{"quality": oc[r.IntN(len(oc))], "on_topic": oc[r.IntN(len(oc))]},
					Calls: []judge.Call{{First: []string{"A", "B"}[r.IntN(2)]}}}}}
			f.add(judge.StageName, "ao:fc", seq, turn, ledger.Done, rnd, 0)
		}
	}
	// Ids that sort differently from seq: the bootstrap must visit
	// conversations in id order whatever order they were read in.
	for _, us := range f.units {
		for i := range us {
			us[i].ConvID = fmt.Sprintf("%08x", uint32(us[i].ConvSeq)*2654435761)
		}
	}
	f.status.Stages = stagesOf(f)
	return f
}

func buildJSON(t *testing.T, src report.Source, opts report.Options) []byte {
	t.Helper()
	r, err := report.Build(context.Background(), src, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The page size changes how the run is read, never a number.
func TestReportPageSizeChangesNothing(t *testing.T) {
	f := randomRun(t, 1, 40)
	want := buildJSON(t, f, report.Options{Seed: 5, Resamples: 200})
	for _, size := range []int{1, 2, 7, 39} {
		if got := buildJSON(t, f, report.Options{Seed: 5, Resamples: 200, PageSize: size}); !bytes.Equal(got, want) {
			t.Errorf("page size %d gives a different report", size)
		}
	}
}

// The folded summaries equal stats.Summarize and its breakdowns over every
// verdict of the run, collected as the report did before it streamed.
func TestReportFoldMatchesWholeRunStatistics(t *testing.T) {
	f := randomRun(t, 2, 120)
	so := stats.Options{Seed: 9, Resamples: 300}
	r, err := report.Build(context.Background(), f, report.Options{Seed: 9, Resamples: 300, PageSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, u := range f.units["classify"] {
		if l, err := classify.Decode(u.Output); err == nil && u.Status == ledger.Done {
			types[fmt.Sprint(u.ConvSeq, "/", u.Turn)] = l.Type
		}
	}
	if len(r.Pairs) != 2 {
		t.Fatalf("%d pairs", len(r.Pairs))
	}
	for _, pr := range r.Pairs {
		for _, dr := range pr.Dimensions {
			var vs []stats.Verdict
			for _, u := range f.units[judge.StageName] {
				if u.Variant != pr.Pair {
					continue
				}
				obs, err := judge.Observations(u)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range obs {
					if o.Dimension != dr.Dimension {
						continue
					}
					tt := types[fmt.Sprint(u.ConvSeq, "/", u.Turn)]
					if tt == "" {
						tt = report.Unclassified
					}
					vs = append(vs, o.Verdict(tt))
				}
			}
			check := func(what string, got report.Summary, want stats.Summary) {
				t.Helper()
				if got.N != want.N || got.Wins != want.Wins || got.Ties != want.Ties || got.Invalid != want.Invalid || got.Conversations != want.Conversations ||
					!same(float64(got.CI.Lo), want.Bootstrap.Lo) || !same(float64(got.CI.Hi), want.Bootstrap.Hi) || !same(float64(got.WinRate), want.WinRate) {
					t.Errorf("%s %s %s: report n=%d convs=%d CI [%v, %v]; whole run n=%d convs=%d CI %+v",
						pr.Pair, dr.Dimension, what, got.N, got.Conversations, got.CI.Lo, got.CI.Hi, want.N, want.Conversations, want.Bootstrap)
				}
			}
			check("overall", dr.Overall, stats.Summarize(vs, so))
			byType := stats.ByTurnType(vs, so)
			if len(byType) != len(dr.ByTurnType) {
				t.Fatalf("%d turn-type groups, want %d", len(dr.ByTurnType), len(byType))
			}
			for i, g := range byType {
				check("type "+g.TurnType, dr.ByTurnType[i].Summary, g.Summary)
			}
			byRound := stats.ByRound(vs, so)
			if len(byRound) != len(dr.ByRound) {
				t.Fatalf("%d rounds, want %d", len(dr.ByRound), len(byRound))
			}
			for i, g := range byRound {
				check(fmt.Sprint("round ", g.Turn), dr.ByRound[i].Summary, g.Summary)
			}
		}
	}
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// A strategy whose turns failed or were never attempted says so, with the
// reasons, next to its numbers.
func TestReportProgress(t *testing.T) {
	f := fixedRun(t)
	f.status.Conversations = 6 // conversations 5 and 6 were never curated
	// gated-reset failed on both turns of conversation 2 (its done units
	// are removed) for two reasons that differ only in particulars.
	var kept []ledger.Unit
	for _, u := range f.units[curate.StageName] {
		if u.Variant == "gated-reset" && u.ConvSeq == 2 {
			u.Status, u.Output = ledger.Failed, nil
			u.Error = fmt.Sprintf("endpoint analyzer: 400 bad request: context length %d exceeds 8192", 9000+u.Turn)
		}
		kept = append(kept, u)
	}
	f.units[curate.StageName] = kept
	// A classify variant the report does not summarize (llm is preferred)
	// with failures of its own: read for its reasons only.
	f.add("classify", "heuristic", 1, 2, ledger.Done, map[string]any{"type": "new_ask", "refs": []string{}, "annotator": "heuristic"}, 0)
	f.add("classify", "heuristic", 1, 3, ledger.Failed, nil, 0)
	f.units["classify"][len(f.units["classify"])-1].Error = ""
	f.status.Stages = stagesOf(f)

	r, err := report.Build(context.Background(), f, report.Options{Seed: 1, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	find := func(stage, variant string) report.Progress {
		for _, p := range r.Progress {
			if p.Stage == stage && p.Variant == variant {
				return p
			}
		}
		t.Fatalf("no progress row for %s %s in %+v", stage, variant, r.Progress)
		return report.Progress{}
	}
	gr := find(curate.StageName, "gated-reset")
	if gr.UnitsDone != 6 || gr.UnitsFailed != 2 || gr.ConversationsDone != 3 || gr.ConversationsFailed != 1 || gr.ConversationsNotTried != 2 {
		t.Errorf("gated-reset progress %+v", gr)
	}
	if len(gr.Failures) != 1 || gr.Failures[0].Units != 2 || gr.Failures[0].Reason != "endpoint analyzer: N bad request: context length N exceeds N" ||
		gr.Failures[0].Example.Conversation != "c2" || gr.Failures[0].Example.Turn != 2 || !strings.Contains(gr.Failures[0].Example.Error, "9002") {
		t.Errorf("gated-reset failures %+v", gr.Failures)
	}
	h := find("classify", "heuristic")
	if h.UnitsDone != 1 || h.UnitsFailed != 1 || len(h.Failures) != 1 || h.Failures[0].Reason != "no error recorded" {
		t.Errorf("classify heuristic progress %+v", h)
	}
	if fc := find(curate.StageName, "fc"); fc.UnitsFailed != 0 || fc.ConversationsNotTried != 2 || len(fc.Failures) != 0 {
		t.Errorf("fc progress %+v", fc)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"curate gated-reset: 2 of 8 units failed (most often: endpoint analyzer: N bad request", "2 conversations were never attempted", "'ac3 retry --stage curate'"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	// The gate rates of gated-reset stand beside what they leave out.
	var md, html bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| 2 turns failed, 2 conversations not attempted |") || !strings.Contains(md.String(), "## Progress") {
		t.Errorf("report.md does not show what gated-reset's rates leave out:\n%s", md.String())
	}
	if !strings.Contains(html.String(), "gated-reset: 2 turns failed, 2 conversations not attempted; its rates cover the curated turns only") {
		t.Error("report.html does not show what gated-reset's rates leave out")
	}
}

func TestFailureReasonsAreBounded(t *testing.T) {
	f := &fakeRun{plans: map[string][]ledger.Variant{}, units: map[string][]ledger.Unit{}, status: ledger.Status{Conversations: 100}}
	for seq := int64(1); seq <= 100; seq++ {
		f.add("respond", "fc", seq, 2, ledger.Failed, nil, 0)
		// Every error is its own reason: letters, not numbers, differ.
		f.units["respond"][seq-1].Error = "model refused: " + strings.Repeat(string(rune('a'+seq%26)), int(1+seq/26))
	}
	f.status.Stages = stagesOf(f)
	r, err := report.Build(context.Background(), f, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Progress[0]
	var sum int64
	for _, fl := range p.Failures {
		sum += fl.Units
	}
	if len(p.Failures) > 33 || sum != 100 || p.UnitsFailed != 100 {
		t.Errorf("%d reasons covering %d of %d failed units", len(p.Failures), sum, p.UnitsFailed)
	}
}

// reversed serves a run's units in the wrong order, as a broken source
// might: the report must refuse with an error, not panic or miscount.
type reversed struct{ *fakeRun }

func (r reversed) Units(ctx context.Context, stage string, vs []ledger.Variant, after, upto int64, fn func(ledger.Unit) error) error {
	var us []ledger.Unit
	if err := r.fakeRun.Units(ctx, stage, vs, after, upto, func(u ledger.Unit) error {
		us = append(us, u)
		return nil
	}); err != nil {
		return err
	}
	for i := len(us) - 1; i >= 0; i-- {
		if err := fn(us[i]); err != nil {
			return err
		}
	}
	return nil
}

func TestReportRefusesUnitsOutOfOrder(t *testing.T) {
	_, err := report.Build(context.Background(), reversed{randomRun(t, 3, 5)}, report.Options{})
	if err == nil || !strings.Contains(err.Error(), "came after seq") {
		t.Errorf("units out of order: err = %v", err)
	}
}
