package report_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Turns curated by an ac3 that recorded only what each pass paid cannot be
// priced: the dollars are not shown as if they were the cost, and a note
// says why.
func TestAnalysisCostOfOlderRecordsIsNotShownAsACost(t *testing.T) {
	f := fixedRun(t)
	for i, u := range f.units[curate.StageName] {
		x, err := curated.DecodeContext(u.Output)
		if err != nil {
			t.Fatal(err)
		}
		if x.Info.Analyzed && u.ConvSeq == 1 {
			x.Info.AnalysisUsage.ListUSD, x.Info.AnalysisUsage.Listed = 0, 0
			b, err := curated.EncodeContext(x)
			if err != nil {
				t.Fatal(err)
			}
			f.units[curate.StageName][i].Output = b
		}
	}
	r, err := report.Build(context.Background(), f, report.Options{Seed: 11, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.AnalysisCost) != 1 {
		t.Fatalf("analysis cost %+v", r.AnalysisCost)
	}
	row := r.AnalysisCost[0]
	if row.UnpricedCalls != 2 || !math.IsNaN(float64(row.AnalysisUSD)) || !math.IsNaN(float64(row.PerAnalyzedTurnUSD)) || row.AnalysisCalls != 8 {
		t.Errorf("row %+v", row)
	}
	noted := false
	for _, n := range r.Notes {
		noted = noted || strings.Contains(n, "analysis cost of gated-reset: 2 of its calls were recorded by an older ac3")
	}
	if !noted {
		t.Errorf("no note says why: %q", r.Notes)
	}
}
