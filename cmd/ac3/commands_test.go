package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
)

func repoPath(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

// expectedBad reads fixtures/bad/expected.tsv: line<TAB>reason.
func expectedBad(t *testing.T) map[int64]string {
	t.Helper()
	f, err := os.Open(repoPath("fixtures", "bad", "expected.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int64]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			t.Fatalf("expected.tsv: %q: %v", line, err)
		}
		out[n] = fields[1]
	}
	return out
}

func TestIngestQuarantinesBadRecordsAndGoesOn(t *testing.T) {
	db := filepath.Join(t.TempDir(), "run.db")
	bad := repoPath("fixtures", "bad", "wildchat_mixed.jsonl")
	out := mustRun(t, "ingest", "--db", db, "--max-line-bytes", "4096", bad)
	want := expectedBad(t)
	if !strings.Contains(out, "quarantined "+strconv.Itoa(len(want))) {
		t.Errorf("ingest output does not report %d quarantined:\n%s", len(want), out)
	}

	js := mustRun(t, "status", "--db", db, "--json")
	var st ledger.Status
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, js)
	}
	if st.QuarantTotal != int64(len(want)) || st.Conversations != 4 {
		t.Errorf("status: %d quarantined, %d kept; want %d and 4", st.QuarantTotal, st.Conversations, len(want))
	}

	qfile := filepath.Join(t.TempDir(), "bad.jsonl")
	mustRun(t, "export", "--db", db, "--what", "quarantine", "--format", "jsonl", "--out", qfile)
	b, err := os.ReadFile(qfile)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var row struct {
			File    string `json:"file"`
			Line    int64  `json:"line"`
			Reason  string `json:"reason"`
			Excerpt string `json:"excerpt"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("quarantine export line %q: %v", line, err)
		}
		if !strings.HasSuffix(row.File, "wildchat_mixed.jsonl") {
			t.Errorf("quarantine row names file %q", row.File)
		}
		got[row.Line] = row.Reason
	}
	for line, reason := range want {
		if got[line] != reason {
			t.Errorf("line %d: quarantined as %q, want %q", line, got[line], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("quarantined %d records, want %d: %v", len(got), len(want), got)
	}

	// Ingesting the same file again does nothing and says so.
	out = mustRun(t, "ingest", "--db", db, "--max-line-bytes", "4096", bad)
	if !strings.Contains(out, "already ingested") {
		t.Errorf("second ingest did not say the file was done:\n%s", out)
	}
	// Other filters on the same run are refused.
	if _, _, err := runApp(t, "ingest", "--db", db, "--min-turns", "3", bad); err == nil {
		t.Error("ingest with other filters into the same run succeeded")
	}
}

func TestIngestFiltersCountEveryDrop(t *testing.T) {
	db := filepath.Join(t.TempDir(), "run.db")
	wc := repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl")
	mustRun(t, "ingest", "--db", db, "--language", "English", "--min-turns", "5", "--max-turns", "10", wc, wc)
	js := mustRun(t, "status", "--db", db, "--json")
	var st ledger.Status
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatal(err)
	}
	// The sample has 10 conversations; the same file twice is one input.
	if st.Conversations+st.DroppedTotal != 10 {
		t.Errorf("kept %d + dropped %d != 10 records: %+v", st.Conversations, st.DroppedTotal, st.Dropped)
	}
	if st.Dropped["language"] == 0 || st.Dropped["too_few_turns"] == 0 {
		t.Errorf("drops by reason = %v, want language and too_few_turns", st.Dropped)
	}
}

func TestCurateInspectExport(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"), repoPath("fixtures", "lic", "sample_5_per_task.json"))
	out := mustRun(t, "curate", "--db", db, "--strategies", "fc,ao,lt,de,concat,filler")
	if !strings.Contains(out, "0 failed") {
		t.Fatalf("curate: %s", out)
	}
	out = mustRun(t, "curate", "--db", db, "--strategies", "fc,ao,lt,de,concat,filler")
	if !strings.Contains(out, "nothing to do") {
		t.Errorf("second curate did work:\n%s", out)
	}
	// Adding a strategy runs only that strategy.
	out = mustRun(t, "curate", "--db", db, "--strategies", "fc,ao")
	if !strings.Contains(out, "nothing to do") {
		t.Errorf("curate of a subset did work:\n%s", out)
	}

	out = mustRun(t, "inspect", "--db", db, "--conversation", "aa7c3f49343e097be66442288abd1dac", "--turn", "2", "--width", "100")
	for _, s := range []string{"fc", "ao", "[earlier reply omitted]", "tok"} {
		if !strings.Contains(out, s) {
			t.Errorf("inspect output lacks %q:\n%s", s, out)
		}
	}
	if _, _, err := runApp(t, "inspect", "--db", db, "--conversation", "nope", "--turn", "2"); err == nil {
		t.Error("inspect of an unknown conversation succeeded")
	}

	for _, f := range []string{"parquet", "jsonl"} {
		p := filepath.Join(dir, "curated."+f)
		out := mustRun(t, "export", "--db", db, "--what", "curated", "--format", f, "--out", p)
		if !strings.Contains(out, "curated rows") {
			t.Errorf("export: %s", out)
		}
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("export %s: %v", p, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "curated.jsonl"))
	first := strings.SplitN(string(b), "\n", 2)[0]
	var row struct {
		ConversationID string `json:"conversation_id"`
		Turn           int    `json:"turn"`
		Strategy       string `json:"strategy"`
		Messages       []struct{ Role, Content string }
		Tokens         int     `json:"tokens"`
		Target         *string `json:"target"`
	}
	if err := json.Unmarshal([]byte(first), &row); err != nil {
		t.Fatalf("curated row %q: %v", first, err)
	}
	if row.Turn != 2 || len(row.Messages) == 0 || row.Tokens == 0 || row.Target == nil {
		t.Errorf("first curated row = %+v", row)
	}
}

func TestConvertFiltersIntoParquet(t *testing.T) {
	out := filepath.Join(t.TempDir(), "en.parquet")
	res := mustRun(t, "convert", "--language", "en", "--out", out, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	if !strings.Contains(res, "wrote") {
		t.Fatalf("convert: %s", res)
	}
	back := filepath.Join(t.TempDir(), "back.jsonl")
	mustRun(t, "convert", "--out", back, out)
	b, _ := os.ReadFile(back)
	n := strings.Count(string(b), "\n")
	if n == 0 || n >= 10 {
		t.Errorf("round trip through Parquet kept %d English conversations", n)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("run: {db: x.db}\nstages: {curate: {strategies: []}}\n"), 0o644)
	_, _, err := runApp(t, "run", "--config", p)
	if err == nil || !strings.Contains(err.Error(), "stages.curate.strategies") {
		t.Errorf("err = %v", err)
	}
	os.WriteFile(p, []byte("run: {db: x.db}\ninput: {filez: []}\n"), 0o644)
	_, _, err = runApp(t, "run", "--config", p)
	if err == nil || !strings.Contains(err.Error(), "filez") {
		t.Errorf("unknown field: err = %v", err)
	}
}

func TestAnnotationsAndSFTExports(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	if _, _, err := runApp(t, "export", "--db", db, "--what", "annotations", "--format", "jsonl", "--out", filepath.Join(dir, "a.jsonl")); err == nil {
		t.Error("annotations export before any annotation succeeded")
	}
	mustRun(t, "annotate", "--db", db, "--stages", "classify,constraints", "--annotator", "heuristic")
	mustRun(t, "curate", "--db", db, "--strategies", "fc,ao")
	ann := filepath.Join(dir, "a.jsonl")
	mustRun(t, "export", "--db", db, "--what", "annotations", "--format", "jsonl", "--out", ann)
	b, _ := os.ReadFile(ann)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	typed := 0
	for _, line := range lines {
		var row struct {
			Turn      int     `json:"turn"`
			TurnType  *string `json:"turn_type"`
			Annotator *string `json:"classify_annotator"`
			Registry  *[]struct {
				Text string `json:"text"`
				Turn int    `json:"turn"`
			} `json:"constraints_registry"` // a list, not JSON text`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if row.TurnType != nil {
			typed++
			if row.Turn < 2 || row.Annotator == nil || *row.Annotator != "heuristic" {
				t.Errorf("row %+v", row)
			}
		}
		if row.Registry == nil {
			t.Errorf("turn %d has no constraint registry", row.Turn)
		}
	}
	if typed == 0 || typed >= len(lines) {
		t.Errorf("%d of %d rows have a turn type; turn 1 should have none, later turns one", typed, len(lines))
	}
	mustRun(t, "export", "--db", db, "--what", "annotations", "--format", "parquet", "--out", filepath.Join(dir, "a.parquet"))

	sft := filepath.Join(dir, "train.jsonl")
	mustRun(t, "export", "--db", db, "--what", "curated", "--format", "sft", "--out", sft)
	b, _ = os.ReadFile(sft)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ex struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.Unmarshal([]byte(line), &ex); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if n := len(ex.Messages); n < 2 || ex.Messages[n-1].Role != "assistant" || ex.Messages[n-2].Role != "user" {
			t.Fatalf("sft example does not end with user then assistant: %+v", ex.Messages)
		}
	}
	if _, _, err := runApp(t, "export", "--db", db, "--what", "quarantine", "--format", "sft", "--out", filepath.Join(dir, "x")); err == nil {
		t.Error("sft export of the quarantine succeeded")
	}
}
