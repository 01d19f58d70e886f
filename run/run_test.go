package run_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/filter"
)

const sample = "../fixtures/wildchat/wildchat-1m-sample10.jsonl"

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// modelFree is a plan that needs no endpoint: ingest, the heuristic
// annotators, two deterministic strategies, an export.
func modelFree(dir string) run.Plan {
	return run.Plan{
		DB:       filepath.Join(dir, "run.db"),
		Ingest:   &run.Ingest{Files: []string{sample}, Format: "auto", MaxLineBytes: 1 << 20, Filter: run.Filter{MinUserTurns: 2}},
		Annotate: &run.Annotate{Classify: run.Heuristic, Constraints: run.Heuristic},
		Curate:   &run.Curate{Strategies: []string{"fc", "ao"}},
		Exports:  []run.Export{{What: "curated", Format: "jsonl", Out: filepath.Join(dir, "curated.jsonl")}},
	}
}

func TestExecuteRunsEveryStepThenFindsNothingToDo(t *testing.T) {
	dir := t.TempDir()
	plan := modelFree(dir)
	var log bytes.Buffer
	res, err := run.Execute(ctx(t), plan, run.Options{Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if res.Stopped || len(res.FailedTasks()) != 0 {
		t.Fatalf("result %+v", res)
	}
	done := map[string]int64{}
	for _, s := range res.Stages {
		done[s.Stage] = s.Done
	}
	// classify and constraints: one task per conversation; curate: one per
	// conversation and strategy.
	if done["classify"] == 0 || done["constraints"] != done["classify"] || done["curate"] != 2*done["classify"] {
		t.Errorf("tasks done by stage: %v\n%s", done, log.String())
	}
	if len(res.Exports) != 1 || res.Exports[0].Rows == 0 {
		t.Errorf("exports %+v", res.Exports)
	}
	first, err := os.ReadFile(plan.Exports[0].Out)
	if err != nil {
		t.Fatal(err)
	}

	log.Reset()
	res, err = run.Execute(ctx(t), plan, run.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Stages {
		if s.Done != 0 || s.Previous == 0 {
			t.Errorf("second run: stage %s did %d tasks (%d before)", s.Stage, s.Done, s.Previous)
		}
	}
	if n := strings.Count(log.String(), "nothing to do"); n != 3 {
		t.Errorf("second run says nothing to do %d times, want 3:\n%s", n, log.String())
	}
	again, _ := os.ReadFile(plan.Exports[0].Out)
	if !bytes.Equal(first, again) {
		t.Error("the export changed on a run that did nothing")
	}
}

func TestExecuteChecksInputsBeforeTouchingTheRun(t *testing.T) {
	dir := t.TempDir()
	plan := modelFree(dir)
	plan.Ingest.Files = []string{filepath.Join(dir, "no-such-file.jsonl")}
	var log bytes.Buffer
	_, err := run.Execute(ctx(t), plan, run.Options{Log: &log})
	if err == nil || !strings.Contains(err.Error(), "no-such-file.jsonl") {
		t.Fatalf("err = %v", err)
	}
	if strings.Count(err.Error(), "no-such-file.jsonl") != 1 {
		t.Errorf("the file is named more than once: %v", err)
	}
	if _, err := os.Stat(plan.DB); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run file was created: %v", err)
	}
	if log.Len() != 0 {
		t.Errorf("something was logged before the error:\n%s", log.String())
	}
}

func TestFilterErrorNamesWhatTheUserWrote(t *testing.T) {
	plan := modelFree(t.TempDir())
	plan.Ingest.Filter = run.Filter{MinUserTurns: 5, MaxUserTurns: 3, Domains: []string{"astrology"}}
	_, err := run.Execute(ctx(t), plan, run.Options{})
	var fe *filter.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a filter.FieldError", err)
	}
	got := run.FilterError(err, map[string]string{"MinUserTurns": "--min-turns", "MaxUserTurns": "--max-turns", "Domains": "--domain"}).Error()
	for _, want := range []string{"--min-turns: 5 is greater than --max-turns (3)", "--domain: unknown domain"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "MinUserTurns") || strings.Contains(got, "Domains") {
		t.Errorf("Go field names leak: %q", got)
	}
}

// failingModel is an endpoint whose every answer is unreadable, so every
// unit of a model-backed annotator fails.
func failingModel(t *testing.T) run.Model {
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "I would rather not say."}})
	return run.Model{Options: &llm.Options{Endpoints: []llm.Endpoint{{Name: "m", BaseURL: srv.URL, Model: "m"}}}}
}

func TestExecuteReportsFailedUnitsByStage(t *testing.T) {
	dir := t.TempDir()
	plan := modelFree(dir)
	plan.Model = failingModel(t)
	plan.Annotate = &run.Annotate{Classify: run.LLM}
	plan.Curate, plan.Exports = nil, nil
	var log bytes.Buffer
	res, err := run.Execute(ctx(t), plan, run.Options{Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	failed := res.FailedTasks()
	if len(failed) != 1 || failed[0].Stage != "classify" || failed[0].Failed == 0 || failed[0].Done != 0 {
		t.Fatalf("failed %+v\n%s", failed, log.String())
	}
	if !strings.Contains(log.String(), "'ac3 retry --stage classify'") {
		t.Errorf("the log does not say how to retry:\n%s", log.String())
	}
	want := failed[0].Failed
	// Every pass sees the failed units the run file holds: the one that
	// did the work, the one with nothing left to do, and one that skips the
	// stage for want of an endpoint.
	noModel := plan
	noModel.Model = run.Model{}
	for pass, p := range []run.Plan{plan, plan, noModel} {
		if pass > 0 {
			if res, err = run.Execute(ctx(t), p, run.Options{Log: &log}); err != nil {
				t.Fatalf("pass %d: %v", pass+1, err)
			}
		}
		if len(res.FailedTasks()) != 0 && pass > 0 {
			t.Errorf("pass %d failed tasks of its own: %+v", pass+1, res.FailedTasks())
		}
		if len(res.Failed) != 1 || res.Failed[0].Stage != "classify" || res.Failed[0].Variant != "llm" || res.Failed[0].Tasks != want ||
			res.Failed[0].Units < want || len(res.Failed[0].Groups) == 0 || res.Failed[0].Groups[0].Example.ConvID == "" {
			t.Errorf("pass %d: the run's failed units %+v, want classify/llm with %d tasks", pass+1, res.Failed, want)
		}
	}
	// A plan that does not cover classify does not answer for it.
	res, err = run.Execute(ctx(t), run.Plan{DB: plan.DB, Curate: &run.Curate{Strategies: []string{"fc"}}}, run.Options{})
	if err != nil || len(res.Failed) != 0 {
		t.Errorf("curate alone: err %v, failed %+v", err, res.Failed)
	}
}

func TestEstimateCountsFromTheInputsBeforeTheRunExists(t *testing.T) {
	dir := t.TempDir()
	plan := modelFree(dir)
	plan.Model = failingModel(t)
	plan.Annotate = &run.Annotate{Classify: run.LLM, Constraints: run.Heuristic}
	fc, err := run.Estimate(ctx(t), plan)
	if err != nil {
		t.Fatal(err)
	}
	if fc.RunExists {
		t.Error("the forecast says the run exists")
	}
	if _, err := os.Stat(plan.DB); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the forecast created the run")
	}
	// The real run makes one classify call per user turn from the second.
	res, err := run.Execute(ctx(t), plan, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var units int64
	for _, s := range res.Stages {
		if s.Stage == "classify" {
			units = s.Units
		}
	}
	var calls, pending int64
	for _, s := range fc.Stages {
		if s.Stage == "classify" {
			calls, pending = s.Calls, s.PendingTasks
		}
		if s.Stage == "constraints" && s.Calls != 0 {
			t.Errorf("the heuristic constraints stage is forecast to make %d calls", s.Calls)
		}
	}
	if calls == 0 || calls != units || fc.TotalCalls != calls || pending != fc.Conversations {
		t.Errorf("forecast %d classify calls over %d pending tasks (total %d, %d conversations); the run labelled %d turns", calls, pending, fc.TotalCalls, fc.Conversations, units)
	}
	// On the finished run nothing is left.
	fc, err = run.Estimate(ctx(t), plan)
	if err != nil {
		t.Fatal(err)
	}
	if !fc.RunExists || fc.TotalCalls != 0 {
		t.Errorf("forecast of a finished run: %d calls (run exists %v)", fc.TotalCalls, fc.RunExists)
	}
}

func TestEstimateSaysWhatTheRunWouldSkip(t *testing.T) {
	plan := modelFree(t.TempDir())
	plan.Annotate = &run.Annotate{Pollution: true}
	plan.Curate.Strategies = []string{"fc", "gated-reset"}
	fc, err := run.Estimate(ctx(t), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(fc.Stages) != 2 || fc.Stages[0].Skipped == "" || fc.Stages[1].Skipped != "" {
		t.Fatalf("stages %+v", fc.Stages)
	}
	found := false
	for _, n := range fc.Notes {
		found = found || strings.Contains(n, "skipping gated-reset")
	}
	if !found {
		t.Errorf("the notes do not say gated-reset is skipped: %q", fc.Notes)
	}
}

// A dry run of a new run knows that the classify stage the plan runs first
// will be there when curate runs, so it does not say adaptive is skipped.
func TestEstimateSeesTheStagesThePlanRunsFirst(t *testing.T) {
	plan := modelFree(t.TempDir())
	plan.Annotate = &run.Annotate{Classify: run.Heuristic}
	plan.Curate.Strategies = []string{"fc", "adaptive"}
	fc, err := run.Estimate(ctx(t), plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range fc.Notes {
		if strings.Contains(n, "skipping") {
			t.Errorf("the forecast skips a strategy the run will curate: %s", n)
		}
	}
	var pending int64
	for _, s := range fc.Stages {
		if s.Stage == "curate" {
			pending = s.PendingTasks
		}
	}
	res, err := run.Execute(ctx(t), plan, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Stages {
		if s.Stage == "curate" && s.Done != pending {
			t.Errorf("forecast %d curate tasks, the run did %d", pending, s.Done)
		}
	}
}

// The report and the exports record nothing in the run, so a stop ends
// them at once: the result says stopped and no export file is left behind.
func TestStopEndsReportAndExportsAtOnce(t *testing.T) {
	dir := t.TempDir()
	plan := modelFree(dir)
	exports := plan.Exports
	plan.Exports = nil
	if _, err := run.Execute(ctx(t), plan, run.Options{}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	for _, tc := range []struct {
		name string
		plan run.Plan
	}{
		{"exports", run.Plan{DB: plan.DB, Exports: exports}},
		{"report", run.Plan{DB: plan.DB, Report: &run.Report{Out: filepath.Join(dir, "report"), Formats: []string{"json"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := run.Execute(ctx(t), tc.plan, run.Options{Stop: stop})
			if err != nil || !res.Stopped {
				t.Fatalf("stopped %v, error %v; want stopped", res.Stopped, err)
			}
			if len(res.Exports) != 0 || len(res.Reports) != 0 {
				t.Errorf("wrote %+v %v after the stop", res.Exports, res.Reports)
			}
		})
	}
	if _, err := os.Stat(exports[0].Out); !os.IsNotExist(err) {
		t.Errorf("export file after a stop: %v", err)
	}
}
