package ledger

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"time"

	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

// Every run file keeps a checksum in the last bytes of each page
// (pipeline/ledger/pagesum), checked by SQLite's VFS on every page it reads.
// That is the ledger's answer to damage at rest: SQLite itself notices only
// damage that breaks its structures, and a flipped byte in a cell, a child
// pointer or an overflow chain can change what a query returns without an
// error. With the sums, a read of any damaged page is an error (ErrDamaged),
// so nothing read from it reaches an export, a report or a stage; pages no
// command reads cannot change an output.
//
// runFileID marks, in the header's application id (offset 68), a run file
// whose pages carry sums. The one header byte the sums cannot protect is the
// one that switches them on (the reserve size at offset 20): a file whose id
// says it has sums but whose reserve byte does not is damaged.
const runFileID = 0x61633372 // "ac3r"

// fcntlReserveBytes is SQLITE_FCNTL_RESERVE_BYTES: the bytes each page
// keeps free at its end, settable on an empty database or before a VACUUM.
const fcntlReserveBytes = 38

// summedHeader reports what a run file's header says about its sums: its
// reserve byte and its application id.
func summedHeader(h []byte) (reserve byte, marked bool) {
	return h[20], binary.BigEndian.Uint32(h[68:72]) == runFileID
}

// ensureChecksums gives the run file at path its page sums before the
// ledger's pools open it: a new file gets them before its first page is
// written; an older file is rewritten once with them (VACUUM), which takes
// time on a large run, so log is told first. The caller holds the writer
// lock.
func ensureChecksums(ctx context.Context, path string, log io.Writer) error {
	if err := pagesum.Registered(); err != nil {
		return fmt.Errorf("opening run %s: %w", path, err)
	}
	var size int64
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
		if headerSummed(path) {
			return nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("opening run %s: %w", path, err)
	}
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	q.Set("vfs", pagesum.VFS)
	db, err := sql.Open("sqlite3", "file:"+escapePath(path)+"?"+q.Encode()+"&mode=rwc")
	if err != nil {
		return fmt.Errorf("opening run %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return classify(path, fmt.Errorf("opening run %s: %w", path, err))
	}
	defer conn.Close()
	var reserve int
	if err := conn.Raw(setReserve); err != nil {
		return classify(path, fmt.Errorf("giving run %s page checksums: %w", path, err))
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&reserve); err != nil {
		return classify(path, fmt.Errorf("giving run %s page checksums: %w", path, err))
	}
	start := time.Now()
	if reserve > 0 && log != nil {
		fmt.Fprintf(log, "run %s: adding a checksum to every page, so damage to the file can never pass unnoticed (once, for this version of ac3; it rewrites the file, %.1f GB: about half a minute per GB)\n", path, float64(size)/1e9)
	}
	for _, stmt := range []string{
		fmt.Sprintf("PRAGMA application_id = %d", runFileID),
		// VACUUM rewrites every page with the new reserve size; on a new,
		// empty file it only writes the header.
		"VACUUM",
		// Leave no page in the log: the pools open the file afresh.
		"PRAGMA wal_checkpoint(TRUNCATE)",
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return classify(path, fmt.Errorf("giving run %s page checksums: %s: %w", path, stmt, err))
		}
	}
	if reserve > 0 && log != nil {
		fmt.Fprintf(log, "run %s: every page has its checksum (%s)\n", path, time.Since(start).Round(time.Second))
	}
	return nil
}

// headerSummed reports whether the run file at path says its pages carry
// sums; false too when its header cannot be read (Open's own checks say
// why).
func headerSummed(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	h := make([]byte, 100)
	if _, err := io.ReadFull(f, h); err != nil {
		return false
	}
	reserve, marked := summedHeader(h)
	return marked && reserve == pagesum.Reserve
}

// Inconsistent reports that what a reader read from the run does not add up
// (a unit whose conversation is missing, fewer units than the run's counts
// say are done): the run file is damaged as far as any command can tell, so
// it is a *DamagedError, noted beside the file like any other, and the
// command stops with exit status 5 instead of writing a smaller output.
// Page checksums make this rare; it is the last line for what they cannot
// see (a run file made before them, a bug).
func (l *Ledger) Inconsistent(err error) error {
	de := &DamagedError{Path: l.path, Err: fmt.Errorf("what was read does not add up: %w", err)}
	noteDamage(l.path, de)
	return de
}

// CheckUnitsRead compares the done units of stage's variants a reader saw
// with the run's own count of them (from another index than the one the
// units are read through), and reports a mismatch as Inconsistent.
func (l *Ledger) CheckUnitsRead(ctx context.Context, stage string, variants []Variant, seen int64) (err error) {
	defer l.classify(&err)
	var want int64
	for _, v := range variants {
		done, _, err := l.unitCountsIn(ctx, split{all: true}, stage, v)
		if err != nil {
			return err
		}
		want += done
	}
	if seen != want {
		return l.Inconsistent(fmt.Errorf("%d done %s units were read, but the run counts %d", seen, stage, want))
	}
	return nil
}
