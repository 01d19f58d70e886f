package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// MergeOptions tune Merge.
type MergeOptions struct {
	// Force replaces an existing output file.
	Force bool
}

// MergeReport says what Merge built.
type MergeReport struct {
	Shards                      int
	Conversations, Units, Calls int64
	// CrossDuplicates counts conversations dropped as exact duplicates of a
	// conversation of another shard that comes first in input order (with
	// dedupe on, ingest can only see duplicates within its own shard).
	// Their model calls stay in the spend.
	CrossDuplicates int64
}

// metaPerRun are run_meta keys that name one run file rather than what it
// holds; the merged run keeps shard 0's.
var metaPerRun = map[string]bool{"run.id": true}

// Merge builds one run file at out from the run files of every shard of a
// sharded run, as if one process had done all the work: conversations are
// numbered in input order (not in each shard's order), quarantined records
// and model calls renumbered in a stable order, counts added up.
//
// It refuses, before writing anything at out: an existing out (unless
// opts.Force), a file that is not a shard or is damaged, shards of different
// counts or hash schemes, a missing or repeated shard index, shards whose
// steps ran with different settings or stage versions, shards that read
// different inputs or hold live batches. The run is built in a temporary
// file beside out and renamed into place once complete.
func Merge(ctx context.Context, out string, shards []string, opts MergeOptions) (MergeReport, error) {
	rep := MergeReport{Shards: len(shards)}
	if len(shards) == 0 {
		return rep, errors.New("merge: no shard files")
	}
	if _, err := os.Stat(out); err == nil && !opts.Force {
		return rep, fmt.Errorf("merge: %s exists; pass --force to replace it", out)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("merge: %w", err)
	}
	// No shard may be written while it is read: a shard still running would
	// be merged half done.
	locked := map[string]bool{}
	for _, p := range shards {
		if _, err := os.Stat(p); err != nil {
			return rep, fmt.Errorf("merge: %w", err)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return rep, fmt.Errorf("merge: %w", err)
		}
		if locked[abs] {
			continue // named twice: checkShards says so
		}
		locked[abs] = true
		lk, err := lockRun(p)
		if err != nil {
			return rep, fmt.Errorf("merge: %w", err)
		}
		defer lk.release()
	}
	ordered, err := checkShards(ctx, shards)
	if err != nil {
		return rep, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return rep, fmt.Errorf("merge: creating the folder of %s: %w", out, err)
	}
	var outLock *writerLock
	if _, err := os.Stat(out); err == nil {
		// Replacing a run: no process may be writing it meanwhile.
		if outLock, err = lockRun(out); err != nil {
			return rep, err
		}
		defer outLock.release()
	}
	tmp := fmt.Sprintf("%s.merging-%d", out, os.Getpid())
	removeRun(tmp)
	err = buildMerged(ctx, tmp, ordered, &rep)
	if err == nil {
		for _, suffix := range []string{"-wal", "-shm", DamageSuffix} {
			if rerr := os.Remove(out + suffix); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = fmt.Errorf("merge: removing the old %s: %w", out+suffix, rerr)
			}
		}
	}
	if err == nil {
		if rerr := os.Rename(tmp, out); rerr != nil {
			err = fmt.Errorf("merge: moving the merged run into place: %w", rerr)
		}
	}
	removeRun(tmp)
	return rep, err
}

// removeRun removes a run file and its sidecars.
func removeRun(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", LockSuffix, DamageSuffix} {
		os.Remove(path + suffix)
	}
}

// shardFile is one checked shard.
type shardFile struct {
	path  string
	info  ShardInfo
	steps map[string]string
}

// checkShards opens every shard read-only, checks that they belong
// together, and returns them in shard order.
func checkShards(ctx context.Context, paths []string) ([]shardFile, error) {
	var files []shardFile
	facts := make([]shardFacts, 0, len(paths))
	for _, p := range paths {
		f, sf, err := readShard(ctx, p)
		if err != nil {
			return nil, err
		}
		files, facts = append(files, f), append(facts, sf)
	}
	first := files[0]
	byIndex := map[int]string{}
	for i, f := range files {
		switch {
		case f.info.Count != first.info.Count:
			return nil, fmt.Errorf("merge: %s is shard %d/%d but %s is shard %d/%d: the shards come from runs split differently", f.path, f.info.Index, f.info.Count, first.path, first.info.Index, first.info.Count)
		case f.info.Scheme != first.info.Scheme:
			return nil, fmt.Errorf("merge: %s assigns conversations by %q but %s by %q", f.path, f.info.Scheme, first.path, first.info.Scheme)
		}
		if other, dup := byIndex[f.info.Index]; dup {
			return nil, fmt.Errorf("merge: %s and %s are both shard %d/%d", other, f.path, f.info.Index, f.info.Count)
		}
		byIndex[f.info.Index] = f.path
		if err := sameSteps(first, f); err != nil {
			return nil, err
		}
		if err := facts[0].same(facts[i], first.path, f.path); err != nil {
			return nil, err
		}
	}
	var missing []string
	for i := 0; i < first.info.Count; i++ {
		if _, ok := byIndex[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.info.Count))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: missing shard %s: pass the run file of every shard", strings.Join(missing, ", "))
	}
	sort.Slice(files, func(a, b int) bool { return files[a].info.Index < files[b].info.Index })
	return files, nil
}

func sameSteps(a, b shardFile) error {
	for _, s := range unionKeys(a.steps, b.steps) {
		fa, oka := a.steps[s]
		fb, okb := b.steps[s]
		switch {
		case !oka || !okb:
			has, lacks := a, b
			if !oka {
				has, lacks = b, a
			}
			return fmt.Errorf("merge: shard %d ran step %s but shard %d did not; run it on every shard first", has.info.Index, s, lacks.info.Index)
		case fa != fb:
			return fmt.Errorf("merge: shards %d and %d ran step %s with different settings (config, seed or models); run every shard with the same config", a.info.Index, b.info.Index, s)
		}
	}
	return nil
}

func unionKeys(ms ...map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// shardFacts is what must be the same in every shard of one run.
type shardFacts struct {
	inputs   string            // every input file with how far it was read
	meta     map[string]string // run settings
	versions map[string]string // stage/variant -> versions, sorted
}

func (a shardFacts) same(b shardFacts, pa, pb string) error {
	if a.inputs != b.inputs {
		return fmt.Errorf("merge: %s and %s read different inputs, or got to different points in them (finish ingest on every shard): %s vs %s", pa, pb, a.inputs, b.inputs)
	}
	for _, k := range unionKeys(a.meta, b.meta) {
		if !metaPerRun[k] && a.meta[k] != b.meta[k] {
			return fmt.Errorf("merge: %s and %s differ in run setting %s (%q vs %q)", pa, pb, k, a.meta[k], b.meta[k])
		}
	}
	for _, k := range unionKeys(a.versions, b.versions) {
		va, oka := a.versions[k]
		vb, okb := b.versions[k]
		if oka && okb && va != vb {
			return fmt.Errorf("merge: %s and %s ran %s with different prompt or stage versions (%s vs %s)", pa, pb, k, va, vb)
		}
	}
	return nil
}

// readShard opens one shard read-only and reads what the checks need.
func readShard(ctx context.Context, path string) (shardFile, shardFacts, error) {
	f := shardFile{path: path}
	var sf shardFacts
	if _, err := os.Stat(path); err != nil {
		return f, sf, fmt.Errorf("merge: %w", err)
	}
	l, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		return f, sf, fmt.Errorf("merge: %w", err)
	}
	defer l.Close()
	wrap := func(err error) error {
		return fmt.Errorf("merge: reading %s: %w", path, classify(path, err))
	}
	var check string
	if err := l.r.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check); err != nil {
		return f, sf, wrap(err)
	}
	if check != "ok" {
		return f, sf, fmt.Errorf("merge: %w", &DamagedError{Path: path, Err: fmt.Errorf("integrity check: %s", check)})
	}
	info, ok, err := l.Shard(ctx) // an older file, without the table, is no shard
	if err != nil {
		return f, sf, wrap(err)
	}
	switch {
	case !ok:
		return f, sf, fmt.Errorf("merge: %s is not a shard's run file (made without --shard or --shards)", path)
	case info.Merged():
		return f, sf, fmt.Errorf("merge: %s is already a merged run, not a shard", path)
	}
	f.info = info
	if f.steps, err = l.ShardSteps(ctx); err != nil {
		return f, sf, wrap(err)
	}
	var inputs []string
	if err := eachRow(ctx, l.r, func(rows *sql.Rows) error {
		var id, size, mtime, done, fin int64
		var p, format string
		if err := rows.Scan(&id, &p, &format, &size, &mtime, &done, &fin); err != nil {
			return err
		}
		inputs = append(inputs, fmt.Sprintf("%s(%s,%d bytes,%d records read,finished=%d)", p, format, size, done, fin))
		_, _ = id, mtime
		return nil
	}, `SELECT id, path, format, size, mtime_ns, records_done, finished FROM inputs WHERE substr(path, 1, ?) <> ? ORDER BY id`, len(derivedPrefix), derivedPrefix); err != nil {
		return f, sf, wrap(err)
	}
	sf.inputs = strings.Join(inputs, "; ")
	sf.meta = map[string]string{}
	if err := eachRow(ctx, l.r, func(rows *sql.Rows) error {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		sf.meta[k] = v
		return nil
	}, `SELECT key, value FROM run_meta`); err != nil {
		return f, sf, wrap(err)
	}
	sf.versions = map[string]string{}
	if err := eachRow(ctx, l.r, func(rows *sql.Rows) error {
		var s, v, vs string
		if err := rows.Scan(&s, &v, &vs); err != nil {
			return err
		}
		sf.versions[s+"/"+v] = vs
		return nil
	}, `SELECT stage, variant, group_concat(version, ' | ') FROM (SELECT DISTINCT stage, variant, version FROM tasks ORDER BY stage, variant, version) GROUP BY stage, variant`); err != nil {
		return f, sf, wrap(err)
	}
	var n int
	if err := l.r.QueryRowContext(ctx, `SELECT count(*) FROM batch_requests WHERE state IN ('queued', 'submitted')`).Scan(&n); err != nil {
		return f, sf, wrap(err)
	}
	if n > 0 {
		return f, sf, fmt.Errorf("merge: %s has %d model requests waiting in batches; finish its run (or 'ac3 batch cancel' and run it again) first", path, n)
	}
	return f, sf, nil
}

// eachRow runs q on db and calls fn for each row, closing the rows before
// it returns.
func eachRow(ctx context.Context, db *sql.DB, fn func(*sql.Rows) error, q string, args ...any) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// mergedTables are the tables buildMerged fills; a table of the schema
// not listed (a newer migration) makes merge refuse rather than drop it.
var mergedTables = map[string]bool{
	"schema_migrations": true, "run_meta": true, "inputs": true, "conversations": true,
	"content_hashes": true, "drops": true, "quarantine": true, "tasks": true, "units": true,
	"llm_cache": true, "llm_calls": true, "batch_requests": true, "batches": true,
	"shard": true, "shard_steps": true,
	// Near dedupe is refused in a shard (run.errNearShard): a shard's
	// near-duplicate tables are empty and the merged run's stay so.
	"near_bands": true, "near_signatures": true, "near_duplicates": true,
}

// buildMerged writes the merged run into the new file tmp.
func buildMerged(ctx context.Context, tmp string, shards []shardFile, rep *MergeReport) (err error) {
	l, err := Open(ctx, tmp, Options{})
	if err != nil {
		return fmt.Errorf("merge: creating %s: %w", tmp, err)
	}
	defer func() {
		if cerr := l.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("merge: closing %s: %w", tmp, cerr)
		}
	}()
	// One connection: ATTACH and the temporary tables belong to it.
	conn, err := l.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	defer conn.Close()
	m := &merger{conn: conn, shards: shards}
	if err := m.checkTables(ctx); err != nil {
		return err
	}
	for _, step := range []func(context.Context) error{m.bulk, m.number, m.copyAll, m.finish, m.reindex} {
		if err := step(ctx); err != nil {
			return classify(tmp, err)
		}
	}
	for q, dst := range map[string]*int64{
		`SELECT count(*) FROM conversations`: &rep.Conversations,
		`SELECT count(*) FROM units`:         &rep.Units,
		`SELECT count(*) FROM llm_calls`:     &rep.Calls,
	} {
		if err := conn.QueryRowContext(ctx, q).Scan(dst); err != nil {
			return fmt.Errorf("merge: counting: %w", err)
		}
	}
	rep.CrossDuplicates = m.crossDups
	return nil
}

type merger struct {
	conn      *sql.Conn
	shards    []shardFile
	crossDups int64
	indexes   []string // the merged run's indexes, dropped while copying
}

// bulk readies the new file for loading: its indexes are dropped and built
// again once the rows are in (one sort each, instead of a random insert per
// row), and the page cache is large. The file is a temporary one until the
// rename, so nothing is lost if this process dies meanwhile.
func (m *merger) bulk(ctx context.Context) error {
	rows, err := m.conn.QueryContext(ctx, `SELECT name, sql FROM main.sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		return fmt.Errorf("merge: listing indexes: %w", err)
	}
	var names []string
	for rows.Next() {
		var n, q string
		if err := rows.Scan(&n, &q); err != nil {
			rows.Close()
			return err
		}
		names, m.indexes = append(names, n), append(m.indexes, q)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range names {
		if err := m.exec(ctx, "dropping index "+n, `DROP INDEX main."`+n+`"`); err != nil {
			return err
		}
	}
	return m.exec(ctx, "sizing the cache", `PRAGMA cache_size = -262144`)
}

// reindex builds the indexes bulk dropped.
func (m *merger) reindex(ctx context.Context) error {
	for _, q := range m.indexes {
		if err := m.exec(ctx, "building indexes", q); err != nil {
			return err
		}
	}
	return nil
}

func (m *merger) exec(ctx context.Context, what, q string, args ...any) error {
	if _, err := m.conn.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("merge: %s: %w", what, err)
	}
	return nil
}

// attached runs fn with shard k attached as schema s.
func (m *merger) attached(ctx context.Context, k int, fn func() error) error {
	if err := m.exec(ctx, "opening "+m.shards[k].path, `ATTACH DATABASE ? AS s`, m.shards[k].path); err != nil {
		return err
	}
	err := fn()
	if derr := m.exec(ctx, "closing "+m.shards[k].path, `DETACH DATABASE s`); err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("%w (shard %s)", err, m.shards[k].path)
	}
	return nil
}

func (m *merger) checkTables(ctx context.Context) error {
	var unknown []string
	rows, err := m.conn.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return fmt.Errorf("merge: listing tables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		if !mergedTables[n] {
			unknown = append(unknown, n)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(unknown) > 0 {
		return fmt.Errorf("merge: this version cannot merge table %s", strings.Join(unknown, ", "))
	}
	return nil
}

// number gives every conversation of every shard its seq in the merged
// run: ingested ones in input order (input, line, row), as one process
// would have read them; derived ones after them, by the order their
// origin first appeared, then their parent. With dedupe on, a
// conversation whose content came earlier in another shard is dropped, as
// one process would have dropped it.
func (m *merger) number(ctx context.Context) error {
	if err := m.mapInputs(ctx); err != nil {
		return err
	}
	if err := m.exec(ctx, "numbering", `CREATE TEMP TABLE cmap (
		shard INTEGER NOT NULL, old INTEGER NOT NULL, new INTEGER,
		input_id INTEGER, line INTEGER, row INTEGER, origin TEXT, parent_old INTEGER, content_hash TEXT,
		PRIMARY KEY (shard, old))`); err != nil {
		return err
	}
	dedupe := false
	for k := range m.shards {
		err := m.attached(ctx, k, func() error {
			var n int
			if err := m.conn.QueryRowContext(ctx, `SELECT count(*) FROM s.content_hashes`).Scan(&n); err != nil {
				return err
			}
			dedupe = dedupe || n > 0
			return m.exec(ctx, "numbering", `INSERT INTO temp.cmap (shard, old, input_id, line, row, origin, parent_old, content_hash)
				SELECT ?, c.seq, i.new, c.source_line, c.source_row, c.origin, c.parent_seq, c.content_hash
				FROM s.conversations c JOIN temp.imap i ON i.shard = ? AND i.old = c.input_id`, k, k)
		})
		if err != nil {
			return err
		}
	}
	for _, q := range []string{
		`CREATE TEMP TABLE xdups (input_id INTEGER NOT NULL)`,
		`CREATE INDEX temp.cmap_by_hash ON cmap(content_hash, origin)`,
		`CREATE INDEX temp.cmap_by_parent ON cmap(shard, parent_old)`,
	} {
		if err := m.exec(ctx, "numbering", q); err != nil {
			return err
		}
	}
	if dedupe {
		if err := m.exec(ctx, "dropping duplicates across shards", `INSERT INTO temp.xdups SELECT c.input_id FROM temp.cmap c WHERE c.origin = 'source' AND EXISTS (
			SELECT 1 FROM temp.cmap e WHERE e.origin = 'source' AND e.content_hash = c.content_hash AND e.shard <> c.shard
			AND (e.input_id, e.line, e.row) < (c.input_id, c.line, c.row))`); err != nil {
			return err
		}
		res, err := m.conn.ExecContext(ctx, `DELETE FROM temp.cmap WHERE origin = 'source' AND EXISTS (
			SELECT 1 FROM temp.cmap e WHERE e.origin = 'source' AND e.content_hash = cmap.content_hash AND e.shard <> cmap.shard
			AND (e.input_id, e.line, e.row) < (cmap.input_id, cmap.line, cmap.row))`)
		if err != nil {
			return fmt.Errorf("merge: dropping duplicates across shards: %w", err)
		}
		m.crossDups, _ = res.RowsAffected()
		// Conversations derived from a dropped one go with it.
		for {
			res, err := m.conn.ExecContext(ctx, `DELETE FROM temp.cmap WHERE parent_old IS NOT NULL AND NOT EXISTS (
				SELECT 1 FROM temp.cmap p WHERE p.shard = cmap.shard AND p.old = cmap.parent_old)`)
			if err != nil {
				return fmt.Errorf("merge: dropping duplicates across shards: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				break
			}
		}
	}
	// Sources first, in input order.
	if err := m.exec(ctx, "numbering", `UPDATE temp.cmap SET new = o.n FROM (
		SELECT shard, old, row_number() OVER (ORDER BY input_id, line, row, shard, old) AS n FROM temp.cmap WHERE origin = 'source') o
		WHERE cmap.shard = o.shard AND cmap.old = o.old`); err != nil {
		return err
	}
	// Derived ones, round by round so a parent is numbered before its
	// children.
	for {
		res, err := m.conn.ExecContext(ctx, `UPDATE temp.cmap SET new = o.n FROM (
			SELECT c.shard, c.old, (SELECT coalesce(max(new), 0) FROM temp.cmap) + row_number() OVER (
				ORDER BY (SELECT min(f.old) FROM temp.cmap f WHERE f.origin = c.origin), c.origin, p.new, c.shard, c.old) AS n
			FROM temp.cmap c LEFT JOIN temp.cmap p ON p.shard = c.shard AND p.old = c.parent_old
			WHERE c.new IS NULL AND (c.parent_old IS NULL OR p.new IS NOT NULL)) o
			WHERE cmap.shard = o.shard AND cmap.old = o.old`)
		if err != nil {
			return fmt.Errorf("merge: numbering: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			break
		}
	}
	return nil
}

// mapInputs numbers the inputs of the merged run: each path once, in the
// order the shards first recorded them. Input files have the same ids in
// every shard (checkShards saw them in the same order); the inputs of
// derived conversations exist only in the shards that derived some.
func (m *merger) mapInputs(ctx context.Context) error {
	if err := m.exec(ctx, "numbering inputs", `CREATE TEMP TABLE ins AS SELECT 0 AS shard, * FROM main.inputs WHERE 0`); err != nil {
		return err
	}
	for k := range m.shards {
		if err := m.attached(ctx, k, func() error {
			return m.exec(ctx, "numbering inputs", `INSERT INTO temp.ins SELECT ?, * FROM s.inputs`, k)
		}); err != nil {
			return err
		}
	}
	for _, q := range []string{
		`CREATE TEMP TABLE imap AS SELECT i.shard, i.id AS old, p.new FROM temp.ins i JOIN (
			SELECT path, row_number() OVER (ORDER BY min(id), path) AS new FROM temp.ins GROUP BY path) p ON p.path = i.path`,
		`CREATE UNIQUE INDEX temp.imap_key ON imap(shard, old)`,
		// The first shard's row of each path (file inputs agree in all).
		`INSERT INTO main.inputs (id, path, format, size, mtime_ns, records_done, finished)
			SELECT p.new, i.path, i.format, i.size, i.mtime_ns, i.records_done, i.finished FROM temp.ins i
			JOIN temp.imap p ON p.shard = i.shard AND p.old = i.id
			WHERE i.shard = (SELECT min(shard) FROM temp.ins j WHERE j.path = i.path) ORDER BY p.new`,
	} {
		if err := m.exec(ctx, "numbering inputs", q); err != nil {
			return err
		}
	}
	return nil
}

// copyAll copies every table of every shard into the merged run. The
// shard's table is always the outer loop (CROSS JOIN): the planner knows
// nothing of the temporary tables' sizes and would otherwise scan a
// shard's units once per conversation.
func (m *merger) copyAll(ctx context.Context) error {
	if err := m.exec(ctx, "collecting", `CREATE TEMP TABLE q AS SELECT 0 AS shard, * FROM main.quarantine WHERE 0`); err != nil {
		return err
	}
	if err := m.exec(ctx, "collecting", `CREATE TEMP TABLE calls AS SELECT 0 AS shard, * FROM main.llm_calls WHERE 0`); err != nil {
		return err
	}
	var batchOffset int64
	for k := range m.shards {
		err := m.attached(ctx, k, func() error {
			if k == 0 {
				for _, q := range []string{
					`INSERT INTO main.run_meta SELECT * FROM s.run_meta`,
					`INSERT INTO main.shard_steps SELECT * FROM s.shard_steps`,
				} {
					if err := m.exec(ctx, "copying the run's settings", q); err != nil {
						return err
					}
				}
			}
			// A shard from before migration 0010 has no language source:
			// its languages, if any, came from its input ('' says so).
			langSource := "''"
			var n int
			if err := m.conn.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('conversations', 's') WHERE name = 'language_source'`).Scan(&n); err != nil {
				return fmt.Errorf("merge: reading the columns of %s: %w", m.shards[k].path, err)
			}
			if n > 0 {
				langSource = "c.language_source"
			}
			for _, s := range []struct{ what, q string }{
				{"copying content hashes", `INSERT OR IGNORE INTO main.content_hashes SELECT hash FROM s.content_hashes`},
				{"adding up drops", `INSERT INTO main.drops (input_id, reason, count) SELECT i.new, d.reason, d.count FROM s.drops d
					JOIN temp.imap i ON i.shard = ` + fmt.Sprint(k) + ` AND i.old = d.input_id WHERE true
					ON CONFLICT (input_id, reason) DO UPDATE SET count = count + excluded.count`},
				{"collecting quarantined records", `INSERT INTO temp.q SELECT ` + fmt.Sprint(k) + `, q.id, i.new, q.file, q.line, q.row, q.reason, q.detail, q.excerpt
					FROM s.quarantine q JOIN temp.imap i ON i.shard = ` + fmt.Sprint(k) + ` AND i.old = q.input_id`},
				{"copying conversations", `INSERT INTO main.conversations (seq, id, content_hash, input_id, source_line, source_row, format, user_turns, language, data, origin, parent_seq, language_source)
					SELECT m.new, c.id, c.content_hash, m.input_id, c.source_line, c.source_row, c.format, c.user_turns, c.language, c.data, c.origin, p.new, ` + langSource + `
					FROM s.conversations c CROSS JOIN temp.cmap m ON m.shard = ` + fmt.Sprint(k) + ` AND m.old = c.seq
					LEFT JOIN temp.cmap p ON p.shard = m.shard AND p.old = c.parent_seq ORDER BY m.new`},
				{"copying tasks", `INSERT INTO main.tasks (stage, variant, version, conv_seq, status, attempts, error, updated)
					SELECT t.stage, t.variant, t.version, m.new, t.status, t.attempts, t.error, t.updated
					FROM s.tasks t CROSS JOIN temp.cmap m ON m.shard = ` + fmt.Sprint(k) + ` AND m.old = t.conv_seq`},
				{"copying units", `INSERT INTO main.units (key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason)
					SELECT u.key, u.stage, u.conversation_id, m.new, u.turn, u.variant, u.version, u.status, u.attempts, u.error, u.raw, u.output, u.tokens, u.reason
					FROM s.units u CROSS JOIN temp.cmap m ON m.shard = ` + fmt.Sprint(k) + ` AND m.old = u.conv_seq`},
				{"copying the answer cache", `INSERT OR IGNORE INTO main.llm_cache (key, response, created) SELECT key, response, created FROM s.llm_cache`},
				{"collecting model calls", `INSERT INTO temp.calls SELECT ` + fmt.Sprint(k) + `, * FROM s.llm_calls`},
				{"copying batches", `INSERT INTO main.batches SELECT id + ` + fmt.Sprint(batchOffset) + `, endpoint, state, remote_status, input_file, remote_id, output_file, error_file, requests, completed, failed, imported, fallback, errors, created, updated FROM s.batches`},
				{"copying batch requests", `INSERT OR IGNORE INTO main.batch_requests SELECT key, endpoint, role, stage, body, est_usd, state, batch_id + ` + fmt.Sprint(batchOffset) + `, submits, status, error, queued FROM s.batch_requests`},
			} {
				if err := m.exec(ctx, s.what, s.q); err != nil {
					return err
				}
			}
			var top int64
			if err := m.conn.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM main.batches`).Scan(&top); err != nil {
				return err
			}
			batchOffset = top
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// finish renumbers what was collected in a stable order and records the
// merged run's identity.
func (m *merger) finish(ctx context.Context) error {
	// Quarantined records in the order one process would have met them.
	if err := m.exec(ctx, "copying quarantined records", `INSERT INTO main.quarantine (input_id, file, line, row, reason, detail, excerpt)
		SELECT input_id, file, line, row, reason, detail, excerpt FROM temp.q ORDER BY input_id, line, row, shard, id`); err != nil {
		return err
	}
	// Model calls by time, so a merged run's calls read like one run's.
	if err := m.exec(ctx, "copying model calls", `INSERT INTO main.llm_calls (role, stage, endpoint, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_usd, latency_ms, attempts, status, error, from_cache, at)
		SELECT role, stage, endpoint, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_usd, latency_ms, attempts, status, error, from_cache, at FROM temp.calls ORDER BY at, shard, id`); err != nil {
		return err
	}
	if err := m.exec(ctx, "counting duplicates", `INSERT INTO main.drops (input_id, reason, count)
		SELECT input_id, ?, count(*) FROM temp.xdups WHERE true GROUP BY input_id
		ON CONFLICT (input_id, reason) DO UPDATE SET count = count + excluded.count`, DropDuplicate); err != nil {
		return err
	}
	info := m.shards[0].info
	return m.exec(ctx, "recording the merge", `INSERT INTO main.shard (id, shard_index, shard_count, scheme, created) VALUES (1, ?, ?, ?, ?)`,
		MergedIndex, info.Count, info.Scheme, time.Now().UTC().Format(time.RFC3339))
}
