package report_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/run/report"
)

// Example verdicts are a function of the run and the seed: the page size
// the run is read in does not change them, each has the judge's reasoning,
// and both sides of a pair are shown when both won somewhere.
func TestExampleVerdictsAreSeededAndStable(t *testing.T) {
	ctx := context.Background()
	build := func(seed uint64, page int) *report.Report {
		t.Helper()
		r, err := report.Build(ctx, fixedRun(t), report.Options{Seed: seed, Resamples: 50, PageSize: page})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	examples := func(r *report.Report) [][]report.Example {
		var out [][]report.Example
		for _, p := range r.Pairs {
			for _, d := range p.Dimensions {
				out = append(out, d.Examples)
			}
		}
		return out
	}
	r512, r1 := build(11, 512), build(11, 1)
	a, b := examples(r512), examples(r1)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("examples depend on the page size:\n%v\n%v", a, b)
	}
	var h512, h1, m512, m1 bytes.Buffer
	for _, w := range []error{r512.WriteHTML(&h512), r1.WriteHTML(&h1), r512.WriteMarkdown(&m512), r1.WriteMarkdown(&m1)} {
		if w != nil {
			t.Fatal(w)
		}
	}
	if !bytes.Equal(h512.Bytes(), h1.Bytes()) || !bytes.Equal(m512.Bytes(), m1.Bytes()) {
		t.Error("report.html or report.md depends on the page size")
	}
	// ao:fc/user_only on quality has wins for A, for B and ties: one of
	// each is shown.
	quality := a[2]
	if len(quality) != 3 {
		t.Fatalf("ao:fc/user_only quality: %d examples, want 3: %+v", len(quality), quality)
	}
	sides := map[string]bool{}
	for _, x := range quality {
		if strings.TrimSpace(x.Justification) == "" || x.Conversation == "" || x.Turn == 0 {
			t.Errorf("example without reasoning or ids: %+v", x)
		}
		sides[x.Outcome] = true
	}
	if len(sides) != 3 {
		t.Errorf("ao:fc/user_only quality examples do not show each outcome: %+v", quality)
	}
	if c := examples(build(12, 512)); reflect.DeepEqual(a, c) {
		t.Errorf("another seed chose the same examples (possible, but not with this fixture): %v", c)
	}
}
