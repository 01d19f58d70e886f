package classify_test

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/classify"
)

// init registers -update unless another test helper already did (the
// prompt golden helper registers the same flag).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files instead of comparing")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// measureHeuristic computes the heuristic's figures on every shipped
// labelled set and split, the real WildChat test split (English) first.
func measureHeuristic(t *testing.T) []classify.Quality {
	t.Helper()
	read := func(path string, r func(f *os.File) ([]classify.Example, error)) []classify.Example {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ex, err := r(f)
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	real := read("../../fixtures/labelled/classify-wildchat.jsonl", func(f *os.File) ([]classify.Example, error) { return classify.ReadConversationSet(f) })
	synth := read("../../fixtures/labelled/classify.jsonl", func(f *os.File) ([]classify.Example, error) { return classify.ReadExamples(f) })
	var en, other []classify.Example
	for _, e := range real {
		if e.Lang == "en" {
			en = append(en, e)
		} else {
			other = append(other, e)
		}
	}
	h := classify.NewHeuristic()
	label := func(c *conv.Conversation, t int) classify.Label { l, _ := h.Label(c, t); return l }
	v := classify.HeuristicVersion
	const set = "classify-wildchat.jsonl (real WildChat turns) %s split, %s"
	return []classify.Quality{
		classify.MeasureQuality(v, fmt.Sprintf(set, "held-out test", "English"), en, classify.Test, label),
		classify.MeasureQuality(v, fmt.Sprintf(set, "dev (tuned on)", "English"), en, classify.Dev, label),
		classify.MeasureQuality(v, fmt.Sprintf(set, "held-out test", "Spanish, Chinese"), other, classify.Test, label),
		classify.MeasureQuality(v, fmt.Sprintf(set, "dev (tuned on)", "French"), other, classify.Dev, label),
		classify.MeasureQuality(v, "classify.jsonl (turns we wrote) held-out test split", synth, classify.Test, label),
		classify.MeasureQuality(v, "classify.jsonl (turns we wrote) dev split (tuned on)", synth, classify.Dev, label),
	}
}

// TestHeuristicQualityFigures is the golden test behind HeuristicQuality:
// the shipped figures must be what the current rules score on the shipped
// labelled sets. Change the rules or the sets, then refresh with
//
//	go test ./stages/classify -run QualityFigures -update
func TestHeuristicQualityFigures(t *testing.T) {
	got := measureHeuristic(t)
	if updating() {
		b, err := classify.EncodeQualities(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("heuristic_quality.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := classify.HeuristicQualities()
	if len(want) != len(got) {
		t.Fatalf("heuristic_quality.json has %d sets, the fixtures give %d (run with -update)", len(want), len(got))
	}
	for i := range got {
		if !sameQuality(got[i], want[i]) {
			t.Errorf("figures changed (run with -update if the change is intended):\n got  %+v\n want %+v", got[i], want[i])
		}
	}
}

func sameQuality(a, b classify.Quality) bool {
	eq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	return a.Annotator == b.Annotator && a.Set == b.Set && a.N == b.N && a.Labelled == b.Labelled &&
		eq(a.Coverage, b.Coverage) && eq(a.Accuracy, b.Accuracy) && eq(a.MacroF1, b.MacroF1) &&
		eq(a.MajorityRate, b.MajorityRate) && eq(a.MajorityRateLabelled, b.MajorityRateLabelled)
}

// TestHeuristicQualityTarget keeps a refresh of the figures from quietly
// accepting a worse rule set: on held-out real turns the heuristic must be
// right more often, where it answers, than always answering the most common
// type, with macro-F1 of at least 0.5, and must abstain on turns that are not
// English rather than guess.
func TestHeuristicQualityTarget(t *testing.T) {
	q := classify.HeuristicQuality()
	if q.Annotator != classify.HeuristicVersion {
		t.Fatalf("figures are for %s, the heuristic is %s", q.Annotator, classify.HeuristicVersion)
	}
	if !(q.Accuracy > q.MajorityRate) || !(q.MacroF1 >= 0.5) || q.N < 50 || q.Coverage < 0.5 {
		t.Errorf("held-out quality %+v misses the target", q)
	}
	for _, q := range classify.HeuristicQualities() {
		if q.Labelled > 0 && q.N > 0 && q.Set == "" {
			t.Errorf("unnamed set: %+v", q)
		}
	}
	if other := classify.HeuristicQualities()[2]; other.Labelled != 0 {
		t.Errorf("the heuristic labelled %d non-English turns: %+v", other.Labelled, other)
	}
}

func TestQualityApplies(t *testing.T) {
	q := classify.Quality{Annotator: "classify-heuristic@v2"}
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"classify-heuristic@v2", true},
		{"classify-heuristic@v2;from=2", true},
		{"classify-heuristic@v1;from=2", false},
		{"classify-heuristic@v20;from=2", false},
		{"", false},
	} {
		if got := q.Applies(tc.version); got != tc.want {
			t.Errorf("Applies(%q) = %v, want %v", tc.version, got, tc.want)
		}
	}
}

func TestQualityRoundTripAndString(t *testing.T) {
	in := []classify.Quality{
		{Annotator: "a", Set: "s", N: 10, Labelled: 8, Coverage: 0.8, Accuracy: 0.75, MacroF1: 0.6, MajorityRate: 0.5, MajorityRateLabelled: 0.625},
		{Annotator: "a", Set: "none labelled", N: 4, Coverage: 0, Accuracy: math.NaN(), MacroF1: math.NaN(), MajorityRate: 0.75, MajorityRateLabelled: math.NaN()},
	}
	b, err := classify.EncodeQualities(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := classify.DecodeQualities(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if !sameQuality(in[i], out[i]) {
			t.Errorf("round trip: %+v became %+v", in[i], out[i])
		}
	}
	for _, tc := range []struct {
		q    classify.Quality
		want string
	}{
		{in[0], "coverage 80%, accuracy 75% where it answered (majority class 62%), macro-F1 0.60; 10 turns of s"},
		{in[1], "coverage 0%, accuracy n/a where it answered (majority class n/a), macro-F1 n/a; 4 turns of none labelled"},
	} {
		if got := tc.q.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"n":1}`, `[{"coverage":"x"}]`} {
		if _, err := classify.DecodeQualities([]byte(bad)); err == nil {
			t.Errorf("DecodeQualities(%q) accepted it", bad)
		}
	}
}

// ExampleHeuristicQuality shows the line a report prints beside the
// turn-type shares the heuristic produced.
func ExampleHeuristicQuality() {
	q := classify.HeuristicQuality()
	if q.Applies(classify.HeuristicVersion + ";from=2") {
		fmt.Println("heuristic:", q)
	}
	// Output:
	// heuristic: coverage 85%, accuracy 74% where it answered (majority class 72%), macro-F1 0.58; 59 turns of classify-wildchat.jsonl (real WildChat turns) held-out test split, English
}

// The README quotes the headline figures; they must be the measured ones.
func TestReadmeQuotesHeuristicQuality(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	q := classify.HeuristicQuality()
	for _, want := range []string{
		fmt.Sprintf("English, %d turns", q.N),
		fmt.Sprintf("gives a type to %d of them (%.1f%%, coverage)", q.Labelled, 100*float64(q.Labelled)/float64(q.N)),
		fmt.Sprintf("right on %.1f%% of", 100*q.Accuracy),
		fmt.Sprintf("against %.1f%% for always", 100*q.MajorityRateLabelled),
		fmt.Sprintf("(%.1f%% on the whole split)", 100*q.MajorityRate),
		fmt.Sprintf("macro-F1 %.2f", q.MacroF1),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md does not say %q (figures of %s)", want, q.Set)
		}
	}
}
