package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

func TestManualDocumentsExitStatuses(t *testing.T) {
	out := mustRun(t, "--help")
	for _, want := range []string{"Exit status:", "0  done", "2  done, but units of the stages the command covers are recorded as failed", "--accept-failed", "3  stopped before the end"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	for _, cmd := range []string{"annotate", "curate", "respond", "judge", "run"} {
		if out := mustRun(t, cmd, "--help"); !strings.Contains(out, "--accept-failed") {
			t.Errorf("%s --help lacks --accept-failed", cmd)
		}
	}
}

// The exit status is the run's state, not the pass's: failed units recorded
// by the first pass keep every later pass (which finds nothing to do) at
// exit 2 with the same closing line, until they are accepted or retried.
func TestFailedUnitsExitTwoOnEveryPass(t *testing.T) {
	db := ingestedRun(t)
	bad := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "no idea"}})
	vars := map[string]string{"OPENAI_BASE_URL": bad.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	args := []string{"annotate", "--db", db, "--stages", "classify", "--annotator", "llm"}
	for pass := 1; pass <= 2; pass++ {
		out, _, err := annotateEnvRun(t, vars, args...)
		if code := run.ExitCode(err); code != run.ExitFailed {
			t.Fatalf("pass %d: exit status %d (%v), want %d\n%s", pass, code, err, run.ExitFailed, out)
		}
		if pass == 2 && !strings.Contains(out, "nothing to do") {
			t.Errorf("pass 2 did work:\n%s", out)
		}
		last := lines(out)[len(lines(out))-1]
		for _, want := range []string{"10 tasks have failed units", "classify/llm 10", "ac3 retry --db " + db + " --stage classify", "--accept-failed"} {
			if !strings.Contains(last, want) {
				t.Errorf("pass %d: the closing line %q lacks %q", pass, last, want)
			}
		}
		if !strings.Contains(out, "failed: classify/llm: 10 tasks, ") {
			t.Errorf("pass %d: no line for the failed variant:\n%s", pass, out)
		}
	}
	calls := bad.Count()
	out, _, err := annotateEnvRun(t, vars, append(args, "--accept-failed")...)
	if err != nil {
		t.Fatalf("--accept-failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "accepted (--accept-failed)") || !strings.Contains(out, "10 tasks have failed units") {
		t.Errorf("--accept-failed does not say what it accepted:\n%s", out)
	}
	if bad.Count() != calls {
		t.Errorf("the passes after the first sent %d requests", bad.Count()-calls)
	}

	// Retried against a model that answers, the run has nothing failed.
	mustRun(t, "retry", "--db", db, "--stage", "classify")
	good := llmtest.New(t, llmtest.Options{})
	good.Add(llmtest.Rule{Func: fakeAnnotator})
	vars["OPENAI_BASE_URL"] = good.URL
	out, _, err = annotateEnvRun(t, vars, args...)
	if err != nil || strings.Contains(out, "failed units recorded") {
		t.Fatalf("after the retry: %v\n%s", err, out)
	}
}

// ac3 run says the same on its first and every later pass.
func TestRunExitsTwoOnEveryPassWithFailedUnits(t *testing.T) {
	db := ingestedRun(t)
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "no idea"}})
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	body := "run: {db: " + db + "}\nstages:\n  classify: {annotator: llm}\n  curate: {strategies: [fc]}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	for pass := 1; pass <= 2; pass++ {
		out, _, err := annotateEnvRun(t, vars, "run", "--config", cfg)
		if code := run.ExitCode(err); code != run.ExitFailed {
			t.Fatalf("pass %d: exit status %d (%v), want %d\n%s", pass, code, err, run.ExitFailed, out)
		}
		if strings.Contains(out, "== done") {
			t.Errorf("pass %d says done:\n%s", pass, out)
		}
		if !strings.Contains(out, "classify/llm 10") {
			t.Errorf("pass %d does not say where:\n%s", pass, out)
		}
	}
	out, _, err := annotateEnvRun(t, vars, "run", "--config", cfg, "--accept-failed")
	if err != nil || !strings.Contains(out, "== done") {
		t.Errorf("--accept-failed: %v\n%s", err, out)
	}
}

func TestIngestOfAMissingFileLeavesNoRunFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	out, errs, err := runApp(t, "ingest", "--db", db, filepath.Join(dir, "missing.jsonl"))
	if err == nil || run.ExitCode(err) != run.ExitError {
		t.Fatalf("err = %v (status %d)", err, run.ExitCode(err))
	}
	if strings.Count(err.Error(), "missing.jsonl") != 1 {
		t.Errorf("the error names the file %d times: %v", strings.Count(err.Error(), "missing.jsonl"), err)
	}
	if out != "" || errs != "" {
		t.Errorf("output before the error:\nstdout %q\nstderr %q", out, errs)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run file exists: %v", err)
	}
}

func TestFilterErrorsNameTheFlags(t *testing.T) {
	db := filepath.Join(t.TempDir(), "run.db")
	_, _, err := runApp(t, "ingest", "--db", db, "--min-turns", "5", "--max-turns", "3", repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "--min-turns") || !strings.Contains(err.Error(), "--max-turns") || strings.Contains(err.Error(), "UserTurns") {
		t.Errorf("err = %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte("run: {db: "+db+"}\ninput: {files: [x.jsonl], filter: {user_turns: {min: -1}}}\n"), 0o644)
	if _, _, err := runApp(t, "run", "--config", cfg); err == nil || !strings.Contains(err.Error(), "input.filter.user_turns.min") {
		t.Errorf("config: err = %v", err)
	}
}

func TestSFTExportSaysWhatItLeftOut(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, filepath.Join("testdata", "open-ended.jsonl"))
	mustRun(t, "curate", "--db", db, "--strategies", "fc")
	out := mustRun(t, "export", "--db", db, "--what", "curated", "--format", "sft", "--out", filepath.Join(dir, "sft.jsonl"))
	// Turns 2 of both conversations have a reply; turn 3 of open-end has none.
	want := "wrote 2 curated rows to " + filepath.Join(dir, "sft.jsonl") + " (strategies fc; metadata in " + filepath.Join(dir, "sft.meta.jsonl") + "); left out 1: 1 no reply in the dataset to train towards\n"
	if !strings.Contains(out, want) {
		t.Errorf("export output:\n%s\nwant the line\n%s", out, want)
	}
}

func lines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

// A dry run is how a config is checked before a long run: one the run
// would stop on (a strategy it cannot build) prints the plan and fails,
// and the run file is left as it was.
func TestDryRunFailsWhenTheRunWouldStop(t *testing.T) {
	db := ingestedRun(t)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	body := "run: {db: " + db + "}\nstages:\n  curate: {strategies: [fc, no-such-strategy]}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", "--config", cfg, "--dry-run"}, {"run", "--config", cfg, "--dry-run", "--json"}} {
		out, _, err := runApp(t, args...)
		if code := run.ExitCode(err); code != run.ExitError {
			t.Fatalf("%v: exit status %d (%v), want %d", args, code, err, run.ExitError)
		}
		if !strings.Contains(err.Error(), "would stop at curate") || !strings.Contains(out, "unknown strategy") {
			t.Errorf("%v: err %v\nplan:\n%s", args, err, out)
		}
	}
	missing := "run: {db: " + db + "}\ninput: {files: [" + filepath.Join(t.TempDir(), "gone.jsonl") + "]}\n"
	if err := os.WriteFile(cfg, []byte(missing), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runApp(t, "run", "--config", cfg, "--dry-run"); err == nil || !strings.Contains(err.Error(), "would stop at ingest") || !strings.Contains(out, "missing") {
		t.Errorf("a missing input: err %v\nplan:\n%s", err, out)
	}
	sed := strings.Replace(body, ", no-such-strategy", "", 1)
	if err := os.WriteFile(cfg, []byte(sed), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "run", "--config", cfg, "--dry-run")
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("the dry runs changed the run file")
	}
}

// An export killed part way leaves a hidden temporary file beside its
// output; the next export of that output removes it.
func TestExportRemovesTheTemporaryFileAKilledExportLeft(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, filepath.Join("testdata", "open-ended.jsonl"))
	mustRun(t, "curate", "--db", db, "--strategies", "fc")
	// What a killed export leaves: its temporary file, whose lock ended
	// with its process.
	orphan := filepath.Join(dir, ".curated.parquet.tmp-12345.part")
	if err := os.WriteFile(orphan, []byte("half a parquet file"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "export", "--db", db, "--what", "curated", "--format", "parquet", "--out", filepath.Join(dir, "curated.parquet"))
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the orphaned temporary file is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "curated.parquet")); err != nil {
		t.Error(err)
	}
}

// The run finds what the dry run finds before its first paid call: a
// config naming an unknown strategy after a model-backed annotation stage
// is refused with exit 1 and no request sent.
func TestRunRefusesAnUnknownStrategyBeforeAnyCall(t *testing.T) {
	db := ingestedRun(t)
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: fakeAnnotator})
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	body := "run: {db: " + db + "}\nstages:\n  classify: {annotator: llm}\n  curate: {strategies: [fc, no-such-strategy]}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	out, _, err := annotateEnvRun(t, vars, "run", "--config", cfg)
	if code := run.ExitCode(err); code != run.ExitError || !strings.Contains(err.Error(), `"no-such-strategy": unknown strategy`) {
		t.Fatalf("exit status %d (%v), want %d naming the strategy\n%s", code, err, run.ExitError, out)
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("%d requests reached the endpoint before the refusal", n)
	}
	neg := filepath.Join(t.TempDir(), "neg.yaml")
	if err := os.WriteFile(neg, []byte("run:\n  db: "+db+"\n  budget_usd: -5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := annotateEnvRun(t, vars, "run", "--config", neg); run.ExitCode(err) != run.ExitError || !strings.Contains(err.Error(), "line 3: run.budget_usd: -5") {
		t.Errorf("budget_usd: -5: %v", err)
	}
	if _, _, err := annotateEnvRun(t, vars, "annotate", "--db", db, "--annotator", "llm", "--budget-usd", "-5"); run.ExitCode(err) != run.ExitError || !strings.Contains(err.Error(), "budget -5 USD") {
		t.Errorf("--budget-usd -5: %v", err)
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("%d requests reached the endpoint", n)
	}
}
