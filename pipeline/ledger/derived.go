package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/ac3/ac3/pipeline/conv"
)

// derivedPrefix starts the path of the input row that stands for the
// conversations of one derived origin. Ingest stores absolute paths, so it
// never meets one.
const derivedPrefix = "derived:"

// DerivedFormat is the format of a derived origin's input row.
const DerivedFormat = "derived"

// DerivedInput is the path of the input row that stands for the
// conversations derived under origin: "derived:<origin>". Every derived
// conversation points at it, so inputs and status account for them as for
// ingested ones (records is how many are stored, finished whether the step
// that makes them last ran to the end).
func DerivedInput(origin string) string { return derivedPrefix + origin }

// derivedBatch and derivedBytes bound one transaction of AddDerived: at
// most 256 conversations holding at most 16 MiB of message text, so a
// stream of long stitched instances does not gather in memory.
const (
	derivedBatch = 256
	derivedBytes = 16 << 20
)

// DeriveResult counts what AddDerived did.
type DeriveResult struct {
	Added    int64 // conversations stored
	Existing int64 // already stored with the same id and content: skipped
}

// ErrDerivedConflict is matched by the error AddDerived returns when a
// conversation's id is already in the run with other content, another
// origin or another parent.
var ErrDerivedConflict = errors.New("conversation id already stored with other content")

// AddDerived stores conversations the run made itself (a simulated
// trajectory, a stitched instance) under origin, each with the seq of the
// conversation it was made from (0 for none; a seq the run does not have is
// an error). They get seqs after every conversation already stored, in the
// order items yields them, and are read, planned, curated and exported like
// ingested ones.
//
// It is idempotent by conversation id: an id already stored under the same
// origin and parent with the same content (system, messages, metadata,
// every field) is skipped; the same id with anything different is an
// ErrDerivedConflict, and nothing of that transaction is stored. So a
// deriving step that was cut short resumes by yielding everything again.
// The order of seqs is deterministic only if the caller's order is: see
// pipeline.Derive for the rule.
//
// Items are stored in transactions of at most 256 conversations or 16 MiB
// of text, so memory holds one batch. A batch is committed whole or not at all; when ctx is cancelled
// the batches committed before stay. The origin's input row (DerivedInput)
// is created with the first batch; its records count what is stored and
// its finished flag is cleared whenever something is added (FinishDerived
// sets it).
func (l *Ledger) AddDerived(ctx context.Context, origin string, items iter.Seq2[int64, *conv.Conversation]) (res DeriveResult, err error) {
	defer l.classify(&err)
	if err := ValidOrigin(origin); err != nil {
		return res, fmt.Errorf("storing derived conversations: %w", err)
	}
	if origin == OriginSource {
		return res, fmt.Errorf("storing derived conversations: origin %q is for ingested conversations", OriginSource)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return res, err
	}
	defer enc.Close()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return res, err
	}
	defer dec.Close()
	type item struct {
		parent int64
		c      *conv.Conversation
	}
	batch := make([]item, 0, derivedBatch)
	size := 0
	commit := func() error {
		if len(batch) == 0 {
			return nil
		}
		added, existing, err := l.commitDerived(ctx, enc, dec, origin, func(yield func(int64, *conv.Conversation) bool) {
			for _, it := range batch {
				if !yield(it.parent, it.c) {
					return
				}
			}
		})
		if err != nil {
			return err
		}
		res.Added += added
		res.Existing += existing
		clear(batch)
		batch, size = batch[:0], 0
		return nil
	}
	for parent, c := range items {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if c == nil || c.ID == "" {
			return res, fmt.Errorf("storing derived %s conversation (parent seq %d): no id", origin, parent)
		}
		if parent < 0 {
			return res, fmt.Errorf("storing derived conversation %s: parent seq %d", c.ID, parent)
		}
		batch = append(batch, item{parent, c})
		size += len(c.System)
		for _, m := range c.Messages {
			size += len(m.Content)
		}
		if len(batch) == derivedBatch || size >= derivedBytes {
			if err := commit(); err != nil {
				return res, err
			}
		}
	}
	return res, commit()
}

// commitDerived stores one batch in one transaction.
func (l *Ledger) commitDerived(ctx context.Context, enc *zstd.Encoder, dec *zstd.Decoder, origin string, items iter.Seq2[int64, *conv.Conversation]) (added, existing int64, err error) {
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("storing derived %s conversations: %w", origin, err)
	}
	defer tx.Rollback()
	path := DerivedInput(origin)
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO inputs (path, format, size, mtime_ns) VALUES (?, ?, 0, 0)`, path, DerivedFormat); err != nil {
		return 0, 0, fmt.Errorf("recording input %s: %w", path, err)
	}
	var inputID int64
	if err := tx.QueryRowContext(ctx, `SELECT id FROM inputs WHERE path = ?`, path).Scan(&inputID); err != nil {
		return 0, 0, fmt.Errorf("recording input %s: %w", path, err)
	}
	find, err := tx.PrepareContext(ctx, `SELECT seq, origin, parent_seq, data FROM conversations WHERE id = ?`)
	if err != nil {
		return 0, 0, err
	}
	defer find.Close()
	insert, err := tx.PrepareContext(ctx, `INSERT INTO conversations (id, content_hash, input_id, source_line, source_row, format, user_turns, language, data, origin, parent_seq, language_source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, 0, err
	}
	defer insert.Close()
	for parent, c := range items {
		js, err := json.Marshal(c)
		if err != nil {
			return 0, 0, fmt.Errorf("encoding derived conversation %s: %w", c.ID, err)
		}
		var seq int64
		var had string
		var hadParent sql.NullInt64
		var data []byte
		err = find.QueryRowContext(ctx, c.ID).Scan(&seq, &had, &hadParent, &data)
		switch {
		case err == nil:
			if err := l.sameDerived(dec, c.ID, origin, parent, had, hadParent.Int64, js, data); err != nil {
				return 0, 0, err
			}
			existing++
			continue
		case !errors.Is(err, sql.ErrNoRows):
			return 0, 0, fmt.Errorf("looking up conversation %s: %w", c.ID, err)
		}
		var parentArg any
		if parent > 0 {
			var one int
			if err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE seq = ?`, parent).Scan(&one); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return 0, 0, fmt.Errorf("storing derived conversation %s: its parent seq %d is not in the run", c.ID, parent)
				}
				return 0, 0, fmt.Errorf("looking up parent seq %d of %s: %w", parent, c.ID, err)
			}
			parentArg = parent
		}
		if _, err := insert.ExecContext(ctx, c.ID, c.ContentHash(), inputID, c.Source.Line, c.Source.Row, c.Format, c.UserTurns(), c.Language, enc.EncodeAll(js, nil), origin, parentArg, c.LanguageSource); err != nil {
			return 0, 0, fmt.Errorf("storing derived conversation %s: %w", c.ID, err)
		}
		added++
	}
	if added > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE inputs SET records_done = records_done + ?, finished = 0 WHERE id = ?`, added, inputID); err != nil {
			return 0, 0, fmt.Errorf("counting derived %s conversations: %w", origin, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("storing derived %s conversations: %w", origin, err)
	}
	return added, existing, nil
}

// sameDerived checks that a stored conversation is the one being derived
// again: same origin, parent and canonical JSON.
func (l *Ledger) sameDerived(dec *zstd.Decoder, id, origin string, parent int64, had string, hadParent int64, js, data []byte) error {
	if had != origin {
		return fmt.Errorf("storing derived %s conversation %s: %w (it is a %s conversation)", origin, id, ErrDerivedConflict, had)
	}
	if hadParent != parent {
		return fmt.Errorf("storing derived %s conversation %s: %w (stored with parent seq %d, now %d)", origin, id, ErrDerivedConflict, hadParent, parent)
	}
	old, err := dec.DecodeAll(data, nil)
	if err != nil {
		return l.damaged("decoding conversation %s: %w", id, err)
	}
	if !bytes.Equal(old, js) {
		return fmt.Errorf("storing derived %s conversation %s: %w (was the deriving step changed? derive into a new run, or under a new origin)", origin, id, ErrDerivedConflict)
	}
	return nil
}

// FinishDerived records that the step deriving origin's conversations ran
// to the end (the finished flag of its input row). It is an error when
// nothing was ever derived under origin.
func (l *Ledger) FinishDerived(ctx context.Context, origin string) (err error) {
	defer l.classify(&err)
	res, err := l.w.ExecContext(ctx, `UPDATE inputs SET finished = 1 WHERE path = ?`, DerivedInput(origin))
	if err != nil {
		return fmt.Errorf("finishing derived %s conversations: %w", origin, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		// Nothing derived: record the origin anyway, so status says the
		// step ran and made nothing.
		if _, err := l.w.ExecContext(ctx, `INSERT INTO inputs (path, format, size, mtime_ns, finished) VALUES (?, ?, 0, 0, 1)`, DerivedInput(origin), DerivedFormat); err != nil {
			return fmt.Errorf("finishing derived %s conversations: %w", origin, err)
		}
	}
	return nil
}

// DerivedOrigin is one origin of derived conversations, as its input row
// records it.
type DerivedOrigin struct {
	Origin   string
	Stored   int64 // conversations stored under it
	Finished bool  // the deriving step last ran to the end
}

// DerivedOrigins lists the origins of derived conversations the run has,
// by name. It reads the input rows only.
func (l *Ledger) DerivedOrigins(ctx context.Context) (_ []DerivedOrigin, err error) {
	defer l.classify(&err)
	var out []DerivedOrigin
	err = l.query(ctx, func(rows rowScanner) error {
		var d DerivedOrigin
		var path string
		if err := rows.Scan(&path, &d.Stored, &d.Finished); err != nil {
			return err
		}
		d.Origin = strings.TrimPrefix(path, derivedPrefix)
		out = append(out, d)
		return nil
	}, `SELECT path, records_done, finished FROM inputs WHERE substr(path, 1, ?) = ? ORDER BY path`, len(derivedPrefix), derivedPrefix)
	if err != nil {
		return nil, fmt.Errorf("listing derived origins: %w", err)
	}
	return out, nil
}

// OriginCounts counts the run's conversations per origin, from the origin
// index: OriginSource for the ingested ones and one entry per derived
// origin.
func (l *Ledger) OriginCounts(ctx context.Context) (_ map[string]int64, err error) {
	defer l.classify(&err)
	total, err := l.countAll(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{OriginSource: total}
	if !l.hasOrigins {
		return out, nil
	}
	ds, err := l.DerivedOrigins(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		n, err := l.countOrigin(ctx, d.Origin)
		if err != nil {
			return nil, err
		}
		out[d.Origin] = n
		out[OriginSource] -= n
	}
	return out, nil
}

const scopeKey = "scope."

// SetScope records the origins a stage runs over, so status and Progress
// count its never-attempted conversations within them. AllOrigins, the
// default, removes the record. pipeline.Run records it for every stage it
// runs; callers that only plan (SetPlan) record it beside the plan.
func (l *Ledger) SetScope(ctx context.Context, stage string, s Scope) (err error) {
	defer l.classify(&err)
	if s.All() {
		if _, err := l.w.ExecContext(ctx, `DELETE FROM run_meta WHERE key = ?`, scopeKey+stage); err != nil {
			return fmt.Errorf("recording the scope of %s: %w", stage, err)
		}
		return nil
	}
	b, err := json.Marshal(s.origins)
	if err != nil {
		return err
	}
	return l.SetMeta(ctx, scopeKey+stage, string(b))
}

// Scopes returns the recorded scope of every stage that has one; a stage
// not in the map runs over every origin.
func (l *Ledger) Scopes(ctx context.Context) (_ map[string]Scope, err error) {
	defer l.classify(&err)
	out := map[string]Scope{}
	err = l.query(ctx, func(rows rowScanner) error {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		var names []string
		if err := json.Unmarshal([]byte(v), &names); err != nil {
			return l.damaged("reading run setting %s: %w", k, err)
		}
		s, err := Origins(names...)
		if err != nil {
			return l.damaged("reading run setting %s: %w", k, err)
		}
		out[k[len(scopeKey):]] = s
		return nil
	}, `SELECT key, value FROM run_meta WHERE substr(key, 1, ?) = ? ORDER BY key`, len(scopeKey), scopeKey)
	if err != nil {
		var de *DamagedError
		if errors.As(err, &de) {
			return nil, err
		}
		return nil, fmt.Errorf("reading stage scopes: %w", err)
	}
	return out, nil
}

// StageScope returns the recorded scope of stage, AllOrigins when none.
func (l *Ledger) StageScope(ctx context.Context, stage string) (Scope, error) {
	all, err := l.Scopes(ctx)
	if err != nil {
		return Scope{}, err
	}
	return all[stage], nil
}
