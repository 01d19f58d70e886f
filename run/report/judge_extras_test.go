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
	"github.com/ac3/ac3/stages/pollution"
	"github.com/ac3/ac3/stages/respond"
)

// lengthRun is a run whose verdicts follow a known model: strategy x beats
// ref with probability σ(logit(rate) + slope·tanh(Δ/300)), Δ the length of
// x's answer minus ref's in characters, drawn around +200 so that x's answers
// are mostly longer and its raw win rate overstates its rate at equal
// length.
func lengthRun(t *testing.T, seed uint64, convs int, rate, slope float64) *fakeRun {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	f := &fakeRun{plans: map[string][]ledger.Variant{}, units: map[string][]ledger.Unit{}}
	f.status = ledger.Status{Conversations: int64(convs)}
	a := math.Log(rate / (1 - rate))
	for seq := int64(1); seq <= int64(convs); seq++ {
		for turn := 2; turn <= 1+1+r.IntN(4); turn++ {
			delta := int(math.Round(200 + 300*r.NormFloat64()))
			lenRef := 800
			lenX := max(lenRef+delta, 0)
			delta = lenX - lenRef
			p := 1 / (1 + math.Exp(-(a + slope*math.Tanh(float64(delta)/300))))
			out := "B"
			if r.Float64() < p {
				out = "A"
			}
			f.add(respond.StageName, "x", seq, turn, ledger.Done, respond.Output{Strategy: "x", Samples: []respond.Sample{{Text: strings.Repeat("é", lenX), Reasoning: "not counted"}}}, 0)
			f.add(respond.StageName, "ref", seq, turn, ledger.Done, respond.Output{Strategy: "ref", Samples: []respond.Sample{{Text: "  " + strings.Repeat("r", lenRef) + "\n"}}}, 0)
			f.add(judge.StageName, "x:ref", seq, turn, ledger.Done, judge.Output{Pair: "x:ref", A: "x", B: "ref", Context: "full", Order: "random", Seed: 1,
				Comparisons: []judge.Comparison{{Outcome: map[string]string{judge.Quality: out, judge.OnTopic: "tie"}, Calls: []judge.Call{{First: "A"}}}}}, 0)
		}
	}
	f.status.Stages = stagesOf(f)
	return f
}

// The report's length-controlled win rate recovers the rate at equal length
// where the raw win rate does not, and equals stats.LengthControlledWinRate
// on the same verdicts whatever the page size.
func TestReportLengthControlledWinRate(t *testing.T) {
	const rate, slope = 0.6, 1.5
	f := lengthRun(t, 1, 1200, rate, slope)
	var vs []stats.LengthVerdict
	for _, u := range f.units[judge.StageName] {
		o, err := judge.Decode(u.Output)
		if err != nil {
			t.Fatal(err)
		}
		lens := map[string]int{}
		for _, ru := range f.units[respond.StageName] {
			if ru.ConvSeq == u.ConvSeq && ru.Turn == u.Turn {
				ro, _ := respond.Decode(ru.Output)
				lens[ru.Variant] = len([]rune(strings.TrimSpace(ro.Samples[0].Text)))
			}
		}
		oc, _ := stats.ParseOutcome(o.Comparisons[0].Outcome[judge.Quality])
		vs = append(vs, stats.LengthVerdict{Conversation: u.ConvID, Outcome: oc, LenA: lens["x"], LenB: lens["ref"]})
	}
	so := stats.Options{Seed: 4, Resamples: 200}
	want, err := stats.LengthControlledWinRate(vs, so)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{512, 1, 37} {
		r, err := report.Build(context.Background(), f, report.Options{Seed: 4, Resamples: 200, PageSize: size})
		if err != nil {
			t.Fatal(err)
		}
		l := r.Pairs[0].Dimensions[0].LengthControlled
		if l == nil || r.Pairs[0].Dimensions[0].Dimension != judge.Quality {
			t.Fatalf("page size %d: no length-controlled rate on quality: %+v", size, r.Pairs[0].Dimensions[0])
		}
		if l.N != want.N || l.Conversations != want.Conversations || l.NoLength != 0 ||
			!same(float64(l.LCWinRate), want.LCWinRate) || !same(float64(l.CI.Lo), want.Bootstrap.Lo) || !same(float64(l.CI.Hi), want.Bootstrap.Hi) {
			t.Errorf("page size %d: report LC %+v; stats on the same verdicts %+v", size, *l, want)
		}
	}
	// The known effect: raw rate well above the true rate, LC near it
	// with an interval that covers it, and a positive slope.
	if want.WinRate < rate+0.08 {
		t.Errorf("raw win rate %.3f: the synthetic length effect is missing", want.WinRate)
	}
	if math.Abs(want.LCWinRate-rate) > 0.04 || want.Bootstrap.Lo > rate || want.Bootstrap.Hi < rate || math.Abs(want.Slope-slope) > 0.5 {
		t.Errorf("LC %.3f [%.3f, %.3f], slope %.2f; true rate %.2f, slope %.2f", want.LCWinRate, want.Bootstrap.Lo, want.Bootstrap.Hi, want.Slope, rate, slope)
	}
	// on_topic is all ties: LC equals the raw 50%.
	r, err := report.Build(context.Background(), f, report.Options{Seed: 4, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Pairs[0].Dimensions[1].LengthControlled; l.LCWinRate != 0.5 || l.WinRate != 0.5 {
		t.Errorf("all ties: LC %v, raw %v; want 0.5", l.LCWinRate, l.WinRate)
	}
}

// armRun has two pairs against the reference ao, gated-reset:ao and ao:fc
// (fc is strategy B, so its outcomes are read from its side), on the same
// turns, plus a pair under another judge context that must not join them.
// Curated contexts: gated-reset builds ao's context on odd turns.
func armRun(t *testing.T) *fakeRun {
	t.Helper()
	f := &fakeRun{plans: map[string][]ledger.Variant{}, units: map[string][]ledger.Unit{}}
	// quality outcomes per comparison, from each arm's side against ao:
	// gated-reset, then fc.
	rows := [][2]string{
		{"A", "A"}, {"A", "B"}, {"A", "tie"}, {"A", "B"}, // X better: 3 (A/B, A/tie, A/B)
		{"B", "A"}, {"tie", "A"}, // Y better: 2
		{"B", "B"}, {"tie", "tie"}, {"tie", "B"}, // concordant (no success either)
		{"A", "bogus"}, // invalid
	}
	flip := map[string]string{"A": "B", "B": "A", "tie": "tie", "bogus": "bogus"}
	for i, row := range rows {
		seq, turn := int64(1+i/2), 2+i%2
		cmp := func(o string, identical bool) judge.Comparison {
			c := judge.Comparison{Outcome: map[string]string{judge.Quality: o, judge.OnTopic: "tie"}, Identical: identical}
			if !identical {
				c.Calls = []judge.Call{{First: "A"}}
			}
			return c
		}
		// gated-reset's answer equals ao's on odd turns with a tie.
		sameCtx := turn == 3
		noCall := sameCtx && row[0] == "tie"
		f.add(judge.StageName, "gated-reset:ao", seq, turn, ledger.Done, judge.Output{Pair: "gated-reset:ao", A: "gated-reset", B: "ao", Context: "full", Order: "random",
			Comparisons: []judge.Comparison{cmp(row[0], noCall)}}, 0)
		f.add(judge.StageName, "ao:fc", seq, turn, ledger.Done, judge.Output{Pair: "ao:fc", A: "ao", B: "fc", Context: "full", Order: "random",
			Comparisons: []judge.Comparison{cmp(flip[row[1]], false)}}, 0)
		f.add(judge.StageName, "gated-reset:fc/user_only", seq, turn, ledger.Done, judge.Output{Pair: "gated-reset:fc/user_only", A: "gated-reset", B: "fc", Context: "user_only", Order: "random",
			Comparisons: []judge.Comparison{cmp("A", false)}}, 0)
		for _, s := range []string{"fc", "ao", "gated-reset"} {
			parts := map[string][]curated.Part{
				"fc": {curated.MessagePart(0), curated.MessagePart(1), curated.MessagePart(2)},
				"ao": {curated.MessagePart(0), curated.MessagePart(2)},
			}
			p := parts[s]
			if s == "gated-reset" {
				p = []curated.Part{curated.TextPart("user", "reset"), curated.MessagePart(2)}
				if sameCtx {
					p = parts["ao"]
				}
			}
			b, err := curated.EncodeContext(curated.Context{Strategy: s, Turn: turn, Parts: p, Tokens: 10})
			if err != nil {
				t.Fatal(err)
			}
			f.add(curate.StageName, s, seq, turn, ledger.Done, b, 10)
			f.add(respond.StageName, s, seq, turn, ledger.Done, respond.Output{Strategy: s, Samples: []respond.Sample{{Text: s}}}, 0)
		}
	}
	f.status.Stages = stagesOf(f)
	return f
}

func TestReportArmsAndSameContext(t *testing.T) {
	f := armRun(t)
	for _, size := range []int{512, 2} {
		r, err := report.Build(context.Background(), f, report.Options{Seed: 1, Resamples: 50, PageSize: size})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Arms) != 2 {
			t.Fatalf("page size %d: %d arm rows, want 2 (one per dimension; the user_only pair joins nothing): %+v", size, len(r.Arms), r.Arms)
		}
		q := r.Arms[0]
		want := report.ArmRow{Dimension: judge.Quality, Context: "full", Reference: "ao", X: "gated-reset", Y: "fc", XPair: "gated-reset:ao", YPair: "ao:fc",
			Ties: "losses", Turns: 9, Invalid: 1, Concordant: 4, XBetter: 3, YBetter: 2,
			XRate: report.Num(4.0 / 9), YRate: report.Num(3.0 / 9), Diff: report.Num(1.0 / 9), P: report.Num(stats.McNemarExact(3, 2))}
		if q != want {
			t.Errorf("page size %d: quality arms\n got %+v\nwant %+v", size, q, want)
		}
		if o := r.Arms[1]; o.Dimension != judge.OnTopic || o.Turns != 10 || o.XBetter != 0 || o.YBetter != 0 || o.P != 1 {
			t.Errorf("page size %d: on_topic arms (all ties): %+v", size, o)
		}
		for _, p := range r.Pairs {
			wantSame, wantNoCall := 0, 0
			if p.Pair == "gated-reset:ao" {
				wantSame, wantNoCall = 5, 2 // odd turns; ties on two of them
			}
			if p.SameContext != wantSame || p.SameContextNoCall != wantNoCall || (p.Pair == "gated-reset:ao" && p.Identical != 2) {
				t.Errorf("page size %d: %s same context %d, without a call %d, identical %d; want %d, %d", size, p.Pair, p.SameContext, p.SameContextNoCall, p.Identical, wantSame, wantNoCall)
			}
		}
		var md strings.Builder
		if err := r.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"## Arms against a common reference", "| quality | ao | gated-reset | fc | full | 9 | 44.4% | 33.3% | 11.1% | 3 | 2 | 1.000 | 1 |", "| gated-reset:ao | 10 | 5 | 2 | 2 |", "## Length-controlled win rates"} {
			if !strings.Contains(md.String(), s) {
				t.Errorf("markdown lacks %q", s)
			}
		}
		var h strings.Builder
		if err := r.WriteHTML(&h); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{`<h2 id="arms-against-a-common-reference">Arms against a common reference</h2>`, `<h2 id="length-controlled-win-rates">Length-controlled win rates</h2>`, `>gated-reset:ao</a></td><td>10</td><td>5</td><td>2</td><td>2</td>`, "<details><summary>2 McNemar tests between arms"} {
			if !strings.Contains(h.String(), s) {
				t.Errorf("html lacks %q", s)
			}
		}
	}
}

// Turn-type shares from the heuristic come with its measured coverage and
// accuracy and the set they were measured on; shares from the model do not.
func TestReportHeuristicQualityBesideTurnTypes(t *testing.T) {
	q := classify.HeuristicQuality()
	for _, tc := range []struct {
		variant, version string
		want, applies    bool
	}{
		{"heuristic", q.Annotator + ";from=2", true, true},
		{"heuristic", "classify-heuristic@v0;from=2", true, false},
		{"llm", "classify-llm@v3", false, false},
	} {
		f := &fakeRun{plans: map[string][]ledger.Variant{}, units: map[string][]ledger.Unit{}}
		for seq := int64(1); seq <= 3; seq++ {
			f.add("classify", tc.variant, seq, 2, ledger.Done, map[string]any{"type": []string{"new_ask", "feedback", "unknown"}[seq-1], "refs": []string{}, "annotator": tc.variant}, 0)
		}
		for i := range f.units["classify"] {
			f.units["classify"][i].Version = tc.version
		}
		f.plans["classify"][0].Version = tc.version
		f.status.Stages = stagesOf(f)
		r, err := report.Build(context.Background(), f, report.Options{Resamples: 10})
		if err != nil {
			t.Fatal(err)
		}
		lq := r.Annotations.TurnTypes.LabellerQuality
		if (lq != nil) != tc.want {
			t.Fatalf("%s %s: labeller quality %+v", tc.variant, tc.version, lq)
		}
		var md, h strings.Builder
		if err := r.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteHTML(&h); err != nil {
			t.Fatal(err)
		}
		if !tc.want {
			if strings.Contains(md.String(), "labeller") || strings.Contains(h.String(), "labeller") {
				t.Errorf("%s: model labels shown with the heuristic's quality", tc.variant)
			}
			continue
		}
		if lq.Applies != tc.applies || lq.Set != q.Set || lq.N != q.N || float64(lq.Coverage) != q.Coverage || float64(lq.Accuracy) != q.Accuracy {
			t.Errorf("%s: %+v; want the figures of %+v, applies %v", tc.version, lq, q, tc.applies)
		}
		cov, acc := fmt.Sprintf("%.1f%%", 100*q.Coverage), fmt.Sprintf("%.1f%%", 100*q.Accuracy)
		row := "| feedback | 1 | 33.3% |"
		for _, s := range []string{q.Set, row, "| " + cov + " | " + acc + " |"} {
			if !strings.Contains(md.String(), s) {
				t.Errorf("%s: markdown lacks %q", tc.version, s)
			}
		}
		if strings.Contains(md.String(), "has not been measured") == tc.applies {
			t.Errorf("%s: markdown misstates whether the figures apply", tc.version)
		}
		// Said once above the chart: the figures are the same for every bar.
		if !strings.Contains(h.String(), "it gives a type to "+cov+" of turns (coverage") || !strings.Contains(h.String(), "is right on "+acc) {
			t.Errorf("%s: html lacks the quality above the shares", tc.version)
		}
	}
}

// extrasRun is armRun with the heuristic's turn types and the pollution
// review of the dataset's replies and of two strategies' generated
// replies, for the golden files of the sections added beside the win
// rates.
func extrasRun(t *testing.T) *fakeRun {
	f := armRun(t)
	lab := func(present bool, cat string, conf float64) *pollution.Label {
		l := pollution.Label{Present: present, Category: cat, Confidence: conf, Annotator: "llm:m"}
		if present {
			l.Sources = []string{"1a"}
		}
		return &l
	}
	for seq := int64(1); seq <= 5; seq++ {
		for turn := 2; turn <= 3; turn++ {
			k := int(seq)*2 + turn
			f.add("classify", "heuristic", seq, turn, ledger.Done, map[string]any{"type": []string{"new_ask", "feedback", "unknown"}[k%3], "refs": []string{}, "annotator": "heuristic"}, 0)
			// Sorted by variant within a turn, as the ledger yields them.
			ds := lab(k%4 == 0, "intent_override", 0.7)
			f.add(pollution.StageName, "llm", seq, turn, ledger.Done, ds, 0)
			for _, rv := range []string{"fc", "filler"} {
				g := pollution.Generated{Respond: rv, Strategy: rv, Model: "m", Samples: []pollution.SampleLabel{{Index: 0, Label: lab(rv == "fc" && k%3 != 1, "code_carryover", 0.8)}}}
				if !g.Samples[0].Label.Present {
					g.Samples[0].Label = lab(false, "", 0.95)
				}
				b, err := g.Encode()
				if err != nil {
					t.Fatal(err)
				}
				status := ledger.Done
				if rv == "filler" && seq == 5 && turn == 3 {
					status, g.Unavailable, g.Samples = ledger.Failed, "no reply", nil
					b, _ = g.Encode()
				}
				f.add(pollution.StageName, pollution.ResponsesVariant(rv), seq, turn, status, b, 0)
			}
		}
	}
	q := classify.HeuristicQuality()
	for i := range f.units["classify"] {
		f.units["classify"][i].Version = q.Annotator + ";from=2"
	}
	f.plans["classify"][0].Version = q.Annotator + ";from=2"
	f.status.Stages = stagesOf(f)
	return f
}

func TestReportExtrasGolden(t *testing.T) {
	r, err := report.Build(context.Background(), extrasRun(t), report.Options{Seed: 2, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	var js, md, h bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&h); err != nil {
		t.Fatal(err)
	}
	golden(t, "extras.json", js.Bytes())
	golden(t, "extras.md", md.Bytes())
	golden(t, "extras.html", h.Bytes())
	rp := r.ReplyPollution
	if rp == nil || len(rp.Variants) != 3 || rp.Variants[2].Unavailable != 1 || rp.Variants[2].Replies != 9 || rp.Variants[1].Any.Count != 6 {
		t.Errorf("reply pollution: %+v", rp)
	}
	if p := r.Annotations.Pollution; p == nil || p.Variant != "llm" || p.Turns != 10 {
		t.Errorf("the dataset's pollution summary must read the dataset variant only: %+v", p)
	}
}
