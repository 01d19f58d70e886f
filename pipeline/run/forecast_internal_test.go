package run

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestForecastShortcutMatchesWalk checks the finished-run shortcut of the
// dry run against the full walk: on a finished run both must say the same
// thing and the shortcut must be taken; once the plan asks for something
// the run has not done, the shortcut must step aside.
func TestForecastShortcutMatchesWalk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	plan := Plan{
		DB:       filepath.Join(dir, "run.db"),
		Ingest:   &Ingest{Files: []string{"../../fixtures/wildchat/wildchat-1m-sample10.jsonl"}, Format: "auto", MaxLineBytes: 1 << 20, Filter: Filter{MinUserTurns: 2}},
		Annotate: &Annotate{Classify: Heuristic, Constraints: Heuristic},
		Curate:   &Curate{Strategies: []string{"fc", "ao"}},
	}
	if _, err := Execute(ctx, plan, Options{}); err != nil {
		t.Fatal(err)
	}

	more := plan
	more.Curate = &Curate{Strategies: []string{"fc", "ao", "lt"}}
	for _, tc := range []struct {
		name    string
		plan    Plan
		counted bool
	}{
		{"finished", plan, true},
		{"a strategy not run yet", more, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			walked, counted, err := estimate(ctx, tc.plan, true)
			if err != nil {
				t.Fatal(err)
			}
			if counted {
				t.Fatal("the shortcut was taken with walkAll set")
			}
			fast, counted, err := estimate(ctx, tc.plan, false)
			if err != nil {
				t.Fatal(err)
			}
			if counted != tc.counted {
				t.Errorf("shortcut taken: %v, want %v", counted, tc.counted)
			}
			if walked.Conversations == 0 {
				t.Fatal("the walk found no conversations")
			}
			if !reflect.DeepEqual(summary(fast), summary(walked)) {
				t.Errorf("shortcut says\n%+v\nthe walk says\n%+v", summary(fast), summary(walked))
			}
		})
	}
}

// summary is what a forecast tells the user, without the built stages.
func summary(fc Forecast) []any {
	out := []any{fc.Conversations, fc.TotalCalls, fc.TotalCostUSD, fc.Notes, fc.Inputs}
	for _, s := range fc.Stages {
		out = append(out, []any{s.Stage, s.Label, s.Skipped, s.PendingTasks, s.DoneTasks, s.Calls, s.InputTokens, s.OutputTokens, s.CostUSD})
	}
	return out
}
