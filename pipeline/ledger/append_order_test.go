package ledger_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/migrations"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
)

// appendOrderMigration rebuilt units and llm_cache as rowid tables.
const appendOrderMigration = "0008_append_order.sql"

// A run written before migration 0008 (units and cached answers clustered
// on their hash) keeps every unit and answer, byte for byte, once a writer
// opens it; its tables are then in insertion order, and a unit recorded
// again still replaces the old row rather than adding one.
func TestAppendOrderMigration(t *testing.T) {
	ctx := context.Background()
	src := builtRun(t, 120)
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
		if m.Name >= appendOrderMigration {
			break
		}
		stmts = append(stmts, m.SQL, fmt.Sprintf(`INSERT INTO schema_migrations VALUES ('%s', '')`, m.Name))
	}
	stmts = append(stmts,
		fmt.Sprintf(`ATTACH DATABASE 'file:%s?mode=ro' AS src`, src),
		`INSERT INTO run_meta SELECT * FROM src.run_meta`,
		`INSERT INTO inputs SELECT * FROM src.inputs`,
		`INSERT INTO conversations SELECT seq, id, content_hash, input_id, source_line, source_row, format, user_turns, language, data, origin, parent_seq FROM src.conversations`,
		`INSERT INTO tasks SELECT * FROM src.tasks`,
		`INSERT INTO units (key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason)
			SELECT key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason FROM src.units`,
		`INSERT INTO llm_cache (key, response, created) SELECT key, response, created FROM src.llm_cache`,
		`INSERT INTO llm_calls SELECT * FROM src.llm_calls`,
		`DETACH DATABASE src`,
		`PRAGMA journal_mode = WAL`,
	)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	clustered := func() []string {
		var names []string
		rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('units', 'llm_cache') AND sql LIKE '%WITHOUT ROWID%' ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
		}
		return names
	}
	if got := clustered(); strings.Join(got, ",") != "llm_cache,units" {
		t.Fatalf("the older run's clustered tables: %v", got)
	}
	units := digest(t, db, `SELECT key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason FROM units ORDER BY key`)
	answers := digest(t, db, `SELECT key, response, created FROM llm_cache ORDER BY key`)
	var nUnits, nAnswers int
	db.QueryRow(`SELECT count(*) FROM units`).Scan(&nUnits)
	db.QueryRow(`SELECT count(*) FROM llm_cache`).Scan(&nAnswers)
	if nUnits == 0 || nAnswers == 0 {
		t.Fatalf("the older run holds %d units and %d answers; the test needs both", nUnits, nAnswers)
	}
	var aKey string
	if err := db.QueryRow(`SELECT key FROM llm_cache ORDER BY key LIMIT 1`).Scan(&aKey); err != nil {
		t.Fatal(err)
	}

	var log strings.Builder
	l, err := ledger.Open(ctx, path, ledger.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The rewrite takes minutes on a large run: the user is told first.
	if !strings.Contains(log.String(), "units and cached answers in the order they are written") {
		t.Fatalf("no line before rewriting the tables: %q", log.String())
	}
	if got := clustered(); len(got) != 0 {
		t.Fatalf("still clustered on a hash after migrating: %v", got)
	}
	if got := digest(t, db, `SELECT key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason FROM units ORDER BY key`); got != units {
		t.Fatal("units changed in the migration")
	}
	if got := digest(t, db, `SELECT key, response, created FROM llm_cache ORDER BY key`); got != answers {
		t.Fatal("cached answers changed in the migration")
	}
	if _, ok, err := l.LLMCache().Get(ctx, aKey); !ok || err != nil {
		t.Fatalf("a migrated answer is not found by its key: %v %v", ok, err)
	}

	// Recording a unit again (a retry of a failed task) replaces it.
	var seq int64
	var conv string
	if err := db.QueryRow(`SELECT conv_seq, conversation_id FROM units WHERE status = 'failed' ORDER BY conv_seq LIMIT 1`).Scan(&seq, &conv); err != nil {
		t.Fatal(err)
	}
	tr := ledger.TaskResult{TaskID: ledger.TaskID{Stage: "curate", Variant: "ao", Version: "v1", ConvSeq: seq}, ConvID: conv, Status: ledger.Done, Attempts: 2}
	for turn := 1; turn <= 3; turn++ {
		tr.Units = append(tr.Units, ledger.UnitResult{Turn: turn, Status: ledger.Done, Attempts: 1, Output: []byte("again")})
	}
	if err := l.CommitTasks(ctx, []ledger.TaskResult{tr}); err != nil {
		t.Fatal(err)
	}
	var n, again int
	db.QueryRow(`SELECT count(*), coalesce(sum(output = CAST('again' AS BLOB)), 0) FROM units`).Scan(&n, &again)
	if n != nUnits || again != 3 {
		t.Fatalf("after recording a task's 3 units again: %d units (want %d), %d of them new (want 3)", n, nUnits, again)
	}
	var key string
	if err := db.QueryRow(`SELECT key FROM units WHERE conv_seq = ? AND variant = 'ao' AND turn = 2`, seq).Scan(&key); err != nil || key != ledger.UnitKey("curate", conv, 2, "ao", "v1") {
		t.Fatalf("the unit recorded again has key %q (%v), want its hash", key, err)
	}
	// A cached answer stored again under its key replaces it too.
	if err := l.LLMCache().Put(ctx, aKey, llm.CachedResponse{Text: "again", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	var cached int
	db.QueryRow(`SELECT count(*) FROM llm_cache`).Scan(&cached)
	if cached != nAnswers {
		t.Fatalf("after storing an answer again: %d answers, want %d", cached, nAnswers)
	}
}

// A new run has nothing to rewrite and says nothing.
func TestNewRunMigratesQuietly(t *testing.T) {
	var log strings.Builder
	l, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "run.db"), ledger.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if log.Len() != 0 {
		t.Fatalf("a new run printed %q", log.String())
	}
}

// digest hashes every row a query returns, in order.
func digest(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	h := sha256.New()
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			fmt.Fprintf(h, "%T:%v|", v, v)
		}
		h.Write([]byte{'\n'})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
