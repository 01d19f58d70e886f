package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/ac3/ac3/pipeline/record"
)

// Browse selects conversations for a person paging through a run ('ac3
// view'). Every field set narrows the selection; the zero Browse selects
// every conversation. Conditions on units are answered through the units'
// by-conversation index, one probe per candidate conversation, so a page
// costs about as many probes as conversations it passes over, never a scan
// of the units.
type Browse struct {
	InputID  int64  // 0: any input
	Language string // "": any
	MinTurns int    // 0: no minimum
	MaxTurns int    // 0: no maximum
	Origin   string // "": any
	// Units are conditions on the conversation's units; all must hold.
	Units []UnitMatch
	// Decode also reads and decodes each conversation (Listed.Stored.Conv),
	// for callers that show or search its text.
	Decode bool
}

// UnitMatch holds when the conversation has a unit (Absent: has none) of
// Stage, among Variants (any variant when empty; a variant with an empty
// Version matches every version), with Status ("" any), whose output meets
// every JSON condition. With Each set, the conditions apply to one element
// of the array at that JSON path instead (some element must meet them
// all).
type UnitMatch struct {
	Stage string
	// Stages, when Stage is empty, are the stages any of which may hold
	// the unit.
	Stages   []string
	Variants []Variant
	Status   string
	Turn     int // > 0: the unit of that user turn only
	Each     string
	JSON     []JSONCond
	Absent   bool
}

// JSONCond compares the value at a JSON path of a unit's output (e.g.
// "$.type", "$.retention.retained") with Value. Op is one of =, !=, <, <=,
// >, >=, and "is not" (which holds where the path is absent); "len>"
// compares the length of the array at Path.
type JSONCond struct {
	Path  string
	Op    string
	Value any
}

// Listed is one conversation of a Browse page: the columns a list shows,
// read without decoding the conversation unless Browse.Decode is set.
type Listed struct {
	Stored
	ID        string
	Input     string
	Language  string
	UserTurns int
}

func jsonOp(op string) bool {
	switch op {
	case "=", "!=", "<", "<=", ">", ">=", "is not", "len>":
		return true
	}
	return false
}

// sql is m as an EXISTS condition on conversation c. byConv names the
// by-conversation index to use: left to itself, SQLite may pick the status
// index instead and read every unit of the stage for each conversation.
func (m UnitMatch) sql(alias string, byConv bool) (string, []any, error) {
	var b strings.Builder
	var args []any
	u := alias
	b.WriteString("EXISTS (SELECT 1 FROM units " + u)
	if byConv {
		b.WriteString(" INDEXED BY units_by_conversation")
	}
	target := "CAST(" + u + ".output AS TEXT)"
	if m.Each != "" {
		b.WriteString(", json_each(CAST(" + u + ".output AS TEXT), ?) " + u + "e")
		args = append(args, m.Each)
		target = u + "e.value"
	}
	stages := m.Stages
	if m.Stage != "" {
		stages = []string{m.Stage}
	}
	if len(stages) == 0 {
		return "", nil, fmt.Errorf("a unit condition names no stage")
	}
	b.WriteString(" WHERE " + u + ".stage IN (?" + strings.Repeat(", ?", len(stages)-1) + ") AND " + u + ".conversation_id = c.id")
	for _, s := range stages {
		args = append(args, s)
	}
	if m.Status != "" {
		b.WriteString(" AND " + u + ".status = ?")
		args = append(args, m.Status)
	}
	if m.Turn > 0 {
		b.WriteString(" AND " + u + ".turn = ?")
		args = append(args, m.Turn)
	}
	if len(m.Variants) > 0 {
		var or []string
		for _, v := range m.Variants {
			if v.Version == "" {
				or = append(or, u+".variant = ?")
				args = append(args, v.Name)
			} else {
				or = append(or, "("+u+".variant = ? AND "+u+".version = ?)")
				args = append(args, v.Name, v.Version)
			}
		}
		b.WriteString(" AND (" + strings.Join(or, " OR ") + ")")
	}
	for _, j := range m.JSON {
		if !jsonOp(j.Op) {
			return "", nil, fmt.Errorf("unknown comparison %q", j.Op)
		}
		if j.Op == "len>" {
			b.WriteString(" AND json_array_length(" + target + ", ?) > ?")
		} else {
			b.WriteString(" AND json_extract(" + target + ", ?) " + j.Op + " ?")
		}
		args = append(args, j.Path, j.Value)
	}
	b.WriteString(")")
	if m.Absent {
		return "NOT " + b.String(), args, nil
	}
	return b.String(), args, nil
}

// BrowsePage returns up to limit conversations with after < seq <= upto
// that f selects, in seq order. Paging is by keyset: the next page starts
// after the last seq returned, or, when fewer than limit came back, after
// upto. A caller bounds the work of one call by the width of (after,
// upto]: with a rare condition a page may come back short rather than
// read the whole run. The conversations are always read by seq range
// (NOT INDEXED keeps SQLite from walking the language index over the
// whole run instead), and each condition on units is one probe of the
// by-conversation index per conversation in the range.
func (l *Ledger) BrowsePage(ctx context.Context, f Browse, after, upto int64, limit int) (_ []Listed, err error) {
	defer l.classify(&err)
	cols := `c.seq, c.id, i.path, c.language, c.user_turns`
	if f.Decode {
		cols += `, c.data`
	}
	if l.hasOrigins {
		cols += `, c.origin, c.parent_seq`
	}
	where := []string{"c.seq > ?", "c.seq <= ?"}
	args := []any{after, upto}
	if f.InputID != 0 {
		where = append(where, "c.input_id = ?")
		args = append(args, f.InputID)
	}
	if f.Language != "" {
		where = append(where, "c.language = ?")
		args = append(args, f.Language)
	}
	if f.MinTurns > 0 {
		where = append(where, "c.user_turns >= ?")
		args = append(args, f.MinTurns)
	}
	if f.MaxTurns > 0 {
		where = append(where, "c.user_turns <= ?")
		args = append(args, f.MaxTurns)
	}
	if f.Origin != "" {
		if !l.hasOrigins {
			if f.Origin != OriginSource {
				return nil, nil
			}
		} else {
			// Through the origin index: origin sits after the data in a
			// row, so reading it from the table walks overflow pages.
			where = append(where, "c.seq IN (SELECT seq FROM conversations INDEXED BY conversations_by_origin WHERE origin = ? AND seq > ? AND seq <= ?)")
			args = append(args, f.Origin, after, upto)
		}
	}
	for k, m := range f.Units {
		q, a, err := m.sql(fmt.Sprintf("u%d", k), l.hasUnitsByConv)
		if err != nil {
			return nil, fmt.Errorf("browsing conversations: %w", err)
		}
		where = append(where, q)
		args = append(args, a...)
	}
	args = append(args, limit)
	var dec *zstd.Decoder
	if f.Decode {
		if dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1)); err != nil {
			return nil, err
		}
		defer dec.Close()
	}
	var out []Listed
	err = l.query(ctx, func(rows rowScanner) error {
		var s Listed
		var data []byte
		var parent sql.NullInt64
		dest := []any{&s.Seq, &s.ID, &s.Input, &s.Language, &s.UserTurns}
		if f.Decode {
			dest = append(dest, &data)
		}
		if l.hasOrigins {
			dest = append(dest, &s.Origin, &parent)
		} else {
			s.Origin = OriginSource
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		s.Parent = parent.Int64
		if f.Decode {
			c, err := decodeConv(dec, data)
			if err != nil {
				return l.damaged("decoding conversation seq %d: %w", s.Seq, err)
			}
			s.Conv = c
		}
		out = append(out, s)
		return nil
	}, `SELECT `+cols+` FROM conversations c NOT INDEXED JOIN inputs i ON i.id = c.input_id WHERE `+strings.Join(where, " AND ")+` ORDER BY c.seq LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("browsing conversations after %d: %w", after, err)
	}
	return out, nil
}

// LastSeq is the highest seq of a stored conversation, 0 in an empty run.
func (l *Ledger) LastSeq(ctx context.Context) (_ int64, err error) {
	defer l.classify(&err)
	var n sql.NullInt64
	if err := l.r.QueryRowContext(ctx, `SELECT max(seq) FROM conversations`).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the last conversation: %w", err)
	}
	return n.Int64, nil
}

// QuarantinePage returns up to limit quarantined records with id > after,
// in the order they were found, only those of reason when it is set.
func (l *Ledger) QuarantinePage(ctx context.Context, reason string, after int64, limit int) (_ []Quarantined, err error) {
	defer l.classify(&err)
	q := `SELECT q.id, i.path, q.file, q.line, q.row, q.reason, q.detail, q.excerpt FROM quarantine q JOIN inputs i ON i.id = q.input_id WHERE q.id > ?`
	args := []any{after}
	if reason != "" {
		q += ` AND q.reason = ?`
		args = append(args, reason)
	}
	args = append(args, limit)
	var out []Quarantined
	err = l.query(ctx, func(rows rowScanner) error {
		var r Quarantined
		var why string
		if err := rows.Scan(&r.ID, &r.Input, &r.Source.File, &r.Source.Line, &r.Source.Row, &why, &r.Detail, &r.Excerpt); err != nil {
			return err
		}
		r.Reason = record.Reason(why)
		out = append(out, r)
		return nil
	}, q+` ORDER BY q.id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading quarantine: %w", err)
	}
	return out, nil
}

// LanguageNames lists the languages the run's conversations have, in
// order, "" (none recorded) included when some have none. It seeks from
// one language to the next in the language index, so it costs one seek
// per language, not a read of every conversation as counting them does.
func (l *Ledger) LanguageNames(ctx context.Context) (_ []string, err error) {
	defer l.classify(&err)
	var out []string
	err = l.query(ctx, func(rows rowScanner) error {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	}, `WITH RECURSIVE l(x) AS (
		SELECT min(language) FROM conversations
		UNION ALL
		SELECT (SELECT min(language) FROM conversations WHERE language > l.x) FROM l WHERE x IS NOT NULL
	) SELECT x FROM l WHERE x IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("listing languages: %w", err)
	}
	return out, nil
}
