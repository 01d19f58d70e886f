package run

import (
	"context"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
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
		Ingest:   &Ingest{Files: []string{"../fixtures/wildchat/wildchat-1m-sample10.jsonl"}, Format: "auto", MaxLineBytes: 1 << 20, Filter: Filter{MinUserTurns: 2}},
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

// stubStage is a stage for the unread table: its name, and whether it
// estimates and says what it reads.
type stubStage struct {
	name string
}

func (s stubStage) Name() string               { return s.name }
func (stubStage) Variants() []pipeline.Variant { return nil }
func (stubStage) Process(context.Context, pipeline.Task) ([]pipeline.Result, error) {
	return nil, nil
}

type stubEstimator struct{ stubStage }

func (stubEstimator) Estimate(context.Context, pipeline.Task, *pipeline.Forecast) ([]pipeline.Call, error) {
	return nil, nil
}

type stubReader struct {
	stubEstimator
	reads []string
}

func (s stubReader) ReadsPredictionsOf() []string { return s.reads }

func TestUnreadPredictions(t *testing.T) {
	st := func(name string) StageForecast { return StageForecast{Stage: name, stage: stubStage{name}} }
	est := func(name string) StageForecast {
		return StageForecast{Stage: name, stage: stubEstimator{stubStage{name}}}
	}
	reader := func(name string, reads ...string) StageForecast {
		return StageForecast{Stage: name, stage: stubReader{stubEstimator{stubStage{name}}, reads}}
	}
	skipped := StageForecast{Stage: "respond", Skipped: "no model"}
	for _, tc := range []struct {
		name   string
		stages []StageForecast
		want   []string
	}{
		{"curate alone (it says nothing of what it reads)", []StageForecast{est("classify"), est("curate")}, []string{"curate"}},
		{"respond reads curate", []StageForecast{est("curate"), reader("respond", "curate"), reader("judge", "respond")}, []string{"judge"}},
		{"judge reads respond only", []StageForecast{est("curate"), reader("judge", "respond")}, []string{"curate", "judge"}},
		{"a skipped stage reads nothing", []StageForecast{est("curate"), skipped}, []string{"curate"}},
		{"an estimator that does not say reads all", []StageForecast{est("curate"), est("other")}, []string{"other"}},
		{"a stage that does not estimate reads nothing", []StageForecast{est("curate"), st("export")}, []string{"curate", "export"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unread(tc.stages)
			if want := tc.want; !reflect.DeepEqual(slices.Sorted(maps.Keys(got)), want) {
				t.Errorf("unread %v, want %v", slices.Sorted(maps.Keys(got)), want)
			}
		})
	}
}
