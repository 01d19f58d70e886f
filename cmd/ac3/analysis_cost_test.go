package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/run"
)

// analysisCostConfig curates the WildChat sample with two AC3 operators
// against the scripted endpoint (AC3_E2E_BASE_URL), writing report.json into
// dir/out; budget caps the spend (0: none), batch adds the batch settings.
func analysisCostConfig(t *testing.T, dir string, budget float64) string {
	t.Helper()
	fixtures, err := filepath.Abs("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`run: {db: %s/run.db, out: %s/out, workers: 2, budget_usd: %g}
input: {files: [%s/wildchat/wildchat-1m-sample10.jsonl], filter: {language: [English], user_turns: {min: 2}}}
endpoints:
  main: {base_url: "${AC3_E2E_BASE_URL}", limits: {concurrency: 4}}
models:
  judge-model: {endpoint: main, name: gpt-5-mini, price: {input: 0.25, cached: 0.025, output: 2.0}}
roles:
  analyzer: {model: judge-model, temperature: 1.0, max_tokens: 800}
stages:
  curate:
    strategies: [fc, augment, gated-reset]
    gated_reset: {floor: 2, cap: 3}
    augment: {warmup: 2}
report: {formats: [json]}
batch: {poll: 1ms, max_requests: 7}
`, dir, dir, budget, fixtures)
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// analysisCost reads report.json's analysis_cost section, and the run's
// spend.
func analysisCost(t *testing.T, dir string) (section string, spend float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "out", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		AnalysisCost json.RawMessage `json:"analysis_cost"`
		Cost         struct {
			TotalUSD float64 `json:"total_usd"`
		} `json:"cost"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return string(r.AnalysisCost), r.Cost.TotalUSD
}

// The analysis cost of the same final state is the same number whether the
// run went through in one pass, was stopped part way (here by its budget,
// twice) and resumed, or sent every request through the batch API: it
// prices the answers the curated turns used, not what each pass paid.
func TestAnalysisCostIsTheSameAfterInterruptionsAndInBatchMode(t *testing.T) {
	if testing.Short() {
		t.Skip("three runs against the scripted endpoint")
	}
	runCmd := func(name string, args ...string) string {
		srv := startScripted(t)
		vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
		out, err := runAppEnv(t, vars, args...)
		if err != nil {
			t.Fatalf("%s: ac3 %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return srv.URL
	}
	once := t.TempDir()
	runCmd("one pass", "run", "--config", analysisCostConfig(t, once, 0))
	want, spent := analysisCost(t, once)
	var wantRows []struct {
		Strategy    string  `json:"strategy"`
		AnalysisUSD float64 `json:"analysis_usd"`
	}
	if err := json.Unmarshal([]byte(want), &wantRows); err != nil || len(wantRows) != 2 || wantRows[0].Strategy != "augment" || wantRows[0].AnalysisUSD == 0 || spent == 0 {
		t.Fatalf("no analysis cost to compare (spend %v, %v): %s", spent, err, want)
	}

	// Stopped by the budget at a third and at two thirds of the spend, then
	// finished: the later passes find part of their answers in the cache.
	cut := t.TempDir()
	srv := startScripted(t)
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
	stops := 0
	for _, budget := range []float64{spent / 3, spent * 2 / 3, 0} {
		out, err := runAppEnv(t, vars, "run", "--config", analysisCostConfig(t, cut, budget))
		switch {
		case budget > 0 && run.ExitCode(err) == run.ExitStopped:
			stops++
		case err != nil:
			t.Fatalf("budget %v: %v\n%s", budget, err, out)
		}
	}
	if stops != 2 {
		t.Fatalf("%d of the 2 capped passes stopped: the test interrupts nothing", stops)
	}
	if got, _ := analysisCost(t, cut); got != want {
		t.Errorf("after two interruptions the analysis cost is\n%s\nwant\n%s", got, want)
	}

	batch := t.TempDir()
	runCmd("batch", "run", "--batch", "--config", analysisCostConfig(t, batch, 0))
	if got, _ := analysisCost(t, batch); got != want {
		t.Errorf("in batch mode the analysis cost is\n%s\nwant\n%s", got, want)
	}
}
