package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/export"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// TestPreferenceExportLeavesOutDuplicates runs the e2e config against the
// scripted endpoint. Before its first reset gated-reset builds the context
// fc builds, the respondent then answers both alike (from the cache), and
// gated-reset:ao repeats fc:ao's verdict: the same prompt, chosen and
// rejected. The export must write each such row once and count the rest as
// duplicates, exactly as many as the run's identical contexts predict, and
// --pairs same-prompt must find no verdict whose answers share a prompt
// (identical contexts give identical answers, a tie without a call).
func TestPreferenceExportLeavesOutDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
	if out, err := runAppEnv(t, vars, "run", "--config", e2eConfig(t, dir, "5")); err != nil {
		t.Fatalf("ac3 run: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "e2e.db")
	decisive, sameContext := judgedContexts(t, db)
	if sameContext == 0 {
		t.Fatal("no turn where gated-reset and fc built the same context and gated-reset:ao and fc:ao agreed: the test has nothing to find")
	}

	out := filepath.Join(dir, "dpo.jsonl")
	text, err := runAppEnv(t, vars, "export", "--db", db, "--what", "preferences", "--format", "jsonl", "--out", out)
	if err != nil {
		t.Fatalf("export: %v\n%s", err, text)
	}
	rows := readJSONL(t, out)
	seen := map[string]bool{}
	for _, r := range rows {
		b, _ := json.Marshal([]any{r["prompt"], r["chosen"], r["rejected"]})
		if seen[string(b)] {
			t.Errorf("row twice: %v", r)
		}
		seen[string(b)] = true
		if r["pair"] == "gated-reset:ao" && r["same_prompt"] != false {
			t.Errorf("gated-reset:ao row with same_prompt %v", r["same_prompt"])
		}
	}
	dups := skippedCount(t, text, export.SkippedDuplicate)
	if dups != sameContext || len(rows)+dups != decisive {
		t.Errorf("%d rows and %d duplicates; the run has %d decisive verdicts, %d of them repeating another's identical context\n%s", len(rows), dups, decisive, sameContext, text)
	}

	// Both answers from one prompt: none in this run.
	text, err = runAppEnv(t, vars, "export", "--db", db, "--what", "preferences", "--format", "jsonl", "--pairs", "same-prompt", "--out", filepath.Join(dir, "same.jsonl"))
	if err != nil {
		t.Fatalf("export --pairs same-prompt: %v\n%s", err, text)
	}
	if !strings.Contains(text, "wrote 0 preferences rows") || skippedCount(t, text, export.SkippedDifferentPrompts) != decisive {
		t.Errorf("--pairs same-prompt:\n%s", text)
	}

	// Winners: the winning answer of gated-reset before a reset is fc's, on
	// fc's prompt: written once.
	text, err = runAppEnv(t, vars, "export", "--db", db, "--what", "winners", "--format", "parquet", "--out", filepath.Join(dir, "w.parquet"))
	if err != nil || skippedCount(t, text, export.SkippedDuplicate) == 0 {
		t.Errorf("winners: %v\n%s", err, text)
	}
}

// TestSFTExportFlags: --strategies picks what goes in (and the summary says
// which), --train-on target leaves weight 1 on the target only, the
// metadata lands beside the file, and options that do not apply are
// refused before anything is read.
func TestSFTExportFlags(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	mustRun(t, "curate", "--db", db, "--strategies", "fc,ao,filler")
	out := filepath.Join(dir, "train.jsonl")
	text := mustRun(t, "export", "--db", db, "--what", "curated", "--format", "sft", "--strategies", "ao,filler", "--train-on", "target", "--out", out)
	if !strings.Contains(text, "(strategies ao, filler; metadata in "+filepath.Join(dir, "train.meta.jsonl")+")") || skippedCount(t, text, export.SkippedStrategy) == 0 {
		t.Errorf("export output:\n%s", text)
	}
	lines, metas := readJSONL(t, out), readJSONL(t, filepath.Join(dir, "train.meta.jsonl"))
	if len(lines) == 0 || len(lines) != len(metas) {
		t.Fatalf("%d lines, %d lines of metadata", len(lines), len(metas))
	}
	for i, l := range lines {
		if s := metas[i]["strategy"]; s != "ao" && s != "filler" {
			t.Errorf("line %d is strategy %v", i+1, s)
		}
		msgs := l["messages"].([]any)
		for k, x := range msgs {
			m := x.(map[string]any)
			w, ok := m["weight"]
			if m["role"] == "assistant" && (!ok || (w == 1.0) != (k == len(msgs)-1)) {
				t.Errorf("line %d message %d: weight %v", i+1, k, w)
			}
		}
	}
	for _, args := range [][]string{
		{"--what", "preferences", "--strategies", "fc"},
		{"--what", "curated", "--format", "jsonl", "--train-on", "target"},
		{"--what", "curated", "--format", "sft", "--train-on", "all"},
		{"--what", "curated", "--format", "sft", "--strategies", "lt"},
		{"--what", "preferences", "--pairs", "same-prompt", "--prompt-strategy", "fc"},
		{"--what", "winners", "--pairs", "same-prompt"},
	} {
		if _, _, err := runApp(t, append([]string{"export", "--db", db, "--out", filepath.Join(dir, "x.jsonl")}, args...)...); err == nil {
			t.Errorf("export %v succeeded", args)
		}
	}
}

// skippedCount reads how many rows the export's summary line says it left
// out for reason why (0 when it names none).
func skippedCount(t *testing.T, text, why string) int {
	t.Helper()
	m := regexp.MustCompile(`[;,:] (\d+) ` + regexp.QuoteMeta(why)).FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// judgedContexts reads the e2e run: how many quality verdicts were decisive
// with both orders agreeing, and at how many turns gated-reset:ao repeats
// fc:ao's verdict because gated-reset's context was fc's, word for word.
func judgedContexts(t *testing.T, db string) (decisive, sameContext int) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	plans, err := l.Plans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		conv string
		turn int
	}
	outcome := map[string]map[key]stats.Outcome{}
	err = l.Units(ctx, judge.StageName, plans[judge.StageName], 0, math.MaxInt64, func(u ledger.Unit) error {
		obs, err := judge.Observations(u)
		for _, ob := range obs {
			if ob.Dimension == judge.Quality && ob.Consistent && !ob.Identical && (ob.Outcome == stats.AWins || ob.Outcome == stats.BWins) {
				decisive++
				if outcome[ob.Variant] == nil {
					outcome[ob.Variant] = map[key]stats.Outcome{}
				}
				outcome[ob.Variant][key{u.ConvID, u.Turn}] = ob.Outcome
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, o := range outcome["gated-reset:ao"] {
		if outcome["fc:ao"][k] != o {
			continue
		}
		s, ok, err := l.Conversation(ctx, k.conv)
		if err != nil || !ok {
			t.Fatalf("conversation %s: %v", k.conv, err)
		}
		us, err := l.ConversationUnits(ctx, curate.StageName, k.conv, k.turn)
		if err != nil {
			t.Fatal(err)
		}
		contexts := map[string][]conv.Message{}
		for _, u := range us {
			x, err := curated.DecodeContext(u.Output)
			if err != nil {
				t.Fatal(err)
			}
			contexts[u.Variant] = x.Materialize(s.Conv)
		}
		if contexts["fc"] == nil {
			t.Fatalf("%v: no fc context", k)
		}
		if slices.Equal(contexts["fc"], contexts["gated-reset"]) {
			sameContext++
		}
	}
	return decisive, sameContext
}

// TestExportOfUnfinishedWorkIsRefused: an export of a stage with
// conversations still pending would be a smaller file that looks whole, so
// it is refused (exit 1, naming the stage, the variant and how many) unless
// --partial, whose closing line then says what is missing. Failed work is
// not pending: a finished stage exports.
func TestExportOfUnfinishedWorkIsRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, "--min-turns", "2", repoPath("fixtures", "formats", "sharegpt.jsonl"))
	mustRun(t, "curate", "--db", db, "--strategies", "fc,ao")
	out := filepath.Join(dir, "curated.jsonl")
	mustRun(t, "export", "--db", db, "--what", "curated", "--format", "jsonl", "--out", out)
	whole := readJSONL(t, out)

	// More conversations arrive; curate has not seen them yet.
	mustRun(t, "ingest", "--db", db, "--min-turns", "2", repoPath("fixtures", "formats", "openai.jsonl"))
	_, _, err := runApp(t, "export", "--db", db, "--what", "curated", "--format", "jsonl", "--out", out)
	var ue *export.UnfinishedError
	if !errors.As(err, &ue) || run.ExitCode(err) != run.ExitError {
		t.Fatalf("export of a curate stage with pending conversations: %v (exit %d), want an UnfinishedError with exit %d", err, run.ExitCode(err), run.ExitError)
	}
	if len(ue.Pending) != 2 || ue.Pending[0].Stage != curate.StageName || ue.Pending[0].Conversations == 0 {
		t.Fatalf("pending work named: %+v", ue.Pending)
	}
	if !strings.Contains(err.Error(), "--partial") {
		t.Fatalf("the refusal does not say how to export anyway: %v", err)
	}
	if got := readJSONL(t, out); len(got) != len(whole) {
		t.Fatalf("the refused export changed the earlier file: %d rows, had %d", len(got), len(whole))
	}
	stdout := mustRun(t, "export", "--db", db, "--what", "curated", "--format", "jsonl", "--out", out, "--partial")
	if !strings.Contains(stdout, "partial (--partial): curate fc: ") || len(readJSONL(t, out)) != len(whole) {
		t.Fatalf("--partial export: %q, %d rows (want %d and the pending work named)", stdout, len(readJSONL(t, out)), len(whole))
	}
	// Once curated, the export is whole again and larger.
	mustRun(t, "curate", "--db", db, "--strategies", "fc,ao")
	stdout = mustRun(t, "export", "--db", db, "--what", "curated", "--format", "jsonl", "--out", out)
	if strings.Contains(stdout, "partial") || len(readJSONL(t, out)) <= len(whole) {
		t.Fatalf("after curate: %q, %d rows (had %d)", stdout, len(readJSONL(t, out)), len(whole))
	}
}
