package pollution_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/pollution"
)

// label is a reviewed reply: "" clean, else the category.
func label(cat string, conf float64) pollution.Label {
	if cat == "" {
		return pollution.Label{Confidence: conf, Sources: []string{}, Annotator: "llm:m"}
	}
	return pollution.Label{Present: true, Category: cat, Sources: []string{"1a"}, Confidence: conf, Annotator: "llm:m"}
}

func datasetUnit(seq int64, turn int, l *pollution.Label) ledger.Unit {
	u := ledger.Unit{ConvID: "c" + string(rune('0'+seq)), ConvSeq: seq, Turn: turn, Variant: "llm", Status: ledger.Failed}
	if l != nil {
		u.Status = ledger.Done
		u.Output, _ = l.Encode()
	}
	return u
}

func generatedUnit(seq int64, turn int, rv string, ls ...*pollution.Label) ledger.Unit {
	g := pollution.Generated{Respond: rv, Strategy: rv}
	status := ledger.Done
	if len(ls) == 0 {
		g.Unavailable, status = "the reply was not generated", ledger.Failed
	}
	for i, l := range ls {
		s := pollution.SampleLabel{Index: i, Label: l}
		if l == nil {
			s.Error, status = "malformed answer", ledger.Failed
		}
		g.Samples = append(g.Samples, s)
	}
	b, _ := g.Encode()
	return ledger.Unit{ConvID: "c" + string(rune('0'+seq)), ConvSeq: seq, Turn: turn, Variant: pollution.ResponsesVariant(rv), Status: status, Output: b}
}

func ptr(l pollution.Label) *pollution.Label { return &l }

// TestRatesHandComputed folds ten turns of three conversations under the
// dataset, fc and filler. Outcomes by turn (1–10 = c1 t2–5, c2 t2–4,
// c3 t2–4):
//
//	fc:      I I C C F R M I . .   (8 of 10; I intent, C code, F factual,
//	                                R reasoning trace, M formula)
//	filler:  . . . . . . . I C .   (2 of 10)
//	dataset: I . . x C . . . F .   (3 of 9; turn 4 failed)
//
// plus a c3 turn 5 that neither strategy could answer.
func TestRatesHandComputed(t *testing.T) {
	type turn struct {
		seq  int64
		turn int
	}
	turns := []turn{{1, 2}, {1, 3}, {1, 4}, {1, 5}, {2, 2}, {2, 3}, {2, 4}, {3, 2}, {3, 3}, {3, 4}}
	fc := []string{"intent_override", "intent_override", "code_carryover", "code_carryover", "factual_hallucination_carryover", "reasoning_trace_carryover", "formula_carryover", "intent_override", "", ""}
	fcConf := []float64{0.6, 0.8, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0, 0.9, 0.7}
	filler := []string{"", "", "", "", "", "", "", "intent_override", "code_carryover", ""}
	data := []string{"intent_override", "", "", "x", "code_carryover", "", "", "", "factual_hallucination_carryover", ""}
	r := pollution.NewRates()
	add := func(u ledger.Unit) {
		t.Helper()
		if err := r.Add(u); err != nil {
			t.Fatal(err)
		}
	}
	for i, tr := range turns {
		// Variants of one turn arrive in name order, as ledger.Units
		// gives them: "llm" < "responses:fc" < "responses:filler".
		if data[i] == "x" {
			add(datasetUnit(tr.seq, tr.turn, nil))
		} else {
			add(datasetUnit(tr.seq, tr.turn, ptr(label(data[i], 0.9))))
		}
		add(generatedUnit(tr.seq, tr.turn, "fc", ptr(label(fc[i], fcConf[i]))))
		add(generatedUnit(tr.seq, tr.turn, "filler", ptr(label(filler[i], 0.95))))
	}
	add(generatedUnit(3, 5, "fc"))
	add(generatedUnit(3, 5, "filler"))
	s := r.Result()

	if len(s.Variants) != 3 || s.Variants[0].Variant != "llm" || s.Variants[1].Variant != "responses:fc" || s.Variants[2].Variant != "responses:filler" {
		t.Fatalf("variants %+v", s.Variants)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %.15g, want %.15g", what, got, want)
		}
	}
	rate := func(what string, got pollution.Rate, k, n int, lo, hi float64) {
		t.Helper()
		if got.Count != k || got.Of != n {
			t.Errorf("%s = %d/%d, want %d/%d", what, got.Count, got.Of, k, n)
		}
		near(what+" rate", got.Rate, float64(k)/float64(n))
		near(what+" lo", got.Lo, lo)
		near(what+" hi", got.Hi, hi)
	}
	// Wilson 95% intervals computed by hand (scipy's z = 1.959963984540054):
	// centre (p + z²/2n)/(1 + z²/n), half-width z·√(p(1-p)/n + z²/4n²)/(1 + z²/n).
	ds, f, fl := s.Variants[0], s.Variants[1], s.Variants[2]
	rate("dataset any", ds.Any, 3, 9, 0.1205838183869109, 0.6457978644196036)
	rate("fc any", f.Any, 8, 10, 0.49016247153664183, 0.9433178485456247)
	rate("filler any", fl.Any, 2, 10, 0.05668215145437519, 0.5098375284633583)
	rate("fc conversations", f.AnyConversations, 3, 3, 0.4385029682449546, 1)
	rate("filler conversations", fl.AnyConversations, 1, 3, 0.06149194472039621, 0.7923403991979522)
	rate("fc intent override", f.Categories[0].Replies, 3, 10, 0.10779126740630099, 0.6032218525388546)
	if ds.Failed != 1 || ds.Replies != 9 || ds.Units != 10 || f.Unavailable != 1 || f.Units != 11 || f.Replies != 10 || f.Failed != 0 {
		t.Errorf("counts: dataset %+v, fc %+v", ds, f)
	}
	near("fc intent confidence", f.Categories[0].MeanConfidence, (0.6+0.8+1.0)/3)
	near("fc absent confidence", f.AbsentConfidence, (0.9+0.7)/2)
	if !math.IsNaN(fl.Categories[3].MeanConfidence) || fl.Categories[3].Replies.Count != 0 {
		t.Errorf("filler reasoning trace: %+v", fl.Categories[3])
	}
	if got := f.Categories[1].Conversations; got.Count != 1 || got.Of != 3 {
		t.Errorf("fc code conversations %d/%d, want 1/3 (c1 only)", got.Count, got.Of)
	}

	find := func(a, b, cat string) pollution.PairedTest {
		for _, p := range s.Pairs {
			if p.A == a && p.B == b && p.Category == cat {
				return p
			}
		}
		t.Fatalf("no pair %s|%s|%s", a, b, cat)
		return pollution.PairedTest{}
	}
	// Exact McNemar p-values by hand: 2·Σ_{i≤min(b,c)} C(b+c, i) / 2^(b+c), capped at 1.
	tests := []struct {
		a, b, cat                   string
		pairs, pa, pb, onlyA, onlyB int
		p                           float64
	}{
		{"responses:fc", "responses:filler", "", 10, 8, 2, 7, 1, 2 * (1 + 8) / 256.0},
		{"responses:fc", "responses:filler", "intent_override", 10, 3, 1, 2, 0, 2 * 1 / 4.0},
		{"responses:fc", "responses:filler", "code_carryover", 10, 2, 1, 2, 1, 1},
		{"responses:fc", "responses:filler", "formula_carryover", 10, 1, 0, 1, 0, 1},
		{"llm", "responses:fc", "", 9, 3, 7, 1, 5, 2 * (1 + 6) / 64.0},
		{"llm", "responses:filler", "", 9, 3, 2, 2, 1, 1},
	}
	for _, tc := range tests {
		p := find(tc.a, tc.b, tc.cat)
		if p.Pairs != tc.pairs || p.PollutedA != tc.pa || p.PollutedB != tc.pb || p.OnlyA != tc.onlyA || p.OnlyB != tc.onlyB {
			t.Errorf("%s|%s|%s: %+v", tc.a, tc.b, tc.cat, p)
		}
		near(tc.a+"|"+tc.b+"|"+tc.cat+" p", p.P, tc.p)
	}
	if len(s.Pairs) != 3*(1+len(pollution.Categories())) {
		t.Errorf("%d pair rows, want 18", len(s.Pairs))
	}
}

// TestRatesFailuresAreNotClean: failed and undecodable units stay out of
// the rates, and a variant with nothing reviewed has no rate, not 0.
func TestRatesFailuresAreNotClean(t *testing.T) {
	r := pollution.NewRates()
	bad := generatedUnit(1, 2, "fc", ptr(label("", 0.9)))
	bad.Output = []byte(`{"present": false}`) // a dataset label under a responses variant
	partial := generatedUnit(1, 3, "fc", ptr(label("code_carryover", 0.7)), nil)
	for _, u := range []ledger.Unit{
		datasetUnit(1, 2, nil),
		bad,
		{ConvID: "c1", ConvSeq: 1, Turn: 3, Variant: "llm", Status: ledger.Done, Output: []byte(`{"samples": []}`)},
		partial,
		generatedUnit(1, 4, "ao"),
	} {
		if err := r.Add(u); err != nil {
			t.Fatal(err)
		}
	}
	s := r.Result()
	by := map[string]pollution.VariantRates{}
	for _, v := range s.Variants {
		by[v.Variant] = v
	}
	if v := by["llm"]; v.Failed != 2 || v.Replies != 0 || !math.IsNaN(v.Any.Rate) || !math.IsNaN(v.Any.Lo) || v.Conversations != 0 {
		t.Errorf("dataset: %+v", v)
	}
	// The partial unit keeps its reviewed sample; the other sample failed.
	if v := by["responses:fc"]; v.Failed != 2 || v.Replies != 1 || v.Any.Count != 1 {
		t.Errorf("fc: %+v", v)
	}
	if v := by["responses:ao"]; v.Unavailable != 1 || v.Replies != 0 || !math.IsNaN(v.Any.Rate) {
		t.Errorf("ao: %+v", v)
	}
	// No turn has a reviewed reply on two sides, so nothing is paired.
	if len(s.Pairs) != 0 {
		t.Errorf("pairs %+v", s.Pairs)
	}
}

func TestRatesOrder(t *testing.T) {
	tests := []struct {
		name string
		a, b ledger.Unit
		want string
	}{
		{"earlier turn", datasetUnit(1, 3, nil), datasetUnit(1, 2, nil), "turn 2 of c1 after turn 3"},
		{"earlier conversation", datasetUnit(2, 2, nil), datasetUnit(1, 5, nil), "conversation c1 (seq 1) after c2"},
		{"two conversations at one seq", datasetUnit(1, 2, nil), ledger.Unit{ConvID: "other", ConvSeq: 1, Turn: 2, Variant: "llm"}, "conversation other (seq 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := pollution.NewRates()
			if err := r.Add(tc.a); err != nil {
				t.Fatal(err)
			}
			if err := r.Add(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// BenchmarkRates folds the units of a run with three variants; memory per
// op should not grow with the number of conversations.
func BenchmarkRates(b *testing.B) {
	ds := datasetUnit(1, 2, ptr(label("code_carryover", 0.8)))
	fc := generatedUnit(1, 2, "fc", ptr(label("code_carryover", 0.8)), ptr(label("", 0.9)))
	ao := generatedUnit(1, 2, "ao", ptr(label("", 0.9)))
	b.ReportAllocs()
	r := pollution.NewRates()
	for i := range b.N {
		seq := int64(i/4 + 1)
		turn := i%4 + 2
		for _, u := range []ledger.Unit{ao, ds, fc} {
			u.ConvSeq, u.Turn, u.ConvID = seq, turn, strconv.FormatInt(seq, 10)
			if err := r.Add(u); err != nil {
				b.Fatal(err)
			}
		}
	}
	_ = r.Result()
}
