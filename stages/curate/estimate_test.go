package curate_test

import (
	"context"
	"testing"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
)

// TestEstimateSkipsContextsNobodyReads: with no later stage reading its
// predictions, a dry run of rule-based strategies builds no context (they
// make no call), while a model-backed strategy still says what it would
// call; with a reader, every strategy's contexts are predicted.
func TestEstimateSkipsContextsNobodyReads(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(3)})
	c := sevenTurns()
	ruled := curate.NewStage([]curate.Strategy{strategy(t, "fc", curate.Options{}), strategy(t, "filler", curate.Options{})}, counter(t), 2)
	mixed := curate.NewStage([]curate.Strategy{strategy(t, "fc", curate.Options{}), strategy(t, "reset", curate.Options{Analyzer: f.an})}, counter(t), 2)
	for _, tc := range []struct {
		name             string
		st               *curate.Stage
		unread           bool
		wantCalls        bool
		predicted, empty []string // variants with and without predictions at turn 3
	}{
		{"rule-based, read", ruled, false, false, []string{"fc", "filler"}, nil},
		{"rule-based, unread", ruled, true, false, nil, []string{"fc", "filler"}},
		{"mixed, unread", mixed, true, true, []string{"reset"}, []string{"fc"}},
		{"mixed, read", mixed, false, true, []string{"fc", "reset"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := pipeline.NewForecast(func(s string) int { return len(s) / 4 })
			if tc.unread {
				fc.Unread = map[string]bool{curate.StageName: true}
			}
			calls, err := tc.st.Estimate(context.Background(), pipeline.Task{Conv: c, Variants: tc.st.Variants()}, fc)
			if err != nil {
				t.Fatal(err)
			}
			if (len(calls) > 0) != tc.wantCalls {
				t.Errorf("%d calls, want some: %v", len(calls), tc.wantCalls)
			}
			for _, v := range tc.predicted {
				if p, ok := fc.Get(curate.StageName, v, 3); !ok || p.Tokens == 0 {
					t.Errorf("%s: no prediction at turn 3 (%+v)", v, p)
				}
			}
			for _, v := range tc.empty {
				if p, ok := fc.Get(curate.StageName, v, 3); ok {
					t.Errorf("%s: predicted %+v, which nobody reads", v, p)
				}
			}
		})
	}
}
