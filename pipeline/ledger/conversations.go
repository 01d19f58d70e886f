package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Input is one input file and how far ingest got through it.
type Input struct {
	ID          int64
	Path        string
	Format      string
	Size        int64
	MTimeNs     int64
	RecordsDone int64
	Finished    bool
}

// Input looks up an input by path, reporting false when it was never seen.
func (l *Ledger) Input(ctx context.Context, path string) (_ Input, _ bool, err error) {
	defer l.classify(&err)
	in := Input{Path: path}
	err = l.r.QueryRowContext(ctx, `SELECT id, format, size, mtime_ns, records_done, finished FROM inputs WHERE path = ?`, path).
		Scan(&in.ID, &in.Format, &in.Size, &in.MTimeNs, &in.RecordsDone, &in.Finished)
	if errors.Is(err, sql.ErrNoRows) {
		return Input{}, false, nil
	}
	if err != nil {
		return Input{}, false, fmt.Errorf("looking up input %s: %w", path, err)
	}
	return in, true, nil
}

// Inputs lists every input in the order it was added.
func (l *Ledger) Inputs(ctx context.Context) (_ []Input, err error) {
	defer l.classify(&err)
	rows, err := l.r.QueryContext(ctx, `SELECT id, path, format, size, mtime_ns, records_done, finished FROM inputs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing inputs: %w", err)
	}
	defer rows.Close()
	var out []Input
	for rows.Next() {
		var in Input
		if err := rows.Scan(&in.ID, &in.Path, &in.Format, &in.Size, &in.MTimeNs, &in.RecordsDone, &in.Finished); err != nil {
			return nil, fmt.Errorf("listing inputs: %w", err)
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

// AddInput records a new input file and returns it with its ID.
func (l *Ledger) AddInput(ctx context.Context, in Input) (_ Input, err error) {
	defer l.classify(&err)
	res, err := l.w.ExecContext(ctx, `INSERT INTO inputs (path, format, size, mtime_ns) VALUES (?, ?, ?, ?)`, in.Path, in.Format, in.Size, in.MTimeNs)
	if err != nil {
		return Input{}, fmt.Errorf("recording input %s: %w", in.Path, err)
	}
	in.ID, err = res.LastInsertId()
	return in, err
}

// ReplaceInputFile records a new size and modification time for an input
// none of whose records were read yet: a file that failed before its first
// batch (a damaged one) may be replaced, since nothing of the old one is in
// the run. It refuses an input with records read.
func (l *Ledger) ReplaceInputFile(ctx context.Context, id, size, mtimeNs int64) (err error) {
	defer l.classify(&err)
	res, err := l.w.ExecContext(ctx, `UPDATE inputs SET size = ?, mtime_ns = ? WHERE id = ? AND records_done = 0 AND NOT finished`, size, mtimeNs, id)
	if err != nil {
		return fmt.Errorf("recording the replaced input %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("recording the replaced input %d: it has records read already", id)
	}
	return nil
}

// IngestBatch is what ingest commits at once for one input: the conversations
// that passed the filters, the filter drops, the quarantined records, and the
// input's new position. Committing it is atomic, so after a crash the input's
// position and its effects always agree.
type IngestBatch struct {
	InputID     int64
	RecordsDone int64 // the input's position after this batch
	Finished    bool  // the input has no more records
	Kept        []*conv.Conversation
	Drops       map[string]int64
	Bad         []record.Bad
	Dedupe      bool // drop conversations whose content hash was seen before
	// Near, when set, also drops conversations whose user turns nearly
	// repeat a kept one's (see NearDedupe).
	Near *NearDedupe
}

// Drop reasons the ledger itself decides, next to the filters' own.
const (
	DropDuplicate   = "duplicate"    // same content as a conversation already kept
	DropDuplicateID = "duplicate_id" // an id already kept, with other content
)

// IngestResult counts what a batch did.
type IngestResult struct {
	Kept       int64
	Duplicates int64
	DupIDs     int64
	NearDups   int64 // dropped as near duplicates (DropNearDuplicate)
}

// CommitIngest stores one ingest batch in a single transaction.
func (l *Ledger) CommitIngest(ctx context.Context, b IngestBatch) (res IngestResult, err error) {
	defer l.classify(&err)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return res, err
	}
	defer enc.Close()
	if err := l.checkWAL(ctx); err != nil {
		return res, err
	}
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("committing ingest batch: %w", err)
	}
	defer tx.Rollback()
	hashStmt, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO content_hashes (hash) VALUES (?)`)
	if err != nil {
		return res, err
	}
	defer hashStmt.Close()
	convStmt, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO conversations (id, content_hash, input_id, source_line, source_row, format, user_turns, language, data, language_source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return res, err
	}
	defer convStmt.Close()
	var near *nearIndex
	if b.Near != nil {
		if near, err = prepareNear(ctx, tx, b.Near); err != nil {
			return res, err
		}
		defer near.close()
	}
	drops := map[string]int64{}
	for k, v := range b.Drops {
		drops[k] += v
	}
	for _, c := range b.Kept {
		h := c.ContentHash()
		if b.Dedupe {
			r, err := hashStmt.ExecContext(ctx, h)
			if err != nil {
				return res, fmt.Errorf("checking duplicate of %s: %w", c.ID, err)
			}
			if n, _ := r.RowsAffected(); n == 0 {
				drops[DropDuplicate]++
				res.Duplicates++
				continue
			}
		}
		var sk nearSketch
		if near != nil {
			var drop bool
			if sk, drop, err = near.check(ctx, l, b.InputID, c); err != nil {
				return res, err
			}
			if drop {
				drops[DropNearDuplicate]++
				res.NearDups++
				continue
			}
		}
		js, err := json.Marshal(c)
		if err != nil {
			return res, fmt.Errorf("encoding conversation %s: %w", c.ID, err)
		}
		r, err := convStmt.ExecContext(ctx, c.ID, h, b.InputID, c.Source.Line, c.Source.Row, c.Format, c.UserTurns(), c.Language, enc.EncodeAll(js, nil), c.LanguageSource)
		if err != nil {
			return res, fmt.Errorf("storing conversation %s: %w", c.ID, err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			drops[DropDuplicateID]++
			res.DupIDs++
			continue
		}
		if near != nil {
			seq, err := r.LastInsertId()
			if err != nil {
				return res, fmt.Errorf("storing conversation %s: %w", c.ID, err)
			}
			if err := near.add(ctx, seq, sk); err != nil {
				return res, err
			}
		}
		res.Kept++
	}
	for reason, n := range drops {
		if n == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO drops (input_id, reason, count) VALUES (?, ?, ?) ON CONFLICT (input_id, reason) DO UPDATE SET count = count + excluded.count`, b.InputID, reason, n); err != nil {
			return res, fmt.Errorf("counting drops: %w", err)
		}
	}
	for _, bad := range b.Bad {
		if _, err := tx.ExecContext(ctx, `INSERT INTO quarantine (input_id, file, line, row, reason, detail, excerpt) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			b.InputID, bad.Source.File, bad.Source.Line, bad.Source.Row, string(bad.Reason), bad.Detail, bad.Excerpt); err != nil {
			return res, fmt.Errorf("quarantining %s: %w", bad.Source, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE inputs SET records_done = ?, finished = ? WHERE id = ?`, b.RecordsDone, b.Finished, b.InputID); err != nil {
		return res, fmt.Errorf("advancing input: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("committing ingest batch: %w", err)
	}
	return res, l.checkWAL(ctx)
}

// Stored is a kept conversation with its position in the run.
type Stored struct {
	Seq  int64
	Conv *conv.Conversation
	// Origin is OriginSource for an ingested conversation, else the name of
	// the step that derived it (see AddDerived); Parent is the seq of the
	// conversation it was derived from, 0 when none was named.
	Origin string
	Parent int64
}

// ConversationPage returns up to limit kept conversations with seq > after, in
// seq order. Callers page through a run with the last seq they saw, so no read
// transaction stays open while they work.
func (l *Ledger) ConversationPage(ctx context.Context, after int64, limit int) ([]Stored, error) {
	return l.In(AllOrigins).ConversationPage(ctx, after, limit)
}

// Conversation returns one kept conversation by id, reporting false when the
// run has no such conversation.
func (l *Ledger) Conversation(ctx context.Context, id string) (_ Stored, _ bool, err error) {
	defer l.classify(&err)
	var s Stored
	var data []byte
	var parent sql.NullInt64
	err = l.r.QueryRowContext(ctx, `SELECT seq, data, `+l.originCols()+` FROM conversations WHERE id = ?`, id).Scan(&s.Seq, &data, &s.Origin, &parent)
	if errors.Is(err, sql.ErrNoRows) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("reading conversation %s: %w", id, err)
	}
	s.Parent = parent.Int64
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return s, false, err
	}
	defer dec.Close()
	if s.Conv, err = decodeConv(dec, data); err != nil {
		return s, false, l.damaged("decoding conversation %s: %w", id, err)
	}
	return s, true, nil
}

// originCols is the select list of a conversation's origin and parent: the
// columns themselves, or constants for a run file from before migration
// 0004 opened read-only, whose conversations are all ingested.
func (l *Ledger) originCols() string {
	if l.hasOrigins {
		return "origin, parent_seq"
	}
	return "'" + OriginSource + "', NULL"
}

func decodeConv(dec *zstd.Decoder, data []byte) (*conv.Conversation, error) {
	js, err := dec.DecodeAll(data, nil)
	if err != nil {
		return nil, err
	}
	var c conv.Conversation
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// CountConversations reports how many conversations the run kept, of every
// origin.
func (l *Ledger) CountConversations(ctx context.Context) (int64, error) {
	return l.In(AllOrigins).CountConversations(ctx)
}

// Quarantined is one quarantined record as stored.
type Quarantined struct {
	ID    int64
	Input string
	record.Bad
}

// Quarantine calls fn for every quarantined record in the order they were
// found. It stops at the first error fn returns.
func (l *Ledger) Quarantine(ctx context.Context, fn func(Quarantined) error) (err error) {
	defer l.classify(&err)
	rows, err := l.r.QueryContext(ctx, `SELECT q.id, i.path, q.file, q.line, q.row, q.reason, q.detail, q.excerpt FROM quarantine q JOIN inputs i ON i.id = q.input_id ORDER BY q.id`)
	if err != nil {
		return fmt.Errorf("reading quarantine: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var q Quarantined
		var reason string
		if err := rows.Scan(&q.ID, &q.Input, &q.Source.File, &q.Source.Line, &q.Source.Row, &reason, &q.Detail, &q.Excerpt); err != nil {
			return fmt.Errorf("reading quarantine: %w", err)
		}
		q.Reason = record.Reason(reason)
		if err := fn(q); err != nil {
			return callerError{err}
		}
	}
	return rows.Err()
}

// EachPage calls fn for each page of up to size kept conversations, in seq
// order, with the seq range (after, upto] the page covers, so fn can read
// other stages' units for exactly those conversations. It stops at the
// first error fn returns. It covers every origin; View.EachPage walks one
// scope.
func (l *Ledger) EachPage(ctx context.Context, size int, fn func(page []Stored, after, upto int64) error) error {
	return l.In(AllOrigins).EachPage(ctx, size, fn)
}
