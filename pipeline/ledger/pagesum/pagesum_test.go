package pagesum_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

const pageSize = 4096

// newDB makes a WAL database at path with rows rows of text, reserving the
// sum's bytes when summed, and closes it (which checkpoints the log into the
// file).
func newDB(t *testing.T, path string, summed bool, rows int) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+path+"?vfs="+pagesum.VFS)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if summed {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Raw(func(dc any) error {
			return dc.(*sqlite3.SQLiteConn).SetFileControlInt("main", 38, pagesum.Reserve) // SQLITE_FCNTL_RESERVE_BYTES
		}); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	for _, q := range []string{"VACUUM", "PRAGMA journal_mode=WAL", "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rows; i++ {
		if _, err := tx.Exec("INSERT INTO t (v) VALUES (?)", fmt.Sprintf("row %d %s", i, strings.Repeat("x", 200))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every row of t and returns how many there were.
func readAll(path string) (int, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?vfs="+pagesum.VFS+"&mode=ro")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRow("SELECT count(*) FROM t WHERE v LIKE 'row %'").Scan(&n)
	return n, err
}

func flip(t *testing.T, path string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0x5a
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func isChecksumErr(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && int(se.ExtendedCode) == pagesum.ExtendedCode
}

func TestRegistered(t *testing.T) {
	if err := pagesum.Registered(); err != nil {
		t.Fatal(err)
	}
}

func TestSummedFileReadsBackAndScansClean(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	newDB(t, path, true, 500)
	n, err := readAll(path)
	if err != nil || n != 500 {
		t.Fatalf("read %d rows, err %v; want 500", n, err)
	}
	s, err := pagesum.ScanFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Summed || s.BadCount != 0 || s.Tail != 0 || s.Pages < 20 {
		t.Fatalf("scan of a sound file: %+v", s)
	}
}

// Every kind of damage a page can take is an error from the query that
// reads it, and ScanFile names the page.
func TestDamagedPagesFailTheirReads(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(t *testing.T, path string)
		badPage int64 // 0: not a page of its own (a cut)
	}{
		{"a flipped byte in a data page", func(t *testing.T, p string) { flip(t, p, 5*pageSize+1000, 1) }, 6},
		{"64 flipped bytes", func(t *testing.T, p string) { flip(t, p, 9*pageSize+2000, 64) }, 10},
		{"a flipped byte in the sum itself", func(t *testing.T, p string) { flip(t, p, 8*pageSize-3, 1) }, 8},
		{"the first page's header", func(t *testing.T, p string) { flip(t, p, 40, 4) }, 1},
		{"a page copied over another", func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			copy(b[11*pageSize:12*pageSize], b[12*pageSize:13*pageSize])
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, 12},
		{"a zeroed page", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, pageSize), 7*pageSize); err != nil {
				t.Fatal(err)
			}
		}, 8},
		{"the last page cut short by a byte", func(t *testing.T, p string) {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, st.Size()-1); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			newDB(t, path, true, 500)
			c.damage(t, path)
			n, err := readAll(path)
			if err == nil {
				t.Fatalf("read %d rows from a damaged file without an error", n)
			}
			if !isChecksumErr(err) {
				t.Fatalf("error is not the checksum's: %v", err)
			}
			if !pagesum.Faulted(path) {
				t.Fatal("the fault was not noted for its file")
			}
			s, err := pagesum.ScanFile(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if c.badPage == 0 {
				if s.Tail == 0 {
					t.Fatalf("scan missed the cut: %+v", s)
				}
				return
			}
			if s.BadCount != 1 || s.Bad[0] != c.badPage {
				t.Fatalf("scan found bad pages %v (%d), want [%d]", s.Bad, s.BadCount, c.badPage)
			}
		})
	}
}

// A file without the reserved bytes is SQLite's as ever: the shim neither
// writes nor checks anything in it.
func TestUnsummedFilePassesThrough(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	newDB(t, path, false, 500)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b[20] != 0 {
		t.Fatalf("reserve byte is %d, want 0", b[20])
	}
	// The end of the last data page: with no reserve it is cell content,
	// so a flip there is SQLite's to find or not, never a checksum error.
	flip(t, path, 6*pageSize-1, 1)
	if _, err := readAll(path); isChecksumErr(err) {
		t.Fatalf("checksum error on a file without sums: %v", err)
	}
	if pagesum.Faulted(path) {
		t.Fatal("a file without sums is noted as faulted")
	}
	s, err := pagesum.ScanFile(context.Background(), path)
	if err != nil || s.Summed {
		t.Fatalf("scan of an unsummed file: %+v, %v", s, err)
	}
}

func TestSealAndPageOK(t *testing.T) {
	page := make([]byte, pageSize)
	for i := range page {
		page[i] = byte(i * 7)
	}
	pagesum.Seal(page, 3)
	if !pagesum.PageOK(page, 3) {
		t.Fatal("a sealed page fails")
	}
	if pagesum.PageOK(page, 4) {
		t.Fatal("a page passes at another page number")
	}
	for _, off := range []int{0, 100, pageSize - 9, pageSize - 1} {
		page[off] ^= 1
		if pagesum.PageOK(page, 3) {
			t.Fatalf("a bit flipped at %d passes", off)
		}
		page[off] ^= 1
	}
	// The sum must not cancel out when two top bits flip a few words apart.
	page[7] ^= 0x80
	page[23] ^= 0x80
	if pagesum.PageOK(page, 3) {
		t.Fatal("two top-bit flips cancel")
	}
	if pagesum.PageOK(make([]byte, pageSize), 1) {
		t.Fatal("an all-zero page passes")
	}
}

func FuzzPageOK(f *testing.F) {
	f.Add(uint16(0), byte(1), uint16(0), byte(0))
	f.Fuzz(func(t *testing.T, off1 uint16, x1 byte, off2 uint16, x2 byte) {
		page := make([]byte, 1024)
		for i := range page {
			page[i] = byte(i*31 + 7)
		}
		pagesum.Seal(page, 9)
		page[int(off1)%len(page)] ^= x1
		page[int(off2)%len(page)] ^= x2
		changed := false
		ref := make([]byte, 1024)
		for i := range ref {
			ref[i] = byte(i*31 + 7)
		}
		pagesum.Seal(ref, 9)
		for i := range page {
			if page[i] != ref[i] {
				changed = true
			}
		}
		if pagesum.PageOK(page, 9) == changed {
			t.Fatalf("page changed=%v but PageOK=%v", changed, !changed)
		}
	})
}

// BenchmarkPageSum is the cost the sums add to every page SQLite reads or
// writes: one pass of the hash over a 4 KiB page.
func BenchmarkPageSum(b *testing.B) {
	page := make([]byte, pageSize)
	for i := range page {
		page[i] = byte(i * 13)
	}
	pagesum.Seal(page, 7)
	b.SetBytes(pageSize)
	for b.Loop() {
		if !pagesum.PageOK(page, 7) {
			b.Fatal("sealed page fails")
		}
	}
}
