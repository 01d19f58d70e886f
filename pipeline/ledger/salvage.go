package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// SalvageCount is what Salvage did with one kind of record.
type SalvageCount struct {
	What   string `json:"what"`   // e.g. "conversations", "tasks"
	Copied int64  `json:"copied"` // read, checked and (unless counting only) written
	// Lost is how many could not be read or did not decode: the rows the
	// file's own counts (from whichever index still answers) say exist,
	// minus those copied; -1 when no count could be read either.
	Lost int64 `json:"lost"`
	// Skipped counts the stretches of the table that could not be read at
	// all and were stepped over.
	Skipped int `json:"skipped"`
}

// SalvageReport is what Salvage copied and lost, in copy order.
type SalvageReport struct {
	Counts []SalvageCount `json:"counts"`
}

// Lost reports whether anything was lost or could not be counted.
func (r SalvageReport) Lost() bool {
	for _, c := range r.Counts {
		if c.Lost != 0 || c.Skipped > 0 {
			return true
		}
	}
	return false
}

// Salvage copies every readable record of the run file at src into a new
// run file at dst: settings, inputs, drop counts, quarantined records,
// conversations whose stored data still decodes, tasks whose every unit can
// be read (a task without all its units would count as done with holes in
// its output; left out, it is simply done again on resume), model answers
// in the cache (so redoing that work is not paid twice), and call records.
// Rows on pages that cannot be read are stepped over; the report counts
// them as lost.
//
// With dst empty it only reads and counts, which tells what a recovery
// would keep. dst must not exist. src is opened for reading only, without
// the writer lock. Memory stays flat: it works a page of rows at a time.
//
// Conversations that were lost are not re-ingested: their inputs keep the
// position ingest had reached. Ingesting the inputs again into a fresh run
// brings them back.
func Salvage(ctx context.Context, src, dst string) (SalvageReport, error) {
	var rep SalvageReport
	if _, err := os.Stat(src); err != nil {
		return rep, fmt.Errorf("salvaging run %s: %w", src, err)
	}
	if dst != "" {
		if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("salvaging into %s: the file already exists; name a new one", dst)
		}
	}
	db, err := openReader(src)
	if err != nil {
		return rep, err
	}
	defer db.Close()
	s := &salvager{src: db}
	if dst == "" {
		return rep, s.run(ctx, &rep)
	}
	l, err := Open(ctx, dst, Options{})
	if err != nil {
		return rep, fmt.Errorf("creating %s: %w", dst, err)
	}
	s.dst = l
	err = s.run(ctx, &rep)
	if err == nil {
		err = s.flush()
	}
	if s.cur != nil {
		s.cur.Rollback()
	}
	if cerr := l.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing %s: %w", dst, cerr)
	}
	if err == nil {
		err = verifyCopy(ctx, dst, rep)
	}
	if err != nil {
		// Half a recovery must never pass for a whole one.
		for _, suffix := range []string{"", "-wal", "-shm", LockSuffix} {
			os.Remove(dst + suffix)
		}
		return rep, err
	}
	return rep, nil
}

// salvageTables names the table each kind of record of a SalvageReport is
// copied into.
var salvageTables = map[string]string{
	"settings": "run_meta", "inputs": "inputs", "drop counts": "drops", "quarantined records": "quarantine",
	"content hashes": "content_hashes", "conversations": "conversations", "tasks": "tasks", "units": "units",
	"cached model answers": "llm_cache", "model call records": "llm_calls", "batches": "batches",
	"batch requests": "batch_requests", "shard identity": "shard", "shard step settings": "shard_steps",
}

// verifyCopy reads the new run back: it must check sound and hold exactly
// the records the report says were copied, table by table, or the recovery
// is not what it claims to be.
func verifyCopy(ctx context.Context, dst string, rep SalvageReport) error {
	res, err := Check(ctx, dst)
	if err != nil {
		return fmt.Errorf("checking the recovered run %s: %w", dst, err)
	}
	if !res.OK {
		return fmt.Errorf("the recovered run %s does not check sound: %s", dst, res.FirstProblem())
	}
	db, err := openReader(dst)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, c := range rep.Counts {
		table, ok := salvageTables[c.What]
		if !ok {
			return fmt.Errorf("verifying the recovered run %s: no table for %q", dst, c.What)
		}
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			return fmt.Errorf("verifying the recovered run %s: counting %s: %w", dst, c.What, err)
		}
		if n != c.Copied {
			return fmt.Errorf("the recovered run %s holds %d %s, but %d were read and copied", dst, n, c.What, c.Copied)
		}
	}
	return nil
}

// Copied is how many records of every kind the recovery copied.
func (r SalvageReport) Copied() int64 {
	var n int64
	for _, c := range r.Counts {
		n += c.Copied
	}
	return n
}

type salvager struct {
	src *sql.DB
	dst *Ledger // nil when only counting
	dec *zstd.Decoder

	// Writes to dst go in batched transactions on its one connection.
	cur     *sql.Tx
	pending int

	unitsCopied int64
}

// salvagePage is how many rows are read per query, and written per commit.
const salvagePage = 500

// tx is the open write transaction on the new run, begun when needed.
func (s *salvager) tx(ctx context.Context) (*sql.Tx, error) {
	if s.cur == nil {
		tx, err := s.dst.w.BeginTx(ctx, nil)
		if err != nil {
			return nil, classify(s.dst.path, err)
		}
		s.cur = tx
	}
	return s.cur, nil
}

// flush commits the open write transaction, if any.
func (s *salvager) flush() error {
	if s.cur == nil {
		return nil
	}
	err := s.cur.Commit()
	s.cur, s.pending = nil, 0
	if err != nil {
		return classify(s.dst.path, err)
	}
	return nil
}

func (s *salvager) run(ctx context.Context, rep *SalvageReport) error {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	s.dec = dec
	steps := []struct {
		what  string
		table string
		fn    func(context.Context, *SalvageCount) error
	}{
		{"settings", "run_meta", s.runMeta},
		{"inputs", "inputs", s.inputs},
		{"drop counts", "drops", s.drops},
		{"quarantined records", "quarantine", s.quarantine},
		{"content hashes", "content_hashes", s.contentHashes},
		{"conversations", "conversations", s.conversations},
		{"tasks", "tasks", s.tasks},
		{"units", "", nil}, // filled by tasks
		{"cached model answers", "llm_cache", s.llmCache},
		{"model call records", "llm_calls", s.llmCalls},
		{"batches", "batches", s.batches},
		{"batch requests", "batch_requests", s.batchRequests},
		{"shard identity", "shard", s.shard},
		{"shard step settings", "shard_steps", s.shardSteps},
	}
	for _, st := range steps {
		c := SalvageCount{What: st.what}
		if st.fn == nil { // units: copied with their tasks
			c.Copied, c.Lost = s.unitsCopied, s.lost(ctx, "units", s.unitsCopied)
			rep.Counts = append(rep.Counts, c)
			continue
		}
		if err := st.fn(ctx, &c); err != nil {
			return fmt.Errorf("salvaging %s: %w", st.what, err)
		}
		if err := s.flush(); err != nil {
			return fmt.Errorf("salvaging %s: %w", st.what, err)
		}
		c.Lost = s.lost(ctx, st.table, c.Copied)
		rep.Counts = append(rep.Counts, c)
	}
	return ctx.Err()
}

// lost is how many rows of table the old file says it has beyond the
// copied ones, or -1 when it cannot count them either.
func (s *salvager) lost(ctx context.Context, table string, copied int64) int64 {
	has, err := s.tableExists(ctx, table)
	if err != nil {
		return -1 // the file's table of tables cannot be read either
	}
	if !has {
		return 0 // a table newer than the file
	}
	var n int64
	if err := s.src.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		return -1
	}
	return max(n-copied, 0)
}

// exec writes to the new run, unless only counting, committing every
// salvagePage writes.
func (s *salvager) exec(ctx context.Context, q string, args ...any) error {
	if s.dst == nil {
		return nil
	}
	tx, err := s.tx(ctx)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return classify(s.dst.path, err)
	}
	if s.pending++; s.pending >= salvagePage {
		return s.flush()
	}
	return nil
}

// readErr sorts a read error from the damaged file: damage is stepped over
// (false), anything else stops the salvage (true).
func readErr(err error) bool {
	return err != nil && !isDamage(err)
}

// eachIntKey calls fn with each key of an integer-keyed table in order (see
// eachKey). Past damage it probes ever further ahead of the last key read
// until a read succeeds, and narrows back to the first readable key.
func (s *salvager) eachIntKey(ctx context.Context, table, col string, c *SalvageCount, fn func(int64) error) error {
	return eachKey(ctx, s, table, col, c, fn, func(after int64, readable func(int64) bool) (int64, bool, error) {
		lo, hi := int64(0), int64(1)
		for !readable(after + hi) {
			lo = hi
			if hi > 1<<61 {
				return 0, false, nil // nothing past here can be read
			}
			hi *= 2
		}
		for hi-lo > 1 {
			if mid := lo + (hi-lo)/2; readable(after + mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		return after + hi, true, nil
	})
}

// eachTextKey is eachIntKey for a table keyed by text (hex hashes and
// names): past damage it probes by bumping ever shorter prefixes of the last
// key read, so it may step over a few readable keys beside the damage.
func (s *salvager) eachTextKey(ctx context.Context, table, col string, c *SalvageCount, fn func(string) error) error {
	return eachKey(ctx, s, table, col, c, fn, func(after string, readable func(string) bool) (string, bool, error) {
		// Candidates past after, in increasing order: each byte from the
		// last to the first raised one step at a time. The first that
		// reads is just past the damage, give or take the keys a raised
		// byte steps over. A damaged leaf can span a change of the first
		// byte (an index of short entries holds many keys per page), so
		// every byte is raised as far as it goes, not only by one.
		next, ok := "", false
		for n := len(after); n >= 1 && !ok; n-- {
			for b := int(after[n-1]) + 1; b <= 0xff && !ok; b++ {
				cand := after[:n-1] + string([]byte{byte(b)})
				if readable(cand) {
					next, ok = cand, true
				}
			}
		}
		if !ok {
			return "", false, nil // nothing past here can be read
		}
		// Keys between after and next are lost; next itself may be one.
		if err := s.src.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE %s = ?`, col, table, col), next).Scan(new(string)); err == nil {
			if err := fn(next); err != nil {
				return "", false, err
			}
		}
		return next, true, nil
	})
}

// eachKey calls fn with each key of table's key column col in order,
// reading salvagePage keys at a time. When a read fails on a damaged page
// it steps one key at a time up to the damage, then asks stepOver where to
// go on: given the last key read and readable (whether the keys after a
// given one can be read), it returns the key to go on after, or false when
// nothing further can be read. Only keys are read here; fn reads the row.
func eachKey[K int64 | string](ctx context.Context, s *salvager, table, col string, c *SalvageCount, fn func(K) error,
	stepOver func(after K, readable func(K) bool) (K, bool, error)) error {
	readFrom := func(from K, n int) ([]K, error) {
		return scanAll(ctx, s.src, func(r *sql.Rows, k *K) error { return r.Scan(k) },
			fmt.Sprintf(`SELECT %s FROM %s WHERE %s > ? ORDER BY %s LIMIT %d`, col, table, col, col, n), from)
	}
	readable := func(from K) bool {
		_, err := readFrom(from, 1)
		return err == nil
	}
	var after K
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		keys, err := readFrom(after, salvagePage)
		if readErr(err) {
			return err
		}
		if err != nil {
			// Damage ahead: one key at a time up to it.
			for {
				if keys, err = readFrom(after, 1); err != nil || len(keys) == 0 {
					break
				}
				if err := fn(keys[0]); err != nil {
					return err
				}
				after = keys[0]
			}
			if readErr(err) {
				return err
			}
			if err == nil {
				return nil // the end, reached one key at a time
			}
			c.Skipped++
			next, ok, err := stepOver(after, readable)
			if err != nil || !ok {
				return err
			}
			after = next
			continue
		}
		if len(keys) == 0 {
			return nil
		}
		for _, k := range keys {
			if err := fn(k); err != nil {
				return err
			}
		}
		after = keys[len(keys)-1]
	}
}

// scanAll reads the rows q finds in db, each into a T by scan. With an
// error (of the query, a row, or the walk) it returns the rows read before
// it.
func scanAll[T any](ctx context.Context, db *sql.DB, scan func(*sql.Rows, *T) error, q string, args ...any) ([]T, error) {
	var out []T
	err := eachRow(ctx, db, func(rows *sql.Rows) error {
		var v T
		if err := scan(rows, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}, q, args...)
	return out, err
}

// row reads one row; ok is false when it cannot be read.
func (s *salvager) row(ctx context.Context, q string, key any, dest ...any) (bool, error) {
	return s.rowArgs(ctx, q, []any{key}, dest...)
}

func (s *salvager) rowArgs(ctx context.Context, q string, args []any, dest ...any) (bool, error) {
	err := s.src.QueryRowContext(ctx, q, args...).Scan(dest...)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, sql.ErrNoRows) || isDamage(err):
		return false, nil
	default:
		return false, err
	}
}

func (s *salvager) runMeta(ctx context.Context, c *SalvageCount) error {
	return s.eachTextKey(ctx, "run_meta", "key", c, func(k string) error {
		var v string
		if ok, err := s.row(ctx, `SELECT value FROM run_meta WHERE key = ?`, k, &v); !ok || err != nil {
			return err
		}
		c.Copied++
		return s.exec(ctx, `INSERT INTO run_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, k, v)
	})
}

func (s *salvager) inputs(ctx context.Context, c *SalvageCount) error {
	return s.eachIntKey(ctx, "inputs", "id", c, func(id int64) error {
		var path, format string
		var size, mtime, done int64
		var finished bool
		if ok, err := s.row(ctx, `SELECT path, format, size, mtime_ns, records_done, finished FROM inputs WHERE id = ?`, id, &path, &format, &size, &mtime, &done, &finished); !ok || err != nil {
			return err
		}
		c.Copied++
		return s.exec(ctx, `INSERT INTO inputs (id, path, format, size, mtime_ns, records_done, finished) VALUES (?, ?, ?, ?, ?, ?, ?)`, id, path, format, size, mtime, done, finished)
	})
}

// drops is small (inputs × reasons) and read whole; if any of it is
// unreadable, it is all reported lost.
func (s *salvager) drops(ctx context.Context, c *SalvageCount) error {
	type drop struct {
		input      int64
		reason     string
		n          int64
		inputKnown bool
	}
	all, err := scanAll(ctx, s.src, func(r *sql.Rows, d *drop) error { return r.Scan(&d.input, &d.reason, &d.n) },
		`SELECT input_id, reason, count FROM drops`)
	if readErr(err) {
		return err
	}
	if err != nil {
		c.Skipped++
		return nil
	}
	for _, d := range all {
		if !s.copied(ctx, `SELECT 1 FROM inputs WHERE id = ?`, d.input) {
			continue // its input was lost
		}
		c.Copied++
		if err := s.exec(ctx, `INSERT INTO drops (input_id, reason, count) VALUES (?, ?, ?)`, d.input, d.reason, d.n); err != nil {
			return err
		}
	}
	return nil
}

// copied reports whether the new run has the row q finds (always true when
// only counting: nothing was written to look in).
func (s *salvager) copied(ctx context.Context, q string, key any) bool {
	if s.dst == nil {
		return true
	}
	tx, err := s.tx(ctx)
	if err != nil {
		return false
	}
	var one int
	return tx.QueryRowContext(ctx, q, key).Scan(&one) == nil
}

func (s *salvager) quarantine(ctx context.Context, c *SalvageCount) error {
	return s.eachIntKey(ctx, "quarantine", "id", c, func(id int64) error {
		var input, line, row int64
		var file, reason, detail, excerpt string
		if ok, err := s.row(ctx, `SELECT input_id, file, line, row, reason, detail, excerpt FROM quarantine WHERE id = ?`, id, &input, &file, &line, &row, &reason, &detail, &excerpt); !ok || err != nil {
			return err
		}
		if !s.copied(ctx, `SELECT 1 FROM inputs WHERE id = ?`, input) {
			return nil
		}
		c.Copied++
		return s.exec(ctx, `INSERT INTO quarantine (id, input_id, file, line, row, reason, detail, excerpt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, input, file, line, row, reason, detail, excerpt)
	})
}

func (s *salvager) contentHashes(ctx context.Context, c *SalvageCount) error {
	return s.eachTextKey(ctx, "content_hashes", "hash", c, func(h string) error {
		c.Copied++
		return s.exec(ctx, `INSERT OR IGNORE INTO content_hashes (hash) VALUES (?)`, h)
	})
}

func (s *salvager) conversations(ctx context.Context, c *SalvageCount) error {
	// A run file from before migration 0004 has no origins: all its
	// conversations are ingested ones.
	cols := `'` + OriginSource + `', NULL`
	var n int
	if err := s.src.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('conversations') WHERE name = 'origin'`).Scan(&n); err == nil && n > 0 {
		cols = `origin, parent_seq`
	}
	// One from before migration 0010 has no language source ('' says the
	// language, if any, came from the input).
	cols += `, ''`
	if err := s.src.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('conversations') WHERE name = 'language_source'`).Scan(&n); err == nil && n > 0 {
		cols = strings.TrimSuffix(cols, `''`) + `language_source`
	}
	return s.eachIntKey(ctx, "conversations", "seq", c, func(seq int64) error {
		var id, hash, format, lang, origin, langSource string
		var input, line, row, turns int64
		var parent sql.NullInt64
		var data []byte
		if ok, err := s.row(ctx, `SELECT id, content_hash, input_id, source_line, source_row, format, user_turns, language, data, `+cols+` FROM conversations WHERE seq = ?`, seq,
			&id, &hash, &input, &line, &row, &format, &turns, &lang, &data, &origin, &parent, &langSource); !ok || err != nil {
			return err
		}
		if _, err := decodeConv(s.dec, data); err != nil {
			return nil // stored data that no longer decodes is lost
		}
		if !s.copied(ctx, `SELECT 1 FROM inputs WHERE id = ?`, input) {
			return nil
		}
		// A derived conversation whose parent was lost keeps its content
		// and loses the link (its metadata still names where it came from).
		var parentArg any
		if parent.Valid && s.copied(ctx, `SELECT 1 FROM conversations WHERE seq = ?`, parent.Int64) {
			parentArg = parent.Int64
		}
		c.Copied++
		return s.exec(ctx, `INSERT INTO conversations (seq, id, content_hash, input_id, source_line, source_row, format, user_turns, language, data, origin, parent_seq, language_source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			seq, id, hash, input, line, row, format, turns, lang, data, origin, parentArg, langSource)
	})
}

// taskKind is one (stage, variant, version) that has tasks.
type taskKind struct{ stage, variant, version string }

// taskKinds lists the stage variants that have tasks: from the tasks table
// if it can be read, else from the stages' recorded plans.
func (s *salvager) taskKinds(ctx context.Context) ([]taskKind, error) {
	kinds, err := scanAll(ctx, s.src, func(r *sql.Rows, k *taskKind) error { return r.Scan(&k.stage, &k.variant, &k.version) },
		`SELECT DISTINCT stage, variant, version FROM tasks`)
	if readErr(err) {
		return nil, err
	}
	if err == nil {
		return kinds, nil
	}
	kinds = kinds[:0]
	rows, err := s.src.QueryContext(ctx, `SELECT key, value FROM run_meta WHERE key LIKE 'plan.%'`)
	if err != nil {
		if readErr(err) {
			return nil, err
		}
		return nil, nil
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) != nil {
			break
		}
		var vs []Variant
		if json.Unmarshal([]byte(v), &vs) != nil {
			continue
		}
		for _, x := range vs {
			kinds = append(kinds, taskKind{strings.TrimPrefix(k, planKey), x.Name, x.Version})
		}
	}
	return kinds, nil
}

// tasks copies, for each copied conversation and each stage variant, its
// task with all its units, or nothing of it if any part cannot be read.
func (s *salvager) tasks(ctx context.Context, c *SalvageCount) error {
	kinds, err := s.taskKinds(ctx)
	if err != nil {
		return err
	}
	hasReason := s.src.QueryRowContext(ctx, `SELECT 1 FROM pragma_table_info('units') WHERE name = 'reason'`).Scan(new(int)) == nil
	reasonCol := "''"
	if hasReason {
		reasonCol = "reason"
	}
	each := func(seq int64) error {
		for _, k := range kinds {
			if err := s.task(ctx, k, seq, reasonCol, c); err != nil {
				return err
			}
		}
		return nil
	}
	if s.dst == nil {
		// Only counting: the old run's conversations, stepping over damage
		// as the conversations step did.
		return s.eachIntKey(ctx, "conversations", "seq", &SalvageCount{}, each)
	}
	// The conversations kept, walked in the new run a page of seqs at a
	// time, inside the batch transaction (the new run has one connection).
	var after int64
	for {
		tx, err := s.tx(ctx)
		if err != nil {
			return err
		}
		var seqs []int64
		rows, err := tx.QueryContext(ctx, `SELECT seq FROM conversations WHERE seq > ? ORDER BY seq LIMIT ?`, after, salvagePage)
		if err != nil {
			return err
		}
		for rows.Next() {
			var q int64
			if err = rows.Scan(&q); err != nil {
				break
			}
			seqs = append(seqs, q)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
		if err != nil {
			return err
		}
		if len(seqs) == 0 {
			return nil
		}
		for _, seq := range seqs {
			if err := each(seq); err != nil {
				return err
			}
		}
		after = seqs[len(seqs)-1]
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

type salvagedUnit struct {
	key, convID, status, errText, raw, reason string
	turn, attempts                            int
	output                                    []byte
	tokens                                    int64
}

func (s *salvager) task(ctx context.Context, k taskKind, seq int64, reasonCol string, c *SalvageCount) error {
	var status, errText, updated string
	var attempts int
	ok, err := s.rowArgs(ctx, `SELECT status, attempts, error, updated FROM tasks WHERE stage = ? AND variant = ? AND version = ? AND conv_seq = ?`,
		[]any{k.stage, k.variant, k.version, seq}, &status, &attempts, &errText, &updated)
	if !ok || err != nil {
		return err
	}
	units, err := scanAll(ctx, s.src, func(r *sql.Rows, u *salvagedUnit) error {
		return r.Scan(&u.key, &u.convID, &u.turn, &u.status, &u.attempts, &u.errText, &u.raw, &u.output, &u.tokens, &u.reason)
	}, `SELECT key, conversation_id, turn, status, attempts, error, raw, output, tokens, `+reasonCol+` FROM units WHERE stage = ? AND variant = ? AND version = ? AND conv_seq = ? ORDER BY turn`, k.stage, k.variant, k.version, seq)
	if readErr(err) {
		return err
	}
	if err != nil || len(units) == 0 {
		return nil // units that cannot be read, or none: the task is redone on resume
	}
	c.Copied++
	s.unitsCopied += int64(len(units))
	// A task and its units land in the same batch transaction; a salvage
	// that fails part-way removes the new file, so none is ever split.
	if err := s.exec(ctx, `INSERT INTO tasks (stage, variant, version, conv_seq, status, attempts, error, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, k.stage, k.variant, k.version, seq, status, attempts, errText, updated); err != nil {
		return err
	}
	for _, u := range units {
		if u.status == Failed && u.reason == "" {
			u.reason = FailureReason(u.errText)
		}
		if err := s.exec(ctx, `INSERT INTO units (key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.key, k.stage, u.convID, seq, u.turn, k.variant, k.version, u.status, u.attempts, u.errText, u.raw, u.output, u.tokens, u.reason); err != nil {
			return err
		}
	}
	return nil
}

// hasTable reports whether the old file has table (files made before a
// migration lack its tables).
func (s *salvager) hasTable(ctx context.Context, table string) bool {
	has, err := s.tableExists(ctx, table)
	return err == nil && has
}

// tableExists is hasTable, saying when the file's table of tables cannot be
// read to tell.
func (s *salvager) tableExists(ctx context.Context, table string) (bool, error) {
	var n int
	err := s.src.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n)
	return n > 0, err
}

// batches copies the run's batches: without them a salvaged run would not
// know its live batches and would submit their requests again.
func (s *salvager) batches(ctx context.Context, c *SalvageCount) error {
	if !s.hasTable(ctx, "batches") {
		return nil
	}
	return s.eachIntKey(ctx, "batches", "id", c, func(id int64) error {
		return s.copyRow(ctx, c, "batches", "id", batchCols, id)
	})
}

const batchRequestCols = `key, endpoint, role, stage, body, est_usd, state, batch_id, submits, status, error, queued`

func (s *salvager) batchRequests(ctx context.Context, c *SalvageCount) error {
	if !s.hasTable(ctx, "batch_requests") {
		return nil
	}
	return s.eachTextKey(ctx, "batch_requests", "key", c, func(k string) error {
		return s.copyRow(ctx, c, "batch_requests", "key", batchRequestCols, k)
	})
}

// copyRow copies the row of table whose keyCol is key, the columns cols (a
// comma-separated list) as they are: for tables with nothing salvage needs
// to check.
func (s *salvager) copyRow(ctx context.Context, c *SalvageCount, table, keyCol, cols string, key any) error {
	n := strings.Count(cols, ",") + 1
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if ok, err := s.row(ctx, `SELECT `+cols+` FROM `+table+` WHERE `+keyCol+` = ?`, key, ptrs...); !ok || err != nil {
		return err
	}
	c.Copied++
	return s.exec(ctx, `INSERT INTO `+table+` (`+cols+`) VALUES (`+strings.TrimSuffix(strings.Repeat("?, ", n), ", ")+`)`, vals...)
}

func (s *salvager) llmCache(ctx context.Context, c *SalvageCount) error {
	return s.eachTextKey(ctx, "llm_cache", "key", c, func(k string) error {
		var resp []byte
		var created string
		if ok, err := s.row(ctx, `SELECT response, created FROM llm_cache WHERE key = ?`, k, &resp, &created); !ok || err != nil {
			return err
		}
		if !json.Valid(resp) {
			return nil
		}
		c.Copied++
		return s.exec(ctx, `INSERT INTO llm_cache (key, response, created) VALUES (?, ?, ?)`, k, resp, created)
	})
}

func (s *salvager) llmCalls(ctx context.Context, c *SalvageCount) error {
	return s.eachIntKey(ctx, "llm_calls", "id", c, func(id int64) error {
		var role, stage, endpoint, model, status, errText, at string
		var prompt, completion, cached, reasoning, latency, attempts int64
		var cost float64
		var fromCache bool
		if ok, err := s.row(ctx, `SELECT role, stage, endpoint, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_usd, latency_ms, attempts, status, error, from_cache, at FROM llm_calls WHERE id = ?`, id,
			&role, &stage, &endpoint, &model, &prompt, &completion, &cached, &reasoning, &cost, &latency, &attempts, &status, &errText, &fromCache, &at); !ok || err != nil {
			return err
		}
		c.Copied++
		return s.exec(ctx, `INSERT INTO llm_calls (id, role, stage, endpoint, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_usd, latency_ms, attempts, status, error, from_cache, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, role, stage, endpoint, model, prompt, completion, cached, reasoning, cost, latency, attempts, status, errText, fromCache, at)
	})
}

// shard copies a shard's identity, so a salvaged shard can still be merged
// and is still refused as another shard.
func (s *salvager) shard(ctx context.Context, c *SalvageCount) error {
	if !s.hasTable(ctx, "shard") {
		return nil
	}
	return s.eachIntKey(ctx, "shard", "id", c, func(id int64) error {
		var idx, count int64
		var scheme, created string
		if ok, err := s.row(ctx, `SELECT shard_index, shard_count, scheme, created FROM shard WHERE id = ?`, id, &idx, &count, &scheme, &created); !ok || err != nil {
			return err
		}
		c.Copied++
		return s.exec(ctx, `INSERT INTO shard (id, shard_index, shard_count, scheme, created) VALUES (?, ?, ?, ?, ?)`, id, idx, count, scheme, created)
	})
}

func (s *salvager) shardSteps(ctx context.Context, c *SalvageCount) error {
	if !s.hasTable(ctx, "shard_steps") {
		return nil
	}
	return s.eachTextKey(ctx, "shard_steps", "step", c, func(k string) error {
		var fp string
		if ok, err := s.row(ctx, `SELECT fingerprint FROM shard_steps WHERE step = ?`, k, &fp); !ok || err != nil {
			return err
		}
		c.Copied++
		return s.exec(ctx, `INSERT INTO shard_steps (step, fingerprint) VALUES (?, ?)`, k, fp)
	})
}
