package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// View is the run seen through a Scope: its counts, pages, plans and units
// cover only the conversations of the scope's origins. The report and the
// exports read a View the way they read the whole Ledger (View has the same
// read methods), so a report of the ingested conversations alone is
// report.Build(ctx, l.In(ledger.MustOrigins(ledger.OriginSource)), …).
//
// A View over AllOrigins, or over a scope that covers every origin the run
// has, runs exactly the queries the Ledger always ran. A narrower one
// selects conversations through the origin index and never reads a
// conversation row to learn its origin.
type View struct {
	l     *Ledger
	scope Scope
}

// In returns the view of the run's conversations in scope s.
func (l *Ledger) In(s Scope) View { return View{l: l, scope: s} }

// Scope is the view's scope.
func (v View) Scope() Scope { return v.scope }

// Path is the run file's path.
func (v View) Path() string { return v.l.path }

// Plans returns every stage's last recorded plan (as Ledger.Plans).
func (v View) Plans(ctx context.Context) (map[string][]Variant, error) { return v.l.Plans(ctx) }

// Status reads where the run stands (as Ledger.Status), with Conversations
// counting the view's conversations only.
func (v View) Status(ctx context.Context) (st Status, err error) {
	if st, err = v.l.Status(ctx); err != nil || v.scope.All() {
		return st, err
	}
	st.Conversations, err = v.CountConversations(ctx)
	return st, err
}

// split is how a scope meets the origins a run has.
type split struct {
	all bool     // the scope covers every origin the run has
	in  []string // the run's origins in the scope
	out []string // the run's origins out of it
	// byOut: the origins out of the scope hold fewer conversations, so a
	// count in the scope is the run's count minus theirs.
	byOut bool
}

// split reads which of the run's origins s covers, from the input rows
// (each derived origin has one; see DerivedInput) and without counting
// conversations. The sizes that choose byOut are the input rows' counts.
func (l *Ledger) split(ctx context.Context, s Scope) (split, error) {
	if s.All() {
		return split{all: true}, nil
	}
	if !l.hasOrigins {
		// An older run: every conversation is an ingested one.
		if s.Has(OriginSource) {
			return split{all: true}, nil
		}
		return split{out: []string{OriginSource}}, nil
	}
	var sp split
	var inSize, outSize int64
	err := l.query(ctx, func(rows rowScanner) error {
		var path string
		var n int64
		if err := rows.Scan(&path, &n); err != nil {
			return err
		}
		origin, derived := strings.CutPrefix(path, derivedPrefix)
		if derived && n == 0 {
			// A derived origin with nothing stored (AddDerived counts what
			// it commits, in the same transaction) narrows nothing.
			return nil
		}
		if !derived {
			origin = OriginSource
		}
		if s.Has(origin) {
			inSize += n
			if !slices.Contains(sp.in, origin) {
				sp.in = append(sp.in, origin)
			}
		} else {
			outSize += n
			if !slices.Contains(sp.out, origin) {
				sp.out = append(sp.out, origin)
			}
		}
		return nil
	}, `SELECT path, records_done FROM inputs ORDER BY path`)
	if err != nil {
		return sp, fmt.Errorf("reading the run's origins: %w", err)
	}
	sp.all = len(sp.out) == 0
	sp.byOut = outSize < inSize
	return sp, nil
}

// side is the origins a count in the split reads: the smaller side.
func (sp split) side() []string {
	if sp.byOut {
		return sp.out
	}
	return sp.in
}

func (l *Ledger) countAll(ctx context.Context) (n int64, err error) {
	if err := l.r.QueryRowContext(ctx, `SELECT count(*) FROM conversations`).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting conversations: %w", err)
	}
	return n, nil
}

func (l *Ledger) countOrigin(ctx context.Context, origin string) (n int64, err error) {
	if err := l.r.QueryRowContext(ctx, `SELECT count(*) FROM conversations INDEXED BY conversations_by_origin WHERE origin = ?`, origin).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting %s conversations: %w", origin, err)
	}
	return n, nil
}

// countIn counts the conversations in sp, reading the smaller side.
func (l *Ledger) countIn(ctx context.Context, sp split) (int64, error) {
	if sp.all {
		return l.countAll(ctx)
	}
	var n int64
	for _, o := range sp.side() {
		c, err := l.countOrigin(ctx, o)
		if err != nil {
			return 0, err
		}
		n += c
	}
	if !sp.byOut {
		return n, nil
	}
	total, err := l.countAll(ctx)
	return total - n, err
}

// CountConversations reports how many conversations the view covers.
func (v View) CountConversations(ctx context.Context) (n int64, err error) {
	defer v.l.classify(&err)
	sp, err := v.l.split(ctx, v.scope)
	if err != nil {
		return 0, err
	}
	return v.l.countIn(ctx, sp)
}

// seqsAfter appends to buf[:0] the first n seqs after `after` of the
// conversations in sp, in order. Over several origins it reads each one's
// next n from the origin index and merges them.
func (l *Ledger) seqsAfter(ctx context.Context, sp split, after int64, n int, buf []int64) ([]int64, error) {
	buf = buf[:0]
	scan := func(rows rowScanner) error {
		var s int64
		if err := rows.Scan(&s); err != nil {
			return err
		}
		buf = append(buf, s)
		return nil
	}
	if sp.all {
		if err := l.query(ctx, scan, `SELECT seq FROM conversations WHERE seq > ? ORDER BY seq LIMIT ?`, after, n); err != nil {
			return nil, fmt.Errorf("reading conversations after %d: %w", after, err)
		}
		return buf, nil
	}
	for _, o := range sp.in {
		if err := l.query(ctx, scan, `SELECT seq FROM conversations INDEXED BY conversations_by_origin WHERE origin = ? AND seq > ? ORDER BY seq LIMIT ?`, o, after, n); err != nil {
			return nil, fmt.Errorf("reading %s conversations after %d: %w", o, after, err)
		}
	}
	if len(sp.in) > 1 {
		slices.Sort(buf)
		if len(buf) > n {
			buf = buf[:n]
		}
	}
	return buf, nil
}

// readConvs reads and decodes the conversations with the given seqs
// (sorted, all in (after, upto]) and hands each to set with its index in
// seqs. With most of the range wanted it reads the range in one query,
// skipping the rows it does not want without decoding them; with few, one
// row each, so the rows in between are not read.
func (l *Ledger) readConvs(ctx context.Context, dec *zstd.Decoder, seqs []int64, after, upto int64, set func(i int, s Stored)) error {
	cols := `seq, data, ` + l.originCols()
	if int64(len(seqs))*4 >= upto-after {
		i := 0
		return l.query(ctx, func(rows rowScanner) error {
			var s Stored
			var data []byte
			var parent sql.NullInt64
			if err := rows.Scan(&s.Seq, &data, &s.Origin, &parent); err != nil {
				return err
			}
			for i < len(seqs) && seqs[i] < s.Seq {
				i++
			}
			if i == len(seqs) || seqs[i] != s.Seq {
				return nil // not wanted: not decoded
			}
			c, err := decodeConv(dec, data)
			if err != nil {
				return l.damaged("decoding conversation seq %d: %w", s.Seq, err)
			}
			s.Conv, s.Parent = c, parent.Int64
			set(i, s)
			return nil
		}, `SELECT `+cols+` FROM conversations WHERE seq > ? AND seq <= ? ORDER BY seq`, after, upto)
	}
	for i, seq := range seqs {
		var s Stored
		var data []byte
		var parent sql.NullInt64
		if err := l.r.QueryRowContext(ctx, `SELECT `+cols+` FROM conversations WHERE seq = ?`, seq).Scan(&s.Seq, &data, &s.Origin, &parent); err != nil {
			return fmt.Errorf("reading conversation seq %d: %w", seq, err)
		}
		c, err := decodeConv(dec, data)
		if err != nil {
			return l.damaged("decoding conversation seq %d: %w", seq, err)
		}
		s.Conv, s.Parent = c, parent.Int64
		set(i, s)
	}
	return nil
}

// ConversationPage returns up to limit of the view's conversations with
// seq > after, in seq order. Callers page through a run with the last seq
// they saw, so no read transaction stays open while they work.
func (v View) ConversationPage(ctx context.Context, after int64, limit int) (_ []Stored, err error) {
	defer v.l.classify(&err)
	l := v.l
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	sp, err := l.split(ctx, v.scope)
	if err != nil {
		return nil, err
	}
	if sp.all {
		var out []Stored
		err := l.query(ctx, func(rows rowScanner) error {
			var s Stored
			var data []byte
			var parent sql.NullInt64
			if err := rows.Scan(&s.Seq, &data, &s.Origin, &parent); err != nil {
				return err
			}
			if s.Conv, err = decodeConv(dec, data); err != nil {
				return l.damaged("decoding conversation seq %d: %w", s.Seq, err)
			}
			s.Parent = parent.Int64
			out = append(out, s)
			return nil
		}, `SELECT seq, data, `+l.originCols()+` FROM conversations WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
		if err != nil {
			return nil, fmt.Errorf("reading conversations after %d: %w", after, err)
		}
		return out, nil
	}
	seqs, err := l.seqsAfter(ctx, sp, after, limit, nil)
	if err != nil || len(seqs) == 0 {
		return nil, err
	}
	out := make([]Stored, len(seqs))
	if err := l.readConvs(ctx, dec, seqs, seqs[0]-1, seqs[len(seqs)-1], func(i int, s Stored) { out[i] = s }); err != nil {
		return nil, err
	}
	return out, nil
}

// EachPage calls fn for each page of up to size of the view's
// conversations, in seq order, with the seq range (after, upto] the page
// covers. Over every origin the ranges follow one another; in a scoped
// view a range starts at the page's first conversation, and conversations
// of other origins may still lie inside it: read other stages' units for
// it through the view's Units, which leaves theirs out. It stops at the
// first error fn returns.
func (v View) EachPage(ctx context.Context, size int, fn func(page []Stored, after, upto int64) error) (err error) {
	defer v.l.classify(&err)
	var after int64
	for {
		page, err := v.ConversationPage(ctx, after, size)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		lo, upto := after, page[len(page)-1].Seq
		if !v.scope.All() {
			lo = page[0].Seq - 1
		}
		if err := fn(page, lo, upto); err != nil {
			return callerError{err}
		}
		after = upto
	}
}

// TaskCounts reports done and failed tasks of one stage variant version
// over the view's conversations.
func (v View) TaskCounts(ctx context.Context, stage string, vr Variant) (done, failed int64, err error) {
	defer v.l.classify(&err)
	sp, err := v.l.split(ctx, v.scope)
	if err != nil {
		return 0, 0, err
	}
	return v.l.taskCountsIn(ctx, sp, stage, vr)
}

// taskCountsIn counts a variant's tasks in sp: all of them when sp covers
// every origin; else those of the smaller side's conversations, walked on
// the origin index with one task lookup each, subtracted from the whole
// when that side is out of the scope.
func (l *Ledger) taskCountsIn(ctx context.Context, sp split, stage string, v Variant) (done, failed int64, err error) {
	return l.statusCountsIn(ctx, sp, "tasks", "t", stage, v)
}

// unitCountsIn counts a variant's done and failed units in sp the way
// taskCountsIn counts tasks. The whole-table count is answered from the
// units_by_status index alone (migration 0003).
func (l *Ledger) unitCountsIn(ctx context.Context, sp split, stage string, v Variant) (done, failed int64, err error) {
	return l.statusCountsIn(ctx, sp, "units", "u", stage, v)
}

// statusCountsIn is taskCountsIn and unitCountsIn: the two tables carry the
// same stage, variant, version, status and conv_seq columns, so one walk
// serves both; table names the rows in queries and errors, alias is its
// short name in the join.
func (l *Ledger) statusCountsIn(ctx context.Context, sp split, table, alias, stage string, v Variant) (done, failed int64, err error) {
	if sp.all || sp.byOut {
		if err := l.r.QueryRowContext(ctx, `SELECT coalesce(sum(status = 'done'), 0), coalesce(sum(status = 'failed'), 0) FROM `+table+` WHERE stage = ? AND variant = ? AND version = ?`,
			stage, v.Name, v.Version).Scan(&done, &failed); err != nil {
			return 0, 0, fmt.Errorf("counting %s/%s %s: %w", stage, v.Name, table, err)
		}
		if sp.all {
			return done, failed, nil
		}
	}
	a := alias
	q := `SELECT coalesce(sum(` + a + `.status = 'done'), 0), coalesce(sum(` + a + `.status = 'failed'), 0)
			FROM conversations AS c INDEXED BY conversations_by_origin CROSS JOIN ` + table + ` AS ` + a + `
			WHERE c.origin = ? AND ` + a + `.stage = ? AND ` + a + `.variant = ? AND ` + a + `.version = ? AND ` + a + `.conv_seq = c.seq`
	var d, f int64
	for _, o := range sp.side() {
		var od, of int64
		if err := l.r.QueryRowContext(ctx, q, o, stage, v.Name, v.Version).Scan(&od, &of); err != nil {
			return 0, 0, fmt.Errorf("counting %s/%s %s of %s conversations: %w", stage, v.Name, table, o, err)
		}
		d, f = d+od, f+of
	}
	if sp.byOut {
		return done - d, failed - f, nil
	}
	return d, f, nil
}

// inFilter is the SQL condition, on a column holding a conversation seq,
// that keeps the conversations of sp within (after, upto], with its
// arguments; "" when sp covers every origin.
func inFilter(col string, sp split, after, upto int64) (string, []any) {
	if sp.all {
		return "", nil
	}
	if len(sp.in) == 0 {
		return " AND 0", nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(sp.in)), ", ")
	args := make([]any, 0, len(sp.in)+2)
	for _, o := range sp.in {
		args = append(args, o)
	}
	args = append(args, after, upto)
	return ` AND ` + col + ` IN (SELECT seq FROM conversations INDEXED BY conversations_by_origin WHERE origin IN (` + marks + `) AND seq > ? AND seq <= ?)`, args
}

// unitsQuery is View.Units' query. The variants are a table of constants
// joined to units through units_by_stage, so that each page reads only its
// own range of each variant. Written as a disjunction, the planner was free
// to read the stage whole through units_by_conversation instead, which it
// did once versions were long strings: every page then cost the whole
// stage, and an export of a million conversations would never end
// (TestScopedQueriesUseIndexes holds it to the index).
func unitsQuery(stage string, variants []Variant, after, upto int64, sp split) (string, []any) {
	var vals strings.Builder
	args := make([]any, 0, 2*len(variants)+3)
	seen := map[Variant]bool{}
	for _, v := range variants {
		if seen[v] {
			continue
		}
		seen[v] = true
		if len(args) > 0 {
			vals.WriteString(", ")
		}
		vals.WriteString("(?, ?)")
		args = append(args, v.Name, v.Version)
	}
	args = append(args, stage, after, upto)
	scope, sargs := inFilter("u.conv_seq", sp, after, upto)
	args = append(args, sargs...)
	return `WITH wanted(variant, version) AS (VALUES ` + vals.String() + `)
		SELECT u.key, u.conversation_id, u.conv_seq, u.turn, u.variant, u.version, u.status, u.error, u.raw, u.output, u.tokens
		FROM wanted AS w CROSS JOIN units AS u INDEXED BY units_by_stage
		WHERE u.stage = ? AND u.variant = w.variant AND u.version = w.version AND u.conv_seq > ? AND u.conv_seq <= ?` + scope + `
		ORDER BY u.conv_seq, u.turn, u.variant`, args
}

// Units calls fn for every unit of stage among variants whose conversation
// is in the view and has after < seq <= upto, ordered by conversation, turn
// and variant name (as Ledger.Units).
func (v View) Units(ctx context.Context, stage string, variants []Variant, after, upto int64, fn func(Unit) error) (err error) {
	defer v.l.classify(&err)
	if len(variants) == 0 {
		return nil
	}
	sp, err := v.l.split(ctx, v.scope)
	if err != nil {
		return err
	}
	q, args := unitsQuery(stage, variants, after, upto, sp)
	rows, err := v.l.r.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("reading %s units: %w", stage, err)
	}
	defer rows.Close()
	for rows.Next() {
		var u Unit
		if err := rows.Scan(&u.Key, &u.ConvID, &u.ConvSeq, &u.Turn, &u.Variant, &u.Version, &u.Status, &u.Error, &u.Raw, &u.Output, &u.Tokens); err != nil {
			return fmt.Errorf("reading %s units: %w", stage, err)
		}
		if err := fn(u); err != nil {
			return callerError{err}
		}
	}
	return rows.Err()
}
