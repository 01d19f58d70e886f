package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCompactorsWhereStrategiesGo curates with a compactor and a plug-in
// compactor (an HTTP endpoint written here), re-runs without calling the
// plug-in again, and finds both in inspect and the curated export.
func TestCompactorsWhereStrategiesGo(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		var req struct {
			Schema   string
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Schema != "ac3.compact.v1" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"text": fmt.Sprintf("COMPACTED %d messages", len(req.Messages))})
	}))
	defer srv.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	cfg := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`run: {db: run.db}
stages:
  curate:
    strategies: [recent-n=2, plugin=tail]
    plugins:
      tail: {url: %q, timeout: 30s}
`, srv.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ingest", "--db", db, repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl"))
	out := mustRun(t, "curate", "--db", db, "--config", cfg, "--strategies", "recent-n=2,plugin=tail")
	if !strings.Contains(out, "0 failed") || hits.Load() == 0 {
		t.Fatalf("curate (%d plug-in calls): %s", hits.Load(), out)
	}
	calls := hits.Load()
	out = mustRun(t, "curate", "--db", db, "--config", cfg, "--strategies", "recent-n=2,plugin=tail")
	if !strings.Contains(out, "nothing to do") || hits.Load() != calls {
		t.Errorf("second curate called the plug-in %d more times:\n%s", hits.Load()-calls, out)
	}
	out = mustRun(t, "inspect", "--db", db, "--conversation", "aa7c3f49343e097be66442288abd1dac", "--turn", "2", "--width", "120")
	for _, s := range []string{"recent-n=2", "plugin=tail", "COMPACTED 2 messages"} {
		if !strings.Contains(out, s) {
			t.Errorf("inspect output lacks %q:\n%s", s, out)
		}
	}
	p := filepath.Join(dir, "curated.jsonl")
	mustRun(t, "export", "--db", db, "--what", "curated", "--format", "jsonl", "--out", p)
	b, err := os.ReadFile(p)
	if err != nil || !strings.Contains(string(b), `"strategy":"plugin=tail"`) || !strings.Contains(string(b), `"strategy":"recent-n=2"`) {
		t.Errorf("curated export lacks the compactors (%v)", err)
	}
}

// TestExtractSCReadsTheConstraintsStage: extract-sc is skipped, in one line,
// without the constraints stage, and with it (the heuristic annotator)
// appends the registry to the compacted history.
func TestExtractSCReadsTheConstraintsStage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	in := repoPath("fixtures", "wildchat", "wildchat-1m-sample10.jsonl")
	abs, _ := filepath.Abs(in)
	out := mustRun(t, "run", "--config", write("a.yaml", fmt.Sprintf(`run: {db: a.db, out: a/}
input: {files: [%q]}
stages:
  curate: {strategies: [recent-n=2, extract-sc=recent-n=2]}
`, abs)))
	if !strings.Contains(out, "skipping extract-sc=recent-n=2: the constraints stage has not run") {
		t.Errorf("no skip line:\n%s", out)
	}
	out = mustRun(t, "run", "--config", write("b.yaml", fmt.Sprintf(`run: {db: b.db, out: b/}
input: {files: [%q]}
stages:
  constraints: {annotator: heuristic}
  curate: {strategies: [recent-n=2, extract-sc=recent-n=2]}
`, abs)))
	if !strings.Contains(out, "curate: 20 tasks done, 0 failed") || strings.Contains(out, "skipping") {
		t.Errorf("run with the constraints stage:\n%s", out)
	}
}
