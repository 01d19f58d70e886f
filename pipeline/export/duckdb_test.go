package export_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/export"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
)

// TestDuckDBReadsExports checks the Parquet exports with DuckDB, an
// independent reader: messages must come out as a list of structs, not text.
// It needs AC3_DUCKDB_DIR, a folder prepared by scripts/duckdb/install.sh
// (CI does this); without it the test is skipped.
func TestDuckDBReadsExports(t *testing.T) {
	dir := os.Getenv("AC3_DUCKDB_DIR")
	if dir == "" {
		t.Skip("AC3_DUCKDB_DIR not set (see scripts/duckdb/install.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tmp := t.TempDir()
	l, err := ledger.Open(ctx, filepath.Join(tmp, "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	in, _ := l.AddInput(ctx, ledger.Input{Path: "/x", Format: "openai"})
	convs := []*conv.Conversation{
		{ID: "a", System: "sys", Messages: []conv.Message{{Role: conv.User, Content: "héllo"}, {Role: conv.Assistant, Content: "hi"}, {Role: conv.User, Content: "more"}}},
		{ID: "b", Messages: []conv.Message{{Role: conv.User, Content: "q"}, {Role: conv.Assistant, Content: "a"}, {Role: conv.User, Content: "q2"}, {Role: conv.Assistant, Content: "a2"}}},
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: convs}); err != nil {
		t.Fatal(err)
	}
	counter, err := tokens.New("")
	if err != nil {
		t.Fatal(err)
	}
	strats, err := curate.Resolve("fc,ao", curate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := curate.NewStage(strats, counter, 2)
	vs := st.Variants()
	lv := make([]ledger.Variant, len(vs))
	for i, v := range vs {
		lv[i] = ledger.Variant(v)
	}
	l.SetPlan(ctx, st.Name(), lv)
	if _, err := pipeline.Run(ctx, l, st, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(tmp, "conversations.parquet")
	kp := filepath.Join(tmp, "curated.parquet")
	if _, err := export.Conversations(ctx, l, export.Parquet, cp); err != nil {
		t.Fatal(err)
	}
	if _, err := export.Curated(ctx, l, export.Parquet, kp); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "read.mjs"), cp, kp)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	want := map[string]int{cp: 2, kp: 4}
	sc := bufio.NewScanner(bytes.NewReader(out))
	seen := 0
	for sc.Scan() {
		var r struct {
			File    string
			Rows    int
			Columns map[string]string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("duckdb output %q: %v", sc.Text(), err)
		}
		seen++
		if r.Rows != want[r.File] {
			t.Errorf("%s: duckdb read %d rows, want %d", r.File, r.Rows, want[r.File])
		}
		if got := r.Columns["messages"]; got != `STRUCT("role" VARCHAR, "content" VARCHAR)[]` {
			t.Errorf("%s: messages read as %q, want a list of structs", r.File, got)
		}
	}
	if seen != 2 {
		t.Fatalf("duckdb printed %d files:\n%s", seen, out)
	}
}
