package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

func TestManualDocumentsExitStatuses(t *testing.T) {
	out := mustRun(t, "--help")
	for _, want := range []string{"Exit status:", "0  done", "2  done, but some units failed", "3  stopped before the end"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestFailedUnitsExitTwoWithAClosingLine(t *testing.T) {
	db := ingestedRun(t)
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "no idea"}})
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	out, _, err := annotateEnvRun(t, vars, "annotate", "--db", db, "--stages", "classify", "--annotator", "llm")
	if code := exitCode(err); code != exitFailed {
		t.Fatalf("exit status %d (%v), want %d\n%s", code, err, exitFailed, out)
	}
	last := lines(out)[len(lines(out))-1]
	for _, want := range []string{"10 tasks have failed units", "classify 10", "ac3 retry --db " + db + " --stage classify"} {
		if !strings.Contains(last, want) {
			t.Errorf("the closing line %q lacks %q", last, want)
		}
	}
}

func TestIngestOfAMissingFileLeavesNoRunFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	out, errs, err := runApp(t, "ingest", "--db", db, filepath.Join(dir, "missing.jsonl"))
	if err == nil || exitCode(err) != exitError {
		t.Fatalf("err = %v (status %d)", err, exitCode(err))
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
	if !strings.Contains(out, "wrote 2 curated rows") || !strings.Contains(out, "left out 1 curated rows: no reply in the dataset") {
		t.Errorf("export output:\n%s", out)
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
		if code := exitCode(err); code != exitError {
			t.Fatalf("%v: exit status %d (%v), want %d", args, code, err, exitError)
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
