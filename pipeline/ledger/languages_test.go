package ledger_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ac3/ac3/migrations"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// langConv is a conversation in lang, labelled from source.
func langConv(id, lang, source string) *conv.Conversation {
	c := testConv(id, "text of "+id)
	c.Language, c.LanguageSource = lang, source
	if source == conv.LanguageIdentified {
		c.LanguageDetector, c.LanguageConfidence = "detector 1", 0.75
	}
	return c
}

func TestStatusCountsLanguagesBySource(t *testing.T) {
	ctx := context.Background()
	l, path := mustOpen(t)
	in, err := l.AddInput(ctx, ledger.Input{Path: "/x.jsonl", Format: "sharegpt", Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	kept := []*conv.Conversation{
		langConv("a", "English", conv.LanguageFromInput),
		langConv("b", "English", conv.LanguageIdentified),
		langConv("c", "English", conv.LanguageIdentified),
		langConv("d", "Chinese", conv.LanguageIdentified),
		langConv("e", "Spanish", conv.LanguageFromInput),
		langConv("f", "Spanish", conv.LanguageFromInput),
		langConv("g", "", ""),
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: kept, RecordsDone: 7, Finished: true}); err != nil {
		t.Fatal(err)
	}
	want := []ledger.LanguageCount{
		{Language: "English", Conversations: 3, Identified: 2},
		{Language: "Spanish", Conversations: 2},
		{Language: "", Conversations: 1},
		{Language: "Chinese", Conversations: 1, Identified: 1},
	}
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Languages, want) {
		t.Errorf("status languages %+v, want %+v", st.Languages, want)
	}
	// The stored conversation keeps the detector and its confidence.
	s, ok, err := l.Conversation(ctx, "b")
	if err != nil || !ok || s.Conv.LanguageDetector != "detector 1" || s.Conv.LanguageConfidence != 0.75 {
		t.Errorf("stored conversation b: %+v %v %v", s.Conv, ok, err)
	}
	l.Close()
	ro, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.Languages(ctx); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("read-only: %+v %v", got, err)
	}
}

// A run from before migration 0010 has no language sources: opened
// read-only (as status opens it) its languages count as the input's; a
// writer adds the column, and the old rows keep counting so.
func TestLanguagesOfARunFromBeforeTheirSource(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)`}
	for _, m := range all {
		if m.Name >= "0010" {
			break
		}
		stmts = append(stmts, m.SQL, fmt.Sprintf(`INSERT INTO schema_migrations VALUES ('%s', '')`, m.Name))
	}
	stmts = append(stmts,
		`INSERT INTO inputs (id, path, format, size, mtime_ns) VALUES (1, '/old.jsonl', 'wildchat', 1, 1)`,
		`INSERT INTO conversations (id, content_hash, input_id, source_line, source_row, format, user_turns, language, data) VALUES
			('a', 'h1', 1, 1, 0, 'wildchat', 1, 'English', x''), ('b', 'h2', 1, 2, 0, 'wildchat', 1, 'English', x''), ('c', 'h3', 1, 3, 0, 'openai', 1, '', x'')`,
		`PRAGMA journal_mode = WAL`,
	)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	want := []ledger.LanguageCount{{Language: "English", Conversations: 2}, {Language: "", Conversations: 1}}
	for _, readOnly := range []bool{true, false} {
		l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Languages(ctx)
		l.Close()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("read-only %v: %+v %v; want %+v", readOnly, got, err, want)
		}
	}
}
