package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
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

// CheckResult is what SQLite's integrity check found in a run file.
type CheckResult struct {
	OK       bool
	Problems []string // SQLite's own lines, at most maxProblems
	// NoteCleared: the file had a damage note and the check found nothing
	// wrong, so the note was removed.
	NoteCleared bool
}

const maxProblems = 100

// Check runs SQLite's full integrity check on the run file at path, which
// reads every page (time grows with the file: see BenchmarkCheck). It opens
// the file for reading only and takes no lock, so it can run beside a
// writer. When the file is sound it removes a damage note left earlier; when
// it is not, it leaves (or writes) one, so other commands refuse the file.
//
// It returns an error only when the check could not run; a damaged file is a
// CheckResult with OK false.
func Check(ctx context.Context, path string) (CheckResult, error) {
	var res CheckResult
	if _, err := os.Stat(path); err != nil {
		return res, fmt.Errorf("checking run %s: %w", path, err)
	}
	if err := checkHeader(path, false); err != nil {
		var de *DamagedError
		if errors.As(err, &de) {
			res.Problems = []string{de.Err.Error()}
			return res, nil
		}
		return res, err
	}
	db, err := openReader(path)
	if err != nil {
		return res, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, fmt.Sprintf("PRAGMA integrity_check(%d)", maxProblems))
	if err != nil {
		if isDamage(err) {
			res.Problems = []string{err.Error()}
			noteDamage(path, &DamagedError{Path: path, Err: err})
			return res, nil
		}
		return res, fmt.Errorf("checking run %s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return res, fmt.Errorf("checking run %s: %w", path, err)
		}
		res.Problems = append(res.Problems, strings.Split(strings.TrimSpace(line), "\n")...)
	}
	if err := rows.Err(); err != nil {
		if !isDamage(err) {
			return res, fmt.Errorf("checking run %s: %w", path, err)
		}
		res.Problems = append(res.Problems, err.Error())
	}
	res.Problems = nameTrees(ctx, db, res.Problems)
	if len(res.Problems) == 1 && res.Problems[0] == "ok" {
		res.Problems, res.OK = nil, true
		if err := os.Remove(path + DamageSuffix); err == nil {
			res.NoteCleared = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return res, fmt.Errorf("removing the damage note of %s: %w", path, err)
		}
		return res, nil
	}
	noteDamage(path, &DamagedError{Path: path, Err: fmt.Errorf("integrity check: %s", strings.Join(res.Problems[:min(3, len(res.Problems))], "; "))})
	return res, nil
}

// openReader opens a read-only pool on path without the ledger's checks,
// for Check and Salvage, which must read a damaged file.
func openReader(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", "file:"+escapePath(path)+"?_busy_timeout=30000&_query_only=true&mode=rw")
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
