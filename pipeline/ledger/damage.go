package ledger

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

// DamageSuffix names the note the ledger leaves beside a run file when it
// meets damage in it. Damage in pages a command never reads (a stage whose
// work is all recorded reads only counts) would otherwise go unnoticed by
// that command, and finding it up front means reading the whole file (see
// Check). With the note, the first command that meets the damage tells every
// later one: Open refuses the file, naming the damage, until `ac3 doctor`
// checks the file again and finds it sound.
const DamageSuffix = ".damaged"

// noteDamage leaves the damage note for err if err is a *DamagedError and no
// note exists yet: the first finding is the one kept. It is best effort (a
// read-only directory keeps no note); the error itself is returned anyway.
func noteDamage(path string, err error) {
	var de *DamagedError
	if !errors.As(err, &de) || de.fromNote {
		return
	}
	f, ferr := os.OpenFile(path+DamageSuffix, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if ferr != nil {
		return
	}
	defer f.Close()
	host, _ := os.Hostname()
	msg := strings.ReplaceAll(de.Err.Error(), "\n", " ")
	fmt.Fprintf(f, "%s\nfound by process %d on host %s at %s\n", msg, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
}

// damageNoted returns the damage note's error for the run at path, or nil
// when it has none.
func damageNoted(path string) error {
	b, err := os.ReadFile(path + DamageSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the run's damage note: %w", err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return &DamagedError{Path: path, fromNote: true, Err: fmt.Errorf("%s (found earlier and noted in %s; 'ac3 doctor --db %s' checks the whole file and copies what is readable into a new run)", first, path+DamageSuffix, path)}
}

// CheckResult is what Check found in a run file.
type CheckResult struct {
	OK       bool
	Problems []string // what is wrong, at most maxProblems lines
	// Summed: every page of the file carries a checksum, and each was
	// checked. False for a file made before ac3 kept them (any command
	// that writes the run adds them).
	Summed bool
	Pages  int64 // pages in the file
	// NoteCleared: the file had a damage note and the check found nothing
	// wrong, so the note was removed.
	NoteCleared bool
}

const maxProblems = 100

// Check looks at the whole run file at path, in three passes, each of
// which finds damage the others may not:
//
//   - its length against the page size and the page count in its header
//     (a file cut short, even by one byte, or missing its last pages);
//   - every page's checksum, read straight from the file (any byte that
//     changed since ac3 wrote it; this is what every command's reads check
//     page by page, see pagesum);
//   - SQLite's full integrity check through the checksum VFS (structures
//     that do not add up: an index row missing for a table row, pages
//     claimed twice).
//
// Time grows with the file (see BenchmarkCheck). It opens the file for
// reading only and takes no lock, so it can run beside a writer. When the
// file is sound it removes a damage note left earlier; when it is not, it
// leaves (or writes) one, so other commands refuse the file.
//
// It returns an error only when the check could not run; a damaged file is
// a CheckResult with OK false.
func Check(ctx context.Context, path string) (CheckResult, error) {
	var res CheckResult
	st, err := os.Stat(path)
	if err != nil {
		return res, fmt.Errorf("checking run %s: %w", path, err)
	}
	if err := checkHeader(path, false); err != nil {
		var de *DamagedError
		if errors.As(err, &de) {
			res.Problems = []string{de.Err.Error()}
			noteDamage(path, de)
			return res, nil
		}
		return res, err
	}
	scan, err := pagesum.ScanFile(ctx, path)
	if err != nil {
		return res, err
	}
	res.Summed, res.Pages = scan.Summed, scan.Pages
	res.Problems = append(res.Problems, lengthProblems(path, st.Size(), scan)...)
	if scan.BadCount > 0 {
		var pages []string
		for _, p := range scan.Bad {
			pages = append(pages, fmt.Sprint(p))
		}
		more := ""
		if scan.BadCount > int64(len(scan.Bad)) {
			more = fmt.Sprintf(" and %d more", scan.BadCount-int64(len(scan.Bad)))
		}
		res.Problems = append(res.Problems, fmt.Sprintf("%d of %d pages fail their checksum (their bytes changed after ac3 wrote them): page %s%s", scan.BadCount, scan.Pages, strings.Join(pages, ", "), more))
	}
	integrity, err := integrityCheck(ctx, path)
	if err != nil {
		return res, err
	}
	res.Problems = append(res.Problems, integrity...)
	if len(res.Problems) > maxProblems {
		res.Problems = res.Problems[:maxProblems]
	}
	if len(res.Problems) == 0 {
		res.OK = true
		if err := os.Remove(path + DamageSuffix); err == nil {
			res.NoteCleared = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return res, fmt.Errorf("removing the damage note of %s: %w", path, err)
		}
		return res, nil
	}
	noteDamage(path, &DamagedError{Path: path, Err: fmt.Errorf("check: %s", strings.Join(res.Problems[:min(3, len(res.Problems))], "; "))})
	return res, nil
}

// lengthProblems compares the file's length with its pages: a part page at
// the end, or fewer pages than the header counts, is a file cut short. The
// header's count is compared only when no write-ahead log holds pages (a
// writer's checkpoint writes page 1, with the new count, before the pages
// that grow the file) and when the header's "valid for" number says the
// count is current.
func lengthProblems(path string, size int64, scan pagesum.Scan) []string {
	var out []string
	if scan.Tail > 0 {
		out = append(out, fmt.Sprintf("the file is %d bytes long and ends %d bytes into page %d: it was cut short", size, scan.Tail, scan.Pages+1))
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return out
	}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return out
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	if pages > scan.Pages && binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96]) {
		out = append(out, fmt.Sprintf("its header counts %d pages but the file holds %d: it was cut short, %d pages are missing", pages, scan.Pages, pages-scan.Pages))
	}
	return out
}

// integrityCheck runs SQLite's full integrity check and returns its
// findings; none when the file is sound. A page that fails its checksum
// stops SQLite's check where it meets it, so that is one finding.
func integrityCheck(ctx context.Context, path string) ([]string, error) {
	db, err := openReader(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, fmt.Sprintf("PRAGMA integrity_check(%d)", maxProblems))
	if err != nil {
		if isDamage(err) {
			return []string{"SQLite's integrity check: " + classify(path, err).(*DamagedError).Err.Error()}, nil
		}
		return nil, fmt.Errorf("checking run %s: %w", path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			if isDamage(err) {
				problems = append(problems, "SQLite's integrity check: "+err.Error())
				break
			}
			return nil, fmt.Errorf("checking run %s: %w", path, err)
		}
		problems = append(problems, strings.Split(strings.TrimSpace(line), "\n")...)
	}
	if err := rows.Err(); err != nil {
		if !isDamage(err) {
			return nil, fmt.Errorf("checking run %s: %w", path, err)
		}
		problems = append(problems, "SQLite's integrity check: "+err.Error())
	}
	problems = nameTrees(ctx, db, problems)
	if len(problems) == 1 && problems[0] == "ok" {
		problems = nil
	}
	if len(problems) > 0 {
		return problems, nil
	}
	return foreignKeyCheck(ctx, db)
}

// foreignKeyCheck finds rows whose parent row is missing (a task of a
// conversation the run does not hold): the readers stop at those, so doctor
// must find them too. SQLite's integrity check does not look.
func foreignKeyCheck(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		if isDamage(err) {
			return []string{"SQLite's foreign key check: " + err.Error()}, nil
		}
		return nil, fmt.Errorf("checking references: %w", err)
	}
	defer rows.Close()
	orphans := map[[2]string]int{}
	var order [][2]string
	for rows.Next() {
		var table, parent string
		var rowid, fkid sql.NullInt64
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			return nil, fmt.Errorf("checking references: %w", err)
		}
		k := [2]string{table, parent}
		if orphans[k] == 0 {
			order = append(order, k)
		}
		orphans[k]++
	}
	if err := rows.Err(); err != nil {
		if isDamage(err) {
			return []string{"SQLite's foreign key check: " + err.Error()}, nil
		}
		return nil, fmt.Errorf("checking references: %w", err)
	}
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("%d rows of %s refer to rows of %s that the run does not hold", orphans[k], k[0], k[1]))
	}
	return out, nil
}

// openReader opens a read-only pool on path without the ledger's checks,
// for Check and Salvage, which must read a damaged file.
func openReader(path string) (*sql.DB, error) {
	if err := pagesum.Registered(); err != nil {
		return nil, fmt.Errorf("opening run %s: %w", path, err)
	}
	// Through the checksum VFS, so a page that fails its sum is an error
	// here too (the salvage steps over it as over any damaged page).
	// The pad parameter makes SQLite read a file shorter than its header
	// says, which it otherwise refuses whole: the pages that are there can
	// still be checked and copied.
	db, err := sql.Open("sqlite3", "file:"+escapePath(path)+"?_busy_timeout=30000&_query_only=true&mode=rw&vfs="+pagesum.VFS+"&"+pagesum.PadParam+"=1")
	if err != nil {
		return nil, fmt.Errorf("opening run %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// nameTrees drops SQLite's "*** in database main ***" heading and adds the
// table or index name to each "Tree N" (N is its root page), when the schema
// can still be read.
func nameTrees(ctx context.Context, db *sql.DB, problems []string) []string {
	names := map[string]string{}
	if rows, err := db.QueryContext(ctx, `SELECT rootpage, type, name FROM sqlite_master WHERE rootpage > 0`); err == nil {
		for rows.Next() {
			var root, typ, name string
			if rows.Scan(&root, &typ, &name) == nil {
				names["Tree "+root+" "] = "Tree " + root + " (" + typ + " " + name + ") "
			}
		}
		rows.Close()
	}
	out := problems[:0]
	for _, p := range problems {
		if strings.HasPrefix(p, "*** in database") {
			continue
		}
		for k, v := range names {
			if strings.HasPrefix(p, k) {
				p = v + strings.TrimPrefix(p, k)
				break
			}
		}
		out = append(out, p)
	}
	return out
}
