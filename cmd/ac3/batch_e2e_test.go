package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/batch"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/export"
)

// TestEndToEndBatchMatchesOnline runs the e2e config with every role in
// batch mode (--batch) against the scripted endpoint's batch API and
// compares the outputs with the online run's goldens: a unit answered from
// a batch is indistinguishable from one answered online. The reports
// differ only in what was spent (batch price, and cache hits of the
// passes after each import), so their spend sections are set aside; the
// analysis cost, which prices the answers used, is not one of them.
func TestEndToEndBatchMatchesOnline(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	cfg := e2eConfig(t, dir, "5")
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(raw, []byte("\nbatch:\n  poll: 1ms\n  max_requests: 40\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
	plan, err := runAppEnv(t, vars, "run", "--batch", "--config", cfg, "--dry-run", "--json")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, plan)
	}
	var fc struct {
		BatchRounds int `json:"batch_rounds"`
		Stages      []struct {
			Label       string `json:"label"`
			Calls       int    `json:"calls"`
			BatchRounds int    `json:"batch_rounds"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(plan), &fc); err != nil {
		t.Fatalf("dry run: %v\n%s", err, plan)
	}
	for _, s := range fc.Stages {
		if (s.Calls > 0) != (s.BatchRounds > 0) {
			t.Errorf("dry run: %s has %d calls in batch mode and %d batch rounds", s.Label, s.Calls, s.BatchRounds)
		}
	}
	out, err := runAppEnv(t, vars, "run", "--batch", "--config", cfg)
	if err != nil {
		t.Fatalf("ac3 run --batch: %v\n%s", err, out)
	}
	// The closing line gives the rounds; the dry run's estimate assumes
	// what the scripted endpoint does (every request answered, every
	// answer parsed), and counts what it cannot know as an upper bound.
	m := roundsLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no closing line with the batch rounds:\n%s", out)
	}
	rounds, _ := strconv.Atoi(m[1])
	t.Logf("%s; the dry run estimated %d", m[0], fc.BatchRounds)
	if rounds < 1 || rounds > fc.BatchRounds {
		t.Errorf("the run took %d batch rounds, the dry run estimated %d", rounds, fc.BatchRounds)
	}
	meters := anyMeterLine.FindAllStringSubmatch(out, -1)
	for _, pm := range meters {
		if done, _ := strconv.Atoi(pm[2]); done > atoi(t, pm[3]) {
			t.Errorf("progress line counts past its total: %q", pm[0])
		}
	}
	if !slices.ContainsFunc(meters, func(pm []string) bool { return pm[1] == "curate" && pm[2] == pm[3] }) {
		t.Errorf("no progress line shows curate done:\n%s", out)
	}
	if n := submittedOnce(t, srv); n != srv.Count() {
		t.Errorf("%d requests submitted in batches, %d answered", n, srv.Count())
	}
	online := 0
	for _, c := range srv.Calls() {
		if c.Batch == "" {
			online++
		}
	}
	if online != 0 || len(srv.Batches()) < 2 {
		t.Fatalf("%d requests sent online, %d batches; want every request in a batch", online, len(srv.Batches()))
	}
	db := filepath.Join(dir, "e2e.db")
	outDir := filepath.Join(dir, "e2e")
	for _, x := range [][2]string{
		{"conversations", "parquet"}, {"conversations", "jsonl"},
		{"curated", "parquet"}, {"curated", "jsonl"}, {"curated", "sft"},
		{"annotations", "parquet"}, {"annotations", "jsonl"},
		{"quarantine", "jsonl"}, {"winners", "parquet"},
	} {
		p := filepath.Join(outDir, "extra-"+export.FileName(x[0], x[1]))
		if o, err := runAppEnv(t, vars, "export", "--db", db, "--what", x[0], "--format", x[1], "--out", p); err != nil {
			t.Fatalf("ac3 export %s %s: %v\n%s", x[0], x[1], err, o)
		}
	}
	got := readDir(t, outDir)
	want := readDir(t, filepath.Join("testdata", "e2e"))
	if len(want) == 0 {
		t.Fatal("no golden files")
	}
	for name, b := range want {
		g, ok := got[name]
		if strings.HasPrefix(name, "report.") {
			g, b = withoutSpend(t, name, g), withoutSpend(t, name, b)
		}
		switch {
		case !ok:
			t.Errorf("the batch run did not write %s", name)
		case !bytes.Equal(g, b):
			t.Errorf("%s differs from the online run's (%d bytes, want %d)", name, len(g), len(b))
		}
	}
	st, err := runAppEnv(t, vars, "status", "--db", db)
	if err != nil || !strings.Contains(st, "imported") || !strings.Contains(st, "batch requests:") {
		t.Errorf("status does not show the batches: %v\n%s", err, st)
	}
}

// anyMeterLine is a progress line with its done and total.
var anyMeterLine = regexp.MustCompile(`(?m)^([a-z()+ -]+): (\d+)/(\d+) (?:tasks|conversations) \(`)

// withoutSpend removes a report's spend table, "Cost by role" (cost in
// JSON): in batch mode the answers are paid at the batch price when
// imported, and the stage's final pass finds them in the cache, so calls
// count as cache hits there.
func withoutSpend(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	switch filepath.Ext(name) {
	case ".json":
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		delete(m, "cost")
		out, _ := json.Marshal(m)
		return out
	case ".md":
		return cutSections(b, "\n## ", "Cost by role")
	case ".html":
		return cutSections(b, `<h2 id="`, "cost-by-role")
	}
	return b
}

// cutSections removes each section whose heading (the text after mark)
// starts with one of titles, up to the next heading.
func cutSections(b []byte, mark string, titles ...string) []byte {
	parts := strings.Split(string(b), mark)
	out := parts[0]
	for _, p := range parts[1:] {
		skip := false
		for _, title := range titles {
			skip = skip || strings.HasPrefix(p, title)
		}
		if !skip {
			out += mark + p
		}
	}
	return []byte(out)
}

// answerFile answers every line of a batch input file through srv's online
// endpoint, as vllm run_batch would, and writes the results file.
func answerFile(t *testing.T, srv *llmtest.Server, in, out string) int {
	t.Helper()
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var res bytes.Buffer
	n := 0
	err = batch.ReadInput(f, func(_ int, l batch.InputLine) error {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/chat/completions", bytes.NewReader(l.Body))
		req.Header.Set(llmtest.KeyHeader, l.CustomID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprint("r", n), "custom_id": l.CustomID,
			"response": map[string]any{"status_code": resp.StatusCode, "body": json.RawMessage(body)}, "error": nil})
		res.Write(append(line, '\n'))
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, res.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBatchFilesExportImport(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	cfg := e2eConfig(t, dir, "5")
	raw, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, append(raw, []byte("\nbatch:\n  files: true\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
	db := filepath.Join(dir, "e2e.db")
	out, err := runAppEnv(t, vars, "run", "--batch", "--config", cfg)
	if code := run.ExitCode(err); code != run.ExitStopped || !strings.Contains(out, "ac3 batch export") {
		t.Fatalf("ac3 run with batch files: exit %d (%v), want %d\n%s", code, err, run.ExitStopped, out)
	}
	if srv.Count() != 0 {
		t.Fatalf("%d requests sent; batch files send nothing", srv.Count())
	}
	reqs := filepath.Join(dir, "requests.jsonl")
	if out, err := runAppEnv(t, vars, "batch", "export", "--db", db, "--stage", "no-such-stage", "--out", reqs); err != nil || !strings.Contains(out, "wrote 0 requests") {
		t.Fatalf("export of another stage: %v\n%s", err, out)
	}
	if out, err := runAppEnv(t, vars, "batch", "export", "--db", db, "--out", reqs); err != nil || strings.Contains(out, "wrote 0 requests") {
		t.Fatalf("export: %v\n%s", err, out)
	}
	results := filepath.Join(dir, "results.jsonl")
	n := answerFile(t, srv, reqs, results)

	// A results file for another run: none of its ids are this run's.
	foreign := filepath.Join(dir, "foreign.jsonl")
	_ = os.WriteFile(foreign, []byte(`{"custom_id":"0000","response":{"status_code":200,"body":{"choices":[{"message":{"content":"x"}}]}}}`+"\n"), 0o644)
	if out, err := runAppEnv(t, vars, "batch", "import", "--db", db, "--config", cfg, foreign); err == nil || !strings.Contains(err.Error(), "another run or another prompt version") {
		t.Fatalf("foreign results imported: %v\n%s", err, out)
	}
	// Mixed: the run's answers and one foreign line, reported and skipped.
	b, _ := os.ReadFile(results)
	f, _ := os.ReadFile(foreign)
	_ = os.WriteFile(results, append(b, f...), 0o644)
	out, err = runAppEnv(t, vars, "batch", "import", "--db", db, "--config", cfg, results)
	if err != nil || !strings.Contains(out, fmt.Sprintf("imported %d answers (0 already", n)) || !strings.Contains(out, "skipped 1 lines") || !strings.Contains(out, "0000") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	out, err = runAppEnv(t, vars, "batch", "import", "--db", db, "--config", cfg, results)
	if err != nil || !strings.Contains(out, fmt.Sprintf("imported 0 answers (%d already", n)) {
		t.Fatalf("import again: %v\n%s", err, out)
	}
	// The run goes on from the imported answers: the next requests it
	// queues are new ones.
	before := srv.Count()
	if _, err := runAppEnv(t, vars, "run", "--batch", "--config", cfg); run.ExitCode(err) != run.ExitStopped {
		t.Fatalf("second run: %v", err)
	}
	if srv.Count() != before {
		t.Fatal("the second run sent requests")
	}
	reqs2 := filepath.Join(dir, "requests2.jsonl")
	if _, err := runAppEnv(t, vars, "batch", "export", "--db", db, "--out", reqs2); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(reqs)
	second, _ := os.ReadFile(reqs2)
	if len(second) == 0 || bytes.Equal(first, second) {
		t.Fatal("the run did not move on after the import")
	}
}
