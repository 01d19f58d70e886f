package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	_ "github.com/mattn/go-sqlite3" // registers the sqlite3 driver

	"github.com/ac3/ac3/migrations"
	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

// ErrNotRun is returned by Open with ReadOnly when the file is not a ledger.
var ErrNotRun = errors.New("not an ac3 run file")

// Ledger is an open run file. Its methods are safe for concurrent use; writes
// are serialised on one connection.
//
// Errors from every method are classified: damage to the file matches
// ErrDamaged (a *DamagedError) and a full disk ErrDiskFull (a *DiskFullError),
// whichever query met them.
type Ledger struct {
	path string
	w    *sql.DB // the single writer
	r    *sql.DB // readers
	lock *writerLock
	// hasReasons: the file has migration 0003 (units.reason and the
	// status indexes). False only for an older run opened read-only.
	hasReasons bool
	// hasOrigins: the file has migration 0004 (conversations.origin and
	// parent_seq). False only for an older run opened read-only, whose
	// conversations are then all ingested ones.
	hasOrigins bool
	// hasShard: the file has migration 0007 (the shard table). False only
	// for an older run opened read-only, which is no shard.
	hasShard bool
	// hasLangSource: the file has migration 0010 (conversations.
	// language_source and its index). False only for an older run opened
	// read-only, whose languages all came from the input.
	hasLangSource bool
	// hasUnitsByConv: the file has migration 0006 (the units_by_conversation
	// index), which BrowsePage names. False only for an older run opened
	// read-only.
	hasUnitsByConv bool

	// spend is the run's model spend, summed from llm_calls once and then
	// kept current by the recorder, so progress lines can show dollars after
	// every commit without re-summing millions of call rows.
	spendMu    sync.Mutex
	spend      float64
	spendKnown bool

	// group commits cached answers and call rows together (groupCommit).
	group groupCommit

	// wal notices the write-ahead log removed under a writer (checkWAL).
	wal walWatch

	closeOnce sync.Once
	closeErr  error
}

// Options tune how a ledger is opened.
type Options struct {
	// ReadOnly opens an existing run without creating or migrating it, and
	// without the writer lock, so it works while another process writes.
	ReadOnly bool
	// Log, if set, is told in one line before a migration that rewrites
	// whole tables of an existing run (minutes on a large run), so the
	// wait is not taken for a hang.
	Log io.Writer
}

// Open opens the run file at path, creating it and applying any pending
// migrations unless opts.ReadOnly is set.
//
// A writer (ReadOnly unset) first takes the run's writer lock, before the
// file is created or migrated, and holds it until Close: while it is held,
// another writer's Open fails at once with a *LockedError (ErrLocked) naming
// the holder's PID and host. Both kinds of open check the file's header
// first and fail with a *DamagedError (ErrDamaged) if it is not a sound
// SQLite file; the check reads one page and does not scan the file (see
// Check for that). They also fail with ErrDamaged when an earlier command
// met damage in the file and left a note (see DamageSuffix).
func Open(ctx context.Context, path string, opts Options) (_ *Ledger, err error) {
	var lock *writerLock
	if !opts.ReadOnly {
		// A writer creates the run's folder, as it creates the run file;
		// the lock file beside it needs the folder first.
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("creating the folder of run %s: %w", path, err)
		}
		if lock, err = lockRun(path); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				lock.release()
			}
		}()
	}
	if err := damageNoted(path); err != nil {
		return nil, err
	}
	if err := checkHeader(path, lock != nil); err != nil {
		return nil, err
	}
	// Damage SQLite reports while opening is noted like any other.
	defer func() { noteDamage(path, err) }()
	if err := pagesum.Registered(); err != nil {
		return nil, fmt.Errorf("opening run %s: %w", path, err)
	}
	if lock != nil {
		if err := ensureChecksums(context.WithoutCancel(ctx), path, opts.Log); err != nil {
			return nil, err
		}
	}
	// Per-connection settings go in the DSN: a PRAGMA sent through Exec would
	// reach only one connection of the pool.
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	q.Set("_foreign_keys", "on")
	// NORMAL in WAL mode survives a killed process (the WAL is on disk); only
	// a power cut can lose the last commits, which resume then redoes.
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	q.Set("_journal_mode", "WAL")
	q.Set("cache", "private")
	q.Set("vfs", pagesum.VFS)
	mode := "rwc"
	if opts.ReadOnly {
		mode = "rw" // still rw: WAL readers must be able to use the shm file
	}
	wdsn := "file:" + escapePath(path) + "?" + q.Encode() + "&mode=" + mode
	w, err := sql.Open("sqlite3", wdsn)
	if err != nil {
		return nil, fmt.Errorf("opening run %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	var jm string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&jm); err != nil {
		w.Close()
		return nil, classify(path, fmt.Errorf("opening run %s: %w", path, err))
	}
	if !strings.EqualFold(jm, "wal") {
		w.Close()
		return nil, fmt.Errorf("opening run %s: journal mode is %q, want wal (is the file on a network filesystem?)", path, jm)
	}
	rq := url.Values{}
	rq.Set("_busy_timeout", "30000")
	rq.Set("_foreign_keys", "on")
	rq.Set("_query_only", "true")
	rq.Set("vfs", pagesum.VFS)
	r, err := sql.Open("sqlite3", "file:"+escapePath(path)+"?"+rq.Encode()+"&mode=rw")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("opening run %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	l := &Ledger{path: path, w: w, r: r, lock: lock}
	l.group.l = l
	if opts.ReadOnly {
		if !headerSummed(path) && opts.Log != nil {
			fmt.Fprintf(opts.Log, "note: run %s was made before ac3 kept a checksum on every page, so a damaged byte inside it can pass unnoticed; any command that writes the run (e.g. 'ac3 run' again) adds them, once\n", path)
		}
		var n int
		if err := r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'").Scan(&n); err != nil || n == 0 {
			l.closeDBs()
			if err != nil {
				return nil, classify(path, fmt.Errorf("opening run %s: %w", path, err))
			}
			return nil, fmt.Errorf("opening run %s: %w", path, ErrNotRun)
		}
		for _, m := range []struct {
			name string
			has  *bool
		}{{reasonsMigration, &l.hasReasons}, {originsMigration, &l.hasOrigins}, {shardMigration, &l.hasShard}, {langSourceMigration, &l.hasLangSource}, {unitsByConvMigration, &l.hasUnitsByConv}} {
			if err := r.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE name = ?", m.name).Scan(&n); err != nil {
				l.closeDBs()
				return nil, classify(path, fmt.Errorf("opening run %s: %w", path, err))
			}
			*m.has = n > 0
		}
		return l, nil
	}
	// Finished even if the command is cancelled meanwhile (a second Ctrl-C
	// just after start): a half-made schema would leave readers a run file
	// without its tables. Most migrations take milliseconds; one that
	// rewrites tables says so first (see rewrites).
	if err := l.migrate(context.WithoutCancel(ctx), opts.Log); err != nil {
		l.closeDBs()
		return nil, classify(path, fmt.Errorf("migrating run %s: %w", path, err))
	}
	l.hasReasons, l.hasOrigins, l.hasShard, l.hasLangSource, l.hasUnitsByConv = true, true, true, true, true
	if err := l.backfillReasons(ctx); err != nil {
		l.closeDBs()
		return nil, classify(path, fmt.Errorf("migrating run %s: %w", path, err))
	}
	if err := l.checkWAL(ctx); err != nil {
		l.closeDBs()
		return nil, err
	}
	return l, nil
}

// reasonsMigration added units.reason and the indexes Progress reads.
const reasonsMigration = "0003_unit_status.sql"

// originsMigration added conversations.origin and parent_seq (AddDerived).
const originsMigration = "0004_derived.sql"

// shardMigration added the shard table (ShardInfo).
const shardMigration = "0007_shard.sql"

// unitsByConvMigration adds the units_by_conversation index.
const unitsByConvMigration = "0006_units_by_conversation.sql"

// langSourceMigration added conversations.language_source (Languages).
const langSourceMigration = "0010_language_source.sql"

func escapePath(p string) string {
	// '?' and '#' would end the file part of a URI.
	return strings.NewReplacer("?", "%3f", "#", "%23").Replace(p)
}

// Path is the run file's path.
func (l *Ledger) Path() string { return l.path }

// Close closes both connection pools and then releases the writer lock, so
// the next writer finds the file checkpointed. Closing twice is harmless.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = errors.Join(l.closeDBs(), l.lock.release())
	})
	return l.closeErr
}

func (l *Ledger) closeDBs() error {
	return errors.Join(l.r.Close(), l.w.Close())
}

// rewrites says whether migration name copies whole tables, which table's
// rows make that slow, and what the line before it says.
func rewrites(name string) (table, what string, ok bool) {
	switch name {
	case appendOrderMigration:
		return "units", "storing its units and cached answers in the order they are written (once, for this version of ac3; about half a minute per million units)", true
	}
	return "", "", false
}

// appendOrderMigration stores units and cached answers as rowid tables.
const appendOrderMigration = "0008_append_order.sql"

func (l *Ledger) migrate(ctx context.Context, log io.Writer) error {
	if _, err := l.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)`); err != nil {
		return err
	}
	all, err := migrations.All()
	if err != nil {
		return err
	}
	for _, m := range all {
		if err := l.apply(ctx, m, log); err != nil {
			return fmt.Errorf("applying %s: %w", m.Name, err)
		}
	}
	return nil
}

func (l *Ledger) apply(ctx context.Context, m migrations.Migration, log io.Writer) error {
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE name = ?`, m.Name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if table, what, ok := rewrites(m.Name); ok && log != nil {
		var rows bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+`)`).Scan(&rows); err != nil {
			return err
		}
		if rows {
			fmt.Fprintf(log, "run %s: %s\n", l.path, what)
		}
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied) VALUES (?, datetime('now'))`, m.Name); err != nil {
		return err
	}
	return tx.Commit()
}

// Meta returns a run setting, reporting false when it was never set.
func (l *Ledger) Meta(ctx context.Context, key string) (_ string, _ bool, err error) {
	defer l.classify(&err)
	var v string
	err = l.r.QueryRowContext(ctx, `SELECT value FROM run_meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading run setting %s: %w", key, err)
	}
	return v, true, nil
}

// DeleteMeta removes run settings, in one transaction (a key that is not
// set is no error).
func (l *Ledger) DeleteMeta(ctx context.Context, keys ...string) (err error) {
	defer l.classify(&err)
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_meta WHERE key = ?`, k); err != nil {
			return fmt.Errorf("removing run setting %s: %w", k, err)
		}
	}
	return tx.Commit()
}

// SetMeta stores a run setting.
func (l *Ledger) SetMeta(ctx context.Context, key, value string) (err error) {
	defer l.classify(&err)
	_, err = l.w.ExecContext(ctx, `INSERT INTO run_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("storing run setting %s: %w", key, err)
	}
	return nil
}
