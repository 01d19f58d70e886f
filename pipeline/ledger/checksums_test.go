package ledger_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

func header(t *testing.T, path string) []byte {
	t.Helper()
	b := make([]byte, 100)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewRunHasPageChecksums(t *testing.T) {
	path := builtRun(t, 30)
	h := header(t, path)
	if h[20] != pagesum.Reserve || string(h[68:72]) != "ac3r" {
		t.Fatalf("header: reserve %d, application id %q; want %d and ac3r", h[20], h[68:72], pagesum.Reserve)
	}
	s, err := pagesum.ScanFile(context.Background(), path)
	if err != nil || !s.Summed || s.BadCount != 0 || s.Pages == 0 {
		t.Fatalf("scan of a new run: %+v, %v", s, err)
	}
}

// A run file made before the sums gets them from the first writer, keeps
// every row, and from then on a damaged page is an error.
func TestOlderRunGetsPageChecksums(t *testing.T) {
	ctx := context.Background()
	src := builtRun(t, 60)
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix")
	if err != nil {
		t.Fatal(err)
	}
	// VACUUM INTO keeps the reserve size, so copy table by table into a
	// file made without it, as every run before this version was.
	var tables []string
	func() {
		s, err := sql.Open("sqlite3", "file:"+src+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rows, err := s.Query(`SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type DESC`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var q string
			rows.Scan(&q)
			tables = append(tables, q)
		}
	}()
	stmts := append(tables, `ATTACH DATABASE 'file:`+src+`?mode=ro' AS src`)
	for _, tbl := range []string{"schema_migrations", "run_meta", "inputs", "conversations", "tasks", "units", "llm_cache", "llm_calls"} {
		stmts = append(stmts, `INSERT INTO main.`+tbl+` SELECT * FROM src.`+tbl)
	}
	stmts = append(stmts, `DETACH DATABASE src`, `PRAGMA journal_mode = WAL`)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	units := digest(t, db, `SELECT key, status, output FROM units ORDER BY key`)
	db.Close()
	if h := header(t, path); h[20] != 0 {
		t.Fatalf("the older run already reserves %d bytes", h[20])
	}

	// A reader says the file is unprotected and changes nothing.
	var note strings.Builder
	r, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true, Log: &note})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if !strings.Contains(note.String(), "before ac3 kept a checksum on every page") || header(t, path)[20] != 0 {
		t.Fatalf("reader of an older run: note %q, reserve %d", note.String(), header(t, path)[20])
	}

	var log strings.Builder
	l, err := ledger.Open(ctx, path, ledger.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if !strings.Contains(log.String(), "adding a checksum to every page") {
		t.Fatalf("no line before rewriting the file: %q", log.String())
	}
	if h := header(t, path); h[20] != pagesum.Reserve || string(h[68:72]) != "ac3r" {
		t.Fatalf("after the writer: reserve %d, id %q", h[20], h[68:72])
	}
	db, err = sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	if got := digest(t, db, `SELECT key, status, output FROM units ORDER BY key`); got != units {
		t.Fatal("units changed when the sums were added")
	}
	db.Close()
	s, err := pagesum.ScanFile(ctx, path)
	if err != nil || s.BadCount != 0 || !s.Summed {
		t.Fatalf("scan after the rewrite: %+v %v", s, err)
	}
	// The next writer has nothing to do and says nothing.
	log.Reset()
	l, err = ledger.Open(ctx, path, ledger.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if log.Len() != 0 {
		t.Fatalf("second writer printed %q", log.String())
	}
}

// One flipped byte in a unit's page, well inside a stored output where
// SQLite's own checks cannot see it, stops the read with ErrDamaged.
func TestFlippedByteInAUnitIsDamage(t *testing.T) {
	ctx := context.Background()
	path := builtRun(t, 200)
	pageSize, _, roots := layout(t, path)
	leaf := middleLeaf(t, path, pageSize, roots["units"])
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	off := (leaf-1)*pageSize + pageSize - 200 // cell content sits at the end of a page
	f.ReadAt(b, off)
	b[0] ^= 0x01
	f.WriteAt(b, off)
	f.Close()

	err = commandCalls["export"](ctx, path)
	if !errors.Is(err, ledger.ErrDamaged) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("reading the units of a run with a flipped byte: %v", err)
	}
	if _, err := os.Stat(path + ledger.DamageSuffix); err != nil {
		t.Fatalf("no damage note: %v", err)
	}
	res, err := ledger.Check(ctx, path)
	if err != nil || res.OK || !strings.Contains(strings.Join(res.Problems, "\n"), "fail their checksum") {
		t.Fatalf("check: %+v, %v", res, err)
	}
}

// The reserve byte turns the checks on, so it is the one byte of the file
// they cannot protect: the header's mark makes a change to it damage.
func TestReserveByteChangedIsDamage(t *testing.T) {
	ctx := context.Background()
	path := builtRun(t, 10)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0}, 20)
	f.Close()
	for _, ro := range []bool{true, false} {
		_, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: ro})
		if !errors.Is(err, ledger.ErrDamaged) || !strings.Contains(err.Error(), "reserves 0 bytes") {
			t.Fatalf("open (read-only %v) with the reserve byte cleared: %v", ro, err)
		}
	}
}

// A file cut short is never sound, by a byte or by whole pages.
func TestCheckFindsEveryCut(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		cut  func(size, page int64) int64
		want string
	}{
		{"one byte", func(size, page int64) int64 { return size - 1 }, "cut short"},
		{"the last ten pages", func(size, page int64) int64 { return size - 10*page }, "10 pages are missing"},
		{"half", func(size, page int64) int64 { return size / 2 / page * page }, "pages are missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := builtRun(t, 120)
			pageSize, _, _ := layout(t, path)
			st, _ := os.Stat(path)
			if err := os.Truncate(path, c.cut(st.Size(), pageSize)); err != nil {
				t.Fatal(err)
			}
			res, err := ledger.Check(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK || !strings.Contains(strings.Join(res.Problems, "\n"), c.want) {
				t.Fatalf("check of a file cut by %s: %+v", c.name, res)
			}
		})
	}
}

// A file cut short still gives up the records on the pages it kept: SQLite
// refuses such a file whole, so the salvage reads it as if padded.
func TestSalvageOfACutFileCopiesWhatIsThere(t *testing.T) {
	ctx := context.Background()
	path := builtRun(t, 200)
	pageSize, pages, _ := layout(t, path)
	if err := os.Truncate(path, (pages-pages/4)*pageSize); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "rec.db")
	rep, err := ledger.Salvage(ctx, path, dst)
	if err != nil {
		t.Fatal(err)
	}
	c := counts(rep)
	if c["settings"].Copied == 0 || c["conversations"].Copied == 0 || !rep.Lost() {
		t.Fatalf("salvage of a file missing its last quarter: %+v", rep)
	}
	res, err := ledger.Check(ctx, dst)
	if err != nil || !res.OK {
		t.Fatalf("the recovered run: %+v %v", res, err)
	}
}

// A damaged page of the table of tables is met while SQLite prepares the
// first statement, which reports it as a plain I/O error: it is still
// damage, for a reader and a writer alike.
func TestDamagedSchemaPageIsDamage(t *testing.T) {
	ctx := context.Background()
	for _, ro := range []bool{true, false} {
		path := builtRun(t, 10)
		pageSize, _, _ := layout(t, path)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Page 1's b-tree header follows the 100-byte file header; an
		// interior page names its right-most child at bytes 8-11 of it.
		p1 := make([]byte, 112)
		f.ReadAt(p1, 0)
		if p1[100] != 0x05 {
			f.Close()
			t.Skip("the table of tables fits in page 1, which the header check covers")
		}
		leaf := int64(binary.BigEndian.Uint32(p1[108:112]))
		b := make([]byte, 8)
		off := (leaf-1)*pageSize + pageSize/2
		f.ReadAt(b, off)
		for i := range b {
			b[i] ^= 0xa5
		}
		f.WriteAt(b, off)
		f.Close()
		if ro {
			err = commandCalls["status"](ctx, path)
		} else {
			err = commandCalls["curate"](ctx, path)
		}
		if !errors.Is(err, ledger.ErrDamaged) || !strings.Contains(err.Error(), "checksum") {
			t.Fatalf("read-only %v, a damaged page %d of the table of tables: %v", ro, leaf, err)
		}
	}
}
